// Scheduler core benchmark: 10,000 simulated nodes with mixed GPU classes and
// 100,000 queued single-GPU tasks through the pure pipeline scheduler, per
// shipped policy. Prints placements per second and checks the plan from the
// outside (no device held twice, no VRAM/CPU/memory over-allocated).
//
//   bench_sched_core [nodes] [tasks] [seed]
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench_fleet.h"
#include "sched/pipeline.h"

namespace {

using idlegrid::bench::kGiB;
using idlegrid::sched::NodeView;
using idlegrid::sched::Placement;
using idlegrid::sched::TaskView;

using idlegrid::bench::Fleet;

std::vector<TaskView> Queue(size_t count, size_t accounts, std::mt19937_64& rng) {
  std::vector<TaskView> tasks;
  std::uniform_real_distribution<double> u(0, 1);
  for (size_t i = 0; i < count; ++i) {
    TaskView t;
    t.job_id = "job-" + std::to_string(i / 100);  // 100-task arrays
    t.index = static_cast<uint32_t>(i % 100);
    if (accounts > 1) t.account = "account-" + std::to_string(i / 100 % accounts);
    t.runtime = "runc";
    t.image = "sha256:trainer";
    const double kind = u(rng);
    t.resources.set_gpus(1);
    t.resources.set_cpu(4);
    t.resources.set_memory_bytes(32 * kGiB);
    if (kind < 0.5) {
      t.resources.set_gpu_memory_bytes(8 * kGiB);
    } else if (kind < 0.8) {
      t.resources.set_gpu_memory_bytes(20 * kGiB);
    } else {
      t.resources.set_gpu_memory_bytes(40 * kGiB);
      t.min_compute_capability = "8.0";
    }
    tasks.push_back(std::move(t));
  }
  return tasks;
}

// Holds every placement against the original fleet; returns the number of
// over-allocations (a device held twice or short of VRAM, a node short of
// cores or memory).
size_t OverAllocations(const std::vector<NodeView>& fleet, const std::vector<TaskView>& tasks,
                       const std::vector<Placement>& placements) {
  std::map<std::string, const NodeView*> by_id;
  for (const auto& n : fleet) by_id[n.id] = &n;
  std::map<std::string, const TaskView*> task_by_key;
  for (const auto& t : tasks) task_by_key[idlegrid::sched::TaskKey(t.job_id, t.index)] = &t;
  std::map<std::string, int> device_holders;
  std::map<std::string, std::pair<double, uint64_t>> node_use;
  size_t bad = 0;
  for (const auto& p : placements) {
    const NodeView& n = *by_id.at(p.node_id);
    const TaskView& t = *task_by_key.at(idlegrid::sched::TaskKey(p.job_id, p.index));
    if (p.device_uuids.size() != t.resources.gpus()) ++bad;
    for (const auto& uuid : p.device_uuids) {
      if (++device_holders[uuid] > 1) ++bad;
      for (const auto& g : n.gpus) {
        if (g.uuid() == uuid && g.allocatable_memory_bytes() < t.resources.gpu_memory_bytes()) ++bad;
      }
    }
    auto& [cpu, mem] = node_use[p.node_id];
    cpu += t.resources.cpu();
    mem += t.resources.memory_bytes();
    if (cpu > n.cpu_free + 1e-9 || mem > n.memory_free) ++bad;
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t node_count = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 10000;
  const size_t task_count = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 100000;
  const uint64_t seed = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 42;
  const size_t account_count = argc > 4 ? std::strtoul(argv[4], nullptr, 10) : 1;
  std::mt19937_64 rng(seed);
  const std::vector<NodeView> fleet = Fleet(node_count, rng);
  const std::vector<TaskView> queue = Queue(task_count, account_count, rng);
  size_t devices = 0;
  for (const auto& n : fleet) devices += n.gpus.size();
  std::printf("fleet: %zu nodes, %zu GPUs in %zu classes; queue: %zu single-GPU tasks of %zu account(s)\n",
              fleet.size(), devices, std::size(idlegrid::bench::kGpuClasses), queue.size(), account_count);
  std::printf("%-10s %8s %8s %8s %8s %13s %13s %10s\n", "policy", "placed", "waiting", "wall s", "CPU s",
              "placed/s wall", "placed/s CPU", "over-alloc");
  for (const char* policy : {"balanced", "cheapest", "binpack", "spread"}) {
    std::vector<TaskView> tasks = queue;
    for (auto& t : tasks) t.policy = policy;
    idlegrid::sched::PipelineOptions options;
    options.seed = seed;
    auto scheduler = idlegrid::sched::NewPipelineScheduler(options);
    std::vector<NodeView> copy = fleet;  // Schedule takes its snapshot by value; copying is not timed
    // Wall time and this process's CPU time: on a shared machine the second
    // is the steadier figure.
    const auto start = std::chrono::steady_clock::now();
    const std::clock_t cpu_start = std::clock();
    idlegrid::sched::Plan plan = scheduler->Schedule(std::move(copy), tasks);
    const double cpu = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const size_t bad = OverAllocations(fleet, tasks, plan.placements);
    std::printf("%-10s %8zu %8zu %8.3f %8.3f %13.0f %13.0f %10zu\n", policy, plan.placements.size(),
                plan.waiting.size(), seconds, cpu, plan.placements.size() / seconds, plan.placements.size() / cpu, bad);
    if (!plan.waiting.empty())
      std::printf("           e.g. waiting: %s\n", plan.waiting.begin()->second.summary.c_str());
  }

  // The standing stage (sched/standing.h): every task verified, nodes owned
  // by 100 provider accounts of which 10 are proven for the image, unproven
  // accounts capped at 2% of the verified work (the coordinator's default).
  std::vector<NodeView> owned = fleet;
  for (size_t i = 0; i < owned.size(); ++i) owned[i].provider = "provider-" + std::to_string(i % 100);
  std::vector<TaskView> verified = queue;
  for (auto& t : verified) t.verified = true;
  for (double share : {1.0, 0.02}) {
    idlegrid::sched::AccountState accounts;
    accounts.standing.unproven_share = share;
    for (int p = 0; p < 10; ++p) accounts.standing.proven["sha256:trainer"].insert("provider-" + std::to_string(p));
    idlegrid::sched::PipelineOptions options;
    options.seed = seed;
    auto scheduler = idlegrid::sched::NewPipelineScheduler(options);
    std::vector<NodeView> copy = owned;
    const auto start = std::chrono::steady_clock::now();
    const std::clock_t cpu_start = std::clock();
    idlegrid::sched::Plan plan = scheduler->Schedule(std::move(copy), verified, accounts);
    const double cpu = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    size_t unproven = 0;
    for (const auto& pl : plan.placements) {
      const size_t node = std::strtoul(pl.node_id.c_str() + pl.node_id.find_last_of('-') + 1, nullptr, 10);
      unproven += node % 100 >= 10;
    }
    std::printf(
        "standing, verified work, unproven share %.2f: placed %zu (%zu on unproven accounts), waiting %zu, "
        "%.3f s wall, %.3f s CPU, %.0f placed/s CPU, over-alloc %zu\n",
        share, plan.placements.size(), unproven, plan.waiting.size(), seconds, cpu, plan.placements.size() / cpu,
        OverAllocations(owned, verified, plan.placements));
  }
  return 0;
}
