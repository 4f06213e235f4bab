#pragma once
// The scheduling core: pure placement over an immutable snapshot. No I/O, no
// clock, no threads. The coordinator builds the snapshot, calls Schedule, and
// commits the returned plan in one transaction that re-checks each placement.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::sched {

struct NodeView {
  std::string id;
  bool online = false;
  double cpu_free = 0;        // cores not held by active attempts
  uint64_t memory_free = 0;   // bytes not held by active attempts
  // Devices with allocatable_memory_bytes already net of the owner's reserve
  // and of what active attempts hold.
  std::vector<v1::GpuDevice> gpus;
  std::vector<std::string> runtimes;
  v1::Enforcement enforcement;
  // Why the node takes no ordinary work ("" if it does): readiness benchmark
  // pending or failed, paused by its owner, ...
  std::string unschedulable_reason;
};

struct TaskView {
  std::string job_id;
  uint32_t index = 0;
  v1::Resources resources;
  std::string runtime;
  std::set<std::string> excluded_nodes;  // nodes that rejected or lost it before
  std::string pinned_node;  // only this node may run it (readiness benchmarks)
  bool readiness = false;   // a benchmark: runs on nodes not yet schedulable
  std::string pinned_device;  // only this GPU (a GPU benchmark measures one device)
};

struct Placement {
  std::string job_id;
  uint32_t index = 0;
  std::string node_id;
  std::vector<std::string> device_uuids;  // GPUs reserved for it
};

struct Plan {
  std::vector<Placement> placements;
  // job_id/index -> why it could not be placed this round ("2 nodes: 1 offline, 1 insufficient memory")
  std::map<std::string, std::string> waiting;
};

// A replaceable placement strategy. Schedule must be deterministic for a given
// input and never place more than a node's free resources.
class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual Plan Schedule(std::vector<NodeView> nodes, const std::vector<TaskView>& tasks) const = 0;
};

// First fit over nodes ordered by most free CPU (so work spreads), ties by id.
std::unique_ptr<Scheduler> NewFirstFitScheduler();

// Why `node` cannot take `task`, or "" if it can. Exposed for tests and explain.
std::string Infeasibility(const NodeView& node, const TaskView& task);

// Takes what `task` needs from `node`, holding `device_uuids`: a task that
// names no GPU memory holds each of its devices whole.
void Reserve(NodeView* node, const TaskView& task, const std::vector<std::string>& device_uuids);

std::string TaskKey(const std::string& job_id, uint32_t index);

}  // namespace idlegrid::sched
