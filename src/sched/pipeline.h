#pragma once
// The pipeline scheduler: feasibility stages (feasibility.h), then scorers
// weighted by a named policy (policy.h, scorers.h), over an immutable
// snapshot. Pure: no I/O, no clock, no threads; deterministic for a given
// snapshot (as a set of nodes), task list and seed.
//
// How the coordinator uses it:
//   1. Fill NodeView (scheduler.h) per node, including the pipeline fields
//      (region, trust_tier, reliability, cached_images, asks,
//      allows_sharing, max_run_seconds, gpu_free_milli, disk_free) and
//      TaskView per queued task (policy, gpu_milli / vram_slice, bids, ...).
//   2. plan = scheduler->Schedule(nodes, tasks); commit plan.placements in one
//      transaction, re-checking each with ApplyPlacement against fresh state;
//      store each Placement's pricing_rule / ask / bid / price with its
//      attempt; show plan.waiting[TaskKey].summary to users.
//   3. `status --explain`: Explain(nodes, task, config); `idlegrid market`:
//      market::OrderBook(MarketOffers(nodes)).
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "market/market.h"
#include "sched/policy.h"
#include "sched/scheduler.h"

namespace idlegrid::sched {

struct PipelineOptions {
  PolicyConfig config;  // built-in policies unless replaced
  uint64_t seed = 0;    // breaks ties between equally ranked nodes
};

// Places tasks in fair-share order (fair_share.h: weighted DRF between
// accounts, given what each holds; each account's own tasks, and all tasks
// when there is one account, in the order given), each on the best-ranked
// feasible node, holding its capacity before the next. A task naming an
// unknown policy waits with that reason. plan.waiting holds Explain's summary
// and facts (WaitReason) for each task not placed. Never holds more than a node's or device's free
// capacity.
std::unique_ptr<Scheduler> NewPipelineScheduler(PipelineOptions options = {});

struct FilterTally {
  std::string stage;
  std::string reason;  // "insufficient VRAM (need 20 GiB)"
  uint32_t nodes = 0;
  std::string example_node;    // the first such node (by id)
  std::string example_detail;  // "best device has 8 GiB free"
};

struct ScoreTerm {
  std::string scorer;
  double value = 0;  // the scorer's own number
  double weight = 0;
  double contribution = 0;  // value x weight
};

struct RankedCandidate {
  std::string node_id;
  std::vector<std::string> device_uuids;
  double price_per_hour = 0;
  double total = 0;  // sum of contributions
  std::vector<ScoreTerm> terms;
  std::string locality;  // DescribeLocality: "holds image, 1/1 inputs"
};

struct Explanation {
  std::string task_key;
  std::string policy;  // the policy used ("" if the task named an unknown one)
  uint32_t total_nodes = 0;
  uint32_t feasible_nodes = 0;
  std::vector<FilterTally> filtered;  // most nodes first
  std::vector<RankedCandidate> top;   // best first, at most top_n
  // "12 nodes: 9 insufficient VRAM (need 20 GiB), 2 offline, 1 over max price
  // (bid 1.00/GPU-h); waiting" or "12 nodes: 3 feasible, best n7; 9 ...".
  std::string summary;
  // Where the task stands between accounts (FormatFairShare). Explain leaves
  // it empty: the caller fills it from FairShareStandings of the whole queue.
  std::string fair_share;
};

// Why `task` can or cannot go to each of `nodes` as they are now, and how the
// feasible ones rank. Pure. `queue` (the pending tasks, as given to Schedule)
// sets the workload mix the fragmentation scorer weighs; empty: the task
// alone. With the same queue and seed this is the ranking Schedule uses for a
// task that comes first.
Explanation Explain(const std::vector<NodeView>& nodes, const TaskView& task, const PolicyConfig& config = {},
                    size_t top_n = 3, uint64_t seed = 0, const std::vector<TaskView>& queue = {});

// Multi-line text of an explanation, for the CLI.
std::string FormatExplanation(const Explanation& explanation);

// Re-checks `placement` of `task` against `node` as it is now and, if it still
// fits (every named device has the compute share and VRAM, the node the cores,
// memory and disk), takes the capacity from `node`. FailedPrecondition with
// the reason otherwise, leaving `node` unchanged. For commit-time re-checks
// and simulations.
Status ApplyPlacement(NodeView* node, const TaskView& task, const Placement& placement);

// What each online, schedulable node offers now: one offer per GPU class
// (free whole devices) and one for CPU cores, for market::OrderBook.
std::vector<market::Offer> MarketOffers(const std::vector<NodeView>& nodes);

}  // namespace idlegrid::sched
