#include "sched/evaluate.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace idlegrid::sched {

CompiledPolicy Compile(const SchedulingPolicy& policy) {
  CompiledPolicy out;
  out.policy = &policy;
  for (const auto& s : policy.scorers) {
    ScorerFn fn = FindScorer(s.name);
    if (fn == nullptr || s.weight == 0) continue;
    out.terms.push_back({fn, s.weight});
    if (s.name == kScoreFragmentation) out.uses_fragmentation = true;
  }
  return out;
}

bool Evaluate(const Snapshot& snap, const NodeState& node, const Demand& d, const CompiledPolicy& policy,
              DeviceMask eligible, const Workload& workload, Ranking* out, Rejection* why,
              std::vector<ScoreTerm>* terms) {
  if (!DynamicFeasible(node, d, &eligible, why)) return false;
  static const Workload kNone;
  out->choice = ChooseDevices(node, d, eligible, policy.uses_fragmentation ? workload : kNone);
  if (std::string over = market::CostCapExceeded(out->choice.price_per_hour, d.bid); !over.empty()) {
    if (why != nullptr) {
      const bool unbounded = d.bid.run_hours <= 0;
      char cap[64];
      std::snprintf(cap, sizeof cap, "%.2f", d.bid.max_cost);
      why->stage = kStageCostCap;
      why->reason = unbounded ? "maxCost needs a run timeout" : std::string("estimated cost over maxCost ") + cap;
      why->detail = why->brief ? "" : over;
    }
    return false;
  }
  out->primary = d.price_first ? -out->choice.price_per_hour : 0;
  const ScoreContext context{snap, node, d, out->choice};
  double score = 0;
  for (size_t i = 0; i < policy.terms.size(); ++i) {
    const auto& [fn, weight] = policy.terms[i];
    const double value = fn(context);
    score += weight * value;
    if (terms != nullptr) terms->push_back({"", value, weight, weight * value});
  }
  if (terms != nullptr) {
    // Names in the policy's order, skipping the ones Compile dropped.
    size_t k = 0;
    for (const auto& s : policy.policy->scorers) {
      if (FindScorer(s.name) != nullptr && s.weight != 0 && k < terms->size()) (*terms)[k++].scorer = s.name;
    }
  }
  out->score = score;
  return true;
}

std::string Summarize(uint32_t total, uint32_t feasible, const std::string& best,
                      const std::vector<FilterTally>& tallies) {
  std::string out = std::to_string(total) + (total == 1 ? " node" : " nodes");
  std::string sep = ": ";
  if (feasible > 0) {
    out += sep + std::to_string(feasible) + " feasible" + (best.empty() ? "" : " (best " + best + ")");
    sep = "; ";
  }
  for (const auto& t : tallies) {
    out += sep + std::to_string(t.nodes) + " " + t.reason;
    sep = ", ";
  }
  if (feasible == 0) out += "; waiting";
  return out;
}

void TallyNodes(const Snapshot& snap, const Demand& d, const CompiledPolicy& policy, const Workload& workload,
                std::vector<FilterTally>* tallies, std::vector<std::pair<uint32_t, Ranking>>* feasible) {
  std::map<std::pair<std::string, std::string>, FilterTally> by_reason;
  std::vector<std::pair<std::string, std::string>> order;  // first-seen order, for stable ties
  for (uint32_t i = 0; i < snap.nodes.size(); ++i) {
    const NodeState& node = snap.nodes[i];
    // Reasons first (cheap); the per-node detail only for a group's first node.
    auto run = [&](Rejection* why, Ranking* ranking) {
      DeviceMask eligible = 0;
      return StaticFeasible(node, d, &eligible, why) && !Excluded(node, *d.task, why) &&
             Evaluate(snap, node, d, policy, eligible, workload, ranking, why, nullptr);
    };
    Rejection why;
    why.brief = true;
    Ranking ranking;
    if (run(&why, &ranking)) {
      if (feasible != nullptr) feasible->push_back({i, ranking});
      continue;
    }
    auto key = std::make_pair(why.stage, why.reason);
    auto [it, inserted] = by_reason.try_emplace(key);
    if (inserted) {
      Rejection full;
      run(&full, &ranking);
      it->second = {why.stage, why.reason, 0, node.view->id, full.detail};
      order.push_back(key);
    }
    ++it->second.nodes;
  }
  tallies->clear();
  for (const auto& key : order) tallies->push_back(by_reason[key]);
  std::stable_sort(tallies->begin(), tallies->end(),
                   [](const FilterTally& a, const FilterTally& b) { return a.nodes > b.nodes; });
}

}  // namespace idlegrid::sched
