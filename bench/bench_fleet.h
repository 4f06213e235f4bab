#pragma once
// The simulated fleet the scheduler benches share (bench/sched_core.cc,
// bench/sched_commit.cc): mixed GPU classes with asks, regions, trust tiers,
// reliability and cached images. Deterministic for a given generator state.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "sched/scheduler.h"

namespace idlegrid::bench {

inline constexpr uint64_t kGiB = uint64_t{1} << 30;
inline constexpr uint32_t kFleetCores = 128;
inline constexpr uint64_t kFleetMemory = 1024 * kGiB;

struct GpuClass {
  const char* name;
  uint64_t vram;
  uint32_t per_node;
  double ask;
  double share;  // of nodes
};

inline constexpr GpuClass kGpuClasses[] = {
    {"NVIDIA H100 80GB HBM3", 80 * kGiB, 8, 2.50, 0.20},
    {"NVIDIA A100-SXM4-80GB", 80 * kGiB, 8, 1.60, 0.30},
    {"NVIDIA L4", 24 * kGiB, 8, 0.60, 0.20},
    {"NVIDIA A10", 24 * kGiB, 4, 0.50, 0.10},
    {"Tesla T4", 16 * kGiB, 16, 0.30, 0.20},
};

inline std::vector<sched::NodeView> Fleet(size_t count, std::mt19937_64& rng) {
  std::vector<sched::NodeView> nodes;
  std::uniform_real_distribution<double> u(0, 1);
  for (size_t i = 0; i < count; ++i) {
    double pick = u(rng);
    const GpuClass* c = &kGpuClasses[0];
    for (const auto& k : kGpuClasses) {
      c = &k;
      if ((pick -= k.share) < 0) break;
    }
    sched::NodeView n;
    n.id = "node-" + std::to_string(100000 + i);
    n.online = true;
    n.cpu_free = n.cpu_total = kFleetCores;
    n.memory_free = kFleetMemory;
    n.runtimes = {"runc"};
    n.enforcement.set_memory("cgroup");
    n.enforcement.set_cpu("cgroup");
    n.region = i % 3 == 0 ? "eu-west" : "us-east";
    n.trust_tier = static_cast<int>(i % 3);
    n.reliability = 0.8 + 0.2 * u(rng);
    n.allows_sharing = true;
    n.asks[c->name] = c->ask * (0.8 + 0.4 * u(rng));
    if (i % 7 == 0) n.cached_images.insert("sha256:trainer");
    for (uint32_t d = 0; d < c->per_node; ++d) {
      v1::GpuDevice g;
      g.set_index(d);
      g.set_uuid(n.id + "-gpu" + std::to_string(d));
      g.set_name(c->name);
      g.set_memory_total_bytes(c->vram);
      g.set_allocatable_memory_bytes(c->vram);
      g.set_compute_capability(c->vram >= 80 * kGiB ? "9.0" : "8.6");
      g.set_cuda_driver_version("12.4");
      n.gpus.push_back(g);
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

}  // namespace idlegrid::bench
