#include <algorithm>
#include <cstdio>
#include <sstream>

#include "advert/allocatable.h"
#include "sched/scheduler.h"

namespace idlegrid::sched {

std::string TaskKey(const std::string& job_id, uint32_t index) {
  return job_id + "/" + std::to_string(index);
}

namespace {

// Per-GPU memory a task holds: what it names, or the whole device.
uint64_t GpuMemoryNeeded(const TaskView& task) {
  return task.resources.gpu_memory_bytes() > 0 ? task.resources.gpu_memory_bytes() : 1;
}

std::string GiB(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  return buf;
}

// The devices a task may use on a node: all, or just the one it is pinned to.
std::vector<v1::GpuDevice> Candidates(const NodeView& node, const TaskView& task) {
  if (task.pinned_device.empty()) return node.gpus;
  std::vector<v1::GpuDevice> out;
  for (const auto& d : node.gpus) {
    if (d.uuid() == task.pinned_device) out.push_back(d);
  }
  return out;
}

}  // namespace

std::string Infeasibility(const NodeView& node, const TaskView& task) {
  const auto& r = task.resources;
  if (!node.online) return "offline";
  if (!task.pinned_node.empty() && task.pinned_node != node.id) return "pinned to another node";
  if (!task.readiness && !node.unschedulable_reason.empty()) return node.unschedulable_reason;
  if (task.excluded_nodes.count(node.id)) return "rejected or lost this task before";
  if (std::find(node.runtimes.begin(), node.runtimes.end(), task.runtime) == node.runtimes.end()) {
    return "runtime " + task.runtime + " not available";
  }
  if (node.enforcement.memory().empty()) return "cannot enforce a memory limit";
  // gVisor ignores RLIMIT_DATA, so runsc jobs need a cgroup memory cap (the agent refuses them otherwise).
  if (task.runtime == "runsc" && node.enforcement.memory() != "cgroup") return "runsc needs cgroup memory limits";
  if (r.strict_cpu() && node.enforcement.cpu().empty()) return "cannot cap CPU (strictCpu)";
  std::vector<v1::GpuDevice> candidates = Candidates(node, task);
  if (r.gpus() > candidates.size()) return task.pinned_device.empty() ? "insufficient GPUs" : "no such GPU";
  if (r.gpus() > 0 && !advert::FitGpus(candidates, r.gpus(), GpuMemoryNeeded(task), nullptr)) {
    return r.gpu_memory_bytes() > 0 ? "insufficient GPU memory (need " + GiB(r.gpu_memory_bytes()) + " per GPU)"
                                    : "no free GPU";
  }
  if (r.cpu() > node.cpu_free + 1e-9) return "insufficient CPU";
  if (r.memory_bytes() > node.memory_free) return "insufficient memory";
  return "";
}

void Reserve(NodeView* node, const TaskView& task, const std::vector<std::string>& device_uuids) {
  node->cpu_free -= task.resources.cpu();
  node->memory_free -= std::min(node->memory_free, task.resources.memory_bytes());
  for (auto& d : node->gpus) {
    if (std::find(device_uuids.begin(), device_uuids.end(), d.uuid()) == device_uuids.end()) continue;
    uint64_t hold = task.resources.gpu_memory_bytes() > 0 ? task.resources.gpu_memory_bytes()
                                                          : d.allocatable_memory_bytes();
    d.set_allocatable_memory_bytes(d.allocatable_memory_bytes() - std::min(hold, d.allocatable_memory_bytes()));
  }
}

namespace {

class FirstFitScheduler : public Scheduler {
 public:
  Plan Schedule(std::vector<NodeView> nodes, const std::vector<TaskView>& tasks) const override {
    Plan plan;
    for (const auto& task : tasks) {
      std::sort(nodes.begin(), nodes.end(), [](const NodeView& a, const NodeView& b) {
        if (a.cpu_free != b.cpu_free) return a.cpu_free > b.cpu_free;
        return a.id < b.id;
      });
      std::map<std::string, int> reasons;
      NodeView* chosen = nullptr;
      for (auto& node : nodes) {
        std::string why = Infeasibility(node, task);
        if (why.empty()) {
          chosen = &node;
          break;
        }
        reasons[why]++;
      }
      if (chosen == nullptr) {
        std::ostringstream msg;
        msg << nodes.size() << " nodes";
        const char* sep = ": ";
        for (const auto& [why, n] : reasons) {
          msg << sep << n << " " << why;
          sep = ", ";
        }
        msg << "; waiting";
        plan.waiting[TaskKey(task.job_id, task.index)] = msg.str();
        continue;
      }
      std::vector<std::string> devices;
      if (task.resources.gpus() > 0) {
        advert::FitGpus(Candidates(*chosen, task), task.resources.gpus(), GpuMemoryNeeded(task), &devices);
      }
      Reserve(chosen, task, devices);
      Placement placement;
      placement.job_id = task.job_id;
      placement.index = task.index;
      placement.node_id = chosen->id;
      placement.device_uuids = std::move(devices);
      plan.placements.push_back(std::move(placement));
    }
    return plan;
  }
};

}  // namespace

std::unique_ptr<Scheduler> NewFirstFitScheduler() { return std::make_unique<FirstFitScheduler>(); }

}  // namespace idlegrid::sched
