#pragma once
// Scorers rank the nodes that passed every feasibility stage. Each returns a
// number for one (node, demand, chosen devices); the policy weighs and sums
// them. All read the node state *before* the placement and reason about the
// state after it.
#include <string>
#include <vector>

#include "sched/snapshot.h"

namespace idlegrid::sched {

// The GPU demand mix of the pending work, for the fragmentation scorer: a few
// task classes with their share of the queue (weights sum to 1).
struct WorkloadClass {
  uint32_t gpus = 1;
  uint32_t milli = kWholeGpuMilli;  // per device
  double cpu = 0;
  uint64_t memory = 0;
  double weight = 0;
};
using Workload = std::vector<WorkloadClass>;

// The `max_classes` most frequent GPU demands among `tasks` (ties by shape);
// empty when no task asks for a GPU.
Workload BuildWorkload(const std::vector<TaskView>& tasks, size_t max_classes = 12);

// Which devices a placement would hold, and what it would cost.
struct DeviceChoice {
  DeviceMask devices = 0;
  double price_per_hour = 0;  // pay-as-ask
  double max_ask = 0;         // highest per-GPU-hour ask among the devices
  double fragmentation = 0;   // GPUs' worth of fragmentation the placement adds (FGD)
};

// Picks `d.gpus` devices of `free` (FreeDevices): the cheapest first; among
// equal asks, for a share the device that adds the least fragmentation (when
// `workload` is not empty) else the fullest that fits, for whole devices the
// tightest VRAM fit. Fills price and fragmentation. Deterministic.
DeviceChoice ChooseDevices(const NodeState& node, const Demand& d, DeviceMask free, const Workload& workload);

// Expected GPU milli on `node` that the workload could not use (FGD's node
// fragmentation), with `cpu`/`memory` taken and `milli_taken[i]` removed from
// device i.
double NodeFragmentation(const NodeState& node, const Workload& workload, const uint32_t* milli_taken, double cpu,
                         uint64_t memory);

struct ScoreContext {
  const Snapshot& snap;
  const NodeState& node;
  const Demand& demand;
  const DeviceChoice& choice;
};

// 1 for the cheapest ask in the snapshot .. 0 for the dearest.
double ScorePrice(const ScoreContext& c);
// Locality (BOINC's locality scheduling): 1 if the node has the task's image
// cached, else the share of the image's layer bytes its cached images hold (0
// for an image pushed as one archive); for a task with inputs, the mean of
// that and the share of its inputs (by count) the node's input cache holds.
double ScoreCache(const ScoreContext& c);
// What the cache scorer saw, for explanations: "holds image, 1/2 inputs",
// "holds 99% of the image's layers".
std::string DescribeLocality(const NodeView& node, const TaskView& task);
// The node's reliability, clamped to 0..1.
double ScoreReliability(const ScoreContext& c);
// Utilization after the placement (GPU milli when the task uses GPUs, else
// CPU): pack scores it, spread scores 1 - it.
double ScorePacking(const ScoreContext& c);
// Thermal/power headroom 0..1 (the node's, else its chosen devices'); 0.5 unknown.
double ScoreEnergy(const ScoreContext& c);
// Minus the fragmentation the placement adds, in GPUs (FGD: lower is better).
double ScoreFragmentation(const ScoreContext& c);

using ScorerFn = double (*)(const ScoreContext&);
// The scorer called `name` (policy.h's kScore*), or nullptr.
ScorerFn FindScorer(const std::string& name);

}  // namespace idlegrid::sched
