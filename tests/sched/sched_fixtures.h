#pragma once
// Small fleets and tasks for the pipeline scheduler's tests.
#include <string>

#include "sched/scheduler.h"

namespace idlegrid::sched::testing {

inline constexpr uint64_t kGiB = uint64_t{1} << 30;

inline v1::GpuDevice Gpu(const std::string& uuid, const std::string& model = "NVIDIA A100", uint64_t vram = 40 * kGiB) {
  v1::GpuDevice d;
  d.set_uuid(uuid);
  d.set_name(model);
  d.set_memory_total_bytes(vram);
  d.set_allocatable_memory_bytes(vram);
  d.set_compute_capability("8.0");
  d.set_cuda_driver_version("12.4");
  d.set_measured(true);
  return d;
}

// An online node that can run anything ordinary: 16 cores, 64 GiB, `gpus` A100s.
inline NodeView PNode(const std::string& id, uint32_t gpus = 1, const std::string& model = "NVIDIA A100",
                      uint64_t vram = 40 * kGiB) {
  NodeView n;
  n.id = id;
  n.online = true;
  n.cpu_free = n.cpu_total = 16;
  n.memory_free = 64 * kGiB;
  n.runtimes = {"runc", "runsc"};
  n.enforcement.set_memory("cgroup");
  n.enforcement.set_cpu("cgroup");
  n.region = "eu-west";
  n.trust_tier = 1;
  n.allows_sharing = true;
  for (uint32_t i = 0; i < gpus; ++i) {
    auto g = Gpu(id + "-gpu" + std::to_string(i), model, vram);
    g.set_index(i);
    n.gpus.push_back(g);
  }
  return n;
}

// One whole GPU, 2 cores, 4 GiB.
inline TaskView PTask(const std::string& job = "j", uint32_t index = 0, uint32_t gpus = 1) {
  TaskView t;
  t.job_id = job;
  t.index = index;
  t.runtime = "runc";
  t.resources.set_gpus(gpus);
  t.resources.set_cpu(2);
  t.resources.set_memory_bytes(4 * kGiB);
  return t;
}

}  // namespace idlegrid::sched::testing
