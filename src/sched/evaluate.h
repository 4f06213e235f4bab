#pragma once
// One node for one demand: the dynamic stages, the device choice, the cost cap
// and the policy's scorers. Shared by Schedule and Explain so that both rank
// alike. Internal to src/sched.
#include <vector>

#include "sched/feasibility.h"
#include "sched/pipeline.h"
#include "sched/scorers.h"

namespace idlegrid::sched {

// A policy with its scorers resolved to functions.
struct CompiledPolicy {
  const SchedulingPolicy* policy = nullptr;
  std::vector<std::pair<ScorerFn, double>> terms;
  bool uses_fragmentation = false;
};

CompiledPolicy Compile(const SchedulingPolicy& policy);

struct Ranking {
  double primary = 0;  // -price per hour for price-first demands, else 0
  double score = 0;    // the policy's weighted sum
  DeviceChoice choice;
};

// After StaticFeasible passed with `eligible`: true and the ranking if the node
// can take the demand now. `terms` (optional) receives the score breakdown.
bool Evaluate(const Snapshot& snap, const NodeState& node, const Demand& d, const CompiledPolicy& policy,
              DeviceMask eligible, const Workload& workload, Ranking* out, Rejection* why,
              std::vector<ScoreTerm>* terms);

// "N nodes: a reason, b reason; waiting" from tallies (most first).
std::string Summarize(uint32_t total, uint32_t feasible, const std::string& best,
                      const std::vector<FilterTally>& tallies);

// Runs every stage over every node for `d` and tallies the rejections.
// `feasible` receives the nodes that pass, with rankings.
void TallyNodes(const Snapshot& snap, const Demand& d, const CompiledPolicy& policy, const Workload& workload,
                std::vector<FilterTally>* tallies, std::vector<std::pair<uint32_t, Ranking>>* feasible);

}  // namespace idlegrid::sched
