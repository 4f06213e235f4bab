#include <algorithm>
#include <cstdio>

#include "sched/evaluate.h"
#include "sched/scorers.h"

namespace idlegrid::sched {

Explanation Explain(const std::vector<NodeView>& nodes, const TaskView& task, const PolicyConfig& config, size_t top_n,
                    uint64_t seed, const std::vector<TaskView>& queue) {
  Explanation out;
  out.task_key = TaskKey(task.job_id, task.index);
  out.total_nodes = static_cast<uint32_t>(nodes.size());
  auto it = config.policies.find(task.policy.empty() ? config.default_policy : task.policy);
  if (it == config.policies.end()) {
    out.summary = UnknownPolicy(task.policy, config) + "; waiting";
    return out;
  }
  out.policy = it->first;
  const CompiledPolicy policy = Compile(it->second);
  const Snapshot snap = BuildSnapshot(nodes, seed);
  const Demand d = MakeDemand(task, it->second, snap);
  const Workload workload = queue.empty() ? BuildWorkload({task}) : BuildWorkload(queue);
  std::vector<std::pair<uint32_t, Ranking>> feasible;
  TallyNodes(snap, d, policy, workload, &out.filtered, &feasible);
  out.feasible_nodes = static_cast<uint32_t>(feasible.size());
  std::sort(feasible.begin(), feasible.end(), [&](const auto& a, const auto& b) {
    if (a.second.primary != b.second.primary) return a.second.primary > b.second.primary;
    if (a.second.score != b.second.score) return a.second.score > b.second.score;
    const NodeState& x = snap.nodes[a.first];
    const NodeState& y = snap.nodes[b.first];
    if (x.tiebreak != y.tiebreak) return x.tiebreak < y.tiebreak;
    return a.first < b.first;
  });
  for (size_t k = 0; k < feasible.size() && k < top_n; ++k) {
    const uint32_t i = feasible[k].first;
    const NodeState& node = snap.nodes[i];
    RankedCandidate c;
    c.node_id = node.view->id;
    DeviceMask eligible = 0;
    StaticFeasible(node, d, &eligible, nullptr);
    Ranking r;
    Evaluate(snap, node, d, policy, eligible, workload, &r, nullptr, &c.terms);
    for (size_t dev = 0; dev < node.devices.size(); ++dev) {
      if ((r.choice.devices >> dev) & 1) c.device_uuids.push_back(node.view->gpus[dev].uuid());
    }
    c.price_per_hour = r.choice.price_per_hour;
    c.total = r.score;
    c.locality = DescribeLocality(*node.view, task);
    out.top.push_back(std::move(c));
  }
  out.summary = Summarize(out.total_nodes, out.feasible_nodes, out.top.empty() ? "" : out.top[0].node_id, out.filtered);
  return out;
}

std::string FormatExplanation(const Explanation& e) {
  std::string out = e.task_key + " (policy " + (e.policy.empty() ? "?" : e.policy) + "): " + e.summary + "\n";
  if (!e.fair_share.empty()) out += "  fair share: " + e.fair_share + "\n";
  char line[512];
  for (const auto& f : e.filtered) {
    std::snprintf(line, sizeof line, "  %-18s %5u  %s (e.g. %s: %s)\n", f.stage.c_str(), f.nodes, f.reason.c_str(),
                  f.example_node.c_str(), f.example_detail.empty() ? "-" : f.example_detail.c_str());
    out += line;
  }
  for (size_t k = 0; k < e.top.size(); ++k) {
    const auto& c = e.top[k];
    std::snprintf(line, sizeof line, "  #%zu %s score %.3f price %.2f/h:", k + 1, c.node_id.c_str(), c.total,
                  c.price_per_hour);
    out += line;
    for (const auto& t : c.terms) {
      std::snprintf(line, sizeof line, " %s %.3f x %g = %.3f;", t.scorer.c_str(), t.value, t.weight, t.contribution);
      out += line;
    }
    out += "\n";
    if (!c.locality.empty()) out += "      locality: " + c.locality + "\n";
  }
  return out;
}

}  // namespace idlegrid::sched
