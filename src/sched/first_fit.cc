#include <algorithm>
#include <sstream>

#include "sched/scheduler.h"

namespace idlegrid::sched {

std::string TaskKey(const std::string& job_id, uint32_t index) {
  return job_id + "/" + std::to_string(index);
}

std::string Infeasibility(const NodeView& node, const TaskView& task) {
  const auto& r = task.resources;
  if (!node.online) return "offline";
  if (task.excluded_nodes.count(node.id)) return "rejected or lost this task before";
  if (std::find(node.runtimes.begin(), node.runtimes.end(), task.runtime) == node.runtimes.end()) {
    return "runtime " + task.runtime + " not available";
  }
  if (node.enforcement.memory().empty()) return "cannot enforce a memory limit";
  // gVisor ignores RLIMIT_DATA, so runsc jobs need a cgroup memory cap (the agent refuses them otherwise).
  if (task.runtime == "runsc" && node.enforcement.memory() != "cgroup") return "runsc needs cgroup memory limits";
  if (r.strict_cpu() && node.enforcement.cpu().empty()) return "cannot cap CPU (strictCpu)";
  if (r.gpus() > node.gpus_free) return "insufficient GPUs";
  if (r.cpu() > node.cpu_free + 1e-9) return "insufficient CPU";
  if (r.memory_bytes() > node.memory_free) return "insufficient memory";
  return "";
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
      chosen->cpu_free -= task.resources.cpu();
      chosen->memory_free -= task.resources.memory_bytes();
      chosen->gpus_free -= task.resources.gpus();
      plan.placements.push_back({task.job_id, task.index, chosen->id});
    }
    return plan;
  }
};

}  // namespace

std::unique_ptr<Scheduler> NewFirstFitScheduler() { return std::make_unique<FirstFitScheduler>(); }

}  // namespace idlegrid::sched
