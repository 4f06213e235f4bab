#include "verify/quorum.h"

#include <algorithm>
#include <set>

namespace idlegrid::verify {
namespace {

struct Group {
  std::vector<const ReplicaResult*> members;
};

}  // namespace

const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kAccept:
      return "accept";
    case Verdict::kNeedMoreRuns:
      return "need_more_runs";
    case Verdict::kWait:
      return "wait";
    case Verdict::kFail:
      return "fail";
  }
  return "";
}

QuorumDecision DecideQuorum(const ReplicationRule& rule, const CompareSpec& compare,
                            const std::vector<ReplicaResult>& results, uint32_t runs_started, uint32_t runs_running) {
  QuorumDecision d;
  std::set<std::string> providers;
  std::vector<Group> groups;
  std::vector<Vote> malformed;
  for (const ReplicaResult& r : results) {
    if (!providers.insert(r.provider).second) {
      d.ignored.push_back(r.attempt_id);
      continue;
    }
    Status comparable = CheckComparable(compare, r.outputs);
    if (!comparable.ok()) {
      malformed.push_back({r.attempt_id, r.provider, VerificationFailure::kMalformedOutput, comparable.message()});
      continue;
    }
    auto home = std::find_if(groups.begin(), groups.end(), [&](const Group& g) {
      Result<Comparison> c = CompareOutputs(compare, g.members.front()->outputs, r.outputs);
      return c.ok() && c->match;
    });
    if (home == groups.end()) {
      groups.push_back({{&r}});
    } else {
      home->members.push_back(&r);
    }
  }

  const Group* best = nullptr;
  for (const Group& g : groups) {
    if (!best || g.members.size() > best->members.size()) best = &g;
  }
  const uint32_t best_size = best ? uint32_t(best->members.size()) : 0;
  // Malformed results are votes against every group.
  uint32_t runner_up = uint32_t(malformed.size());
  for (const Group& g : groups) {
    if (&g != best) runner_up = std::max(runner_up, uint32_t(g.members.size()));
  }
  const uint32_t margin = std::max(rule.margin, 1u);

  if (best_size >= rule.quorum && best_size >= runner_up + margin) {
    d.verdict = Verdict::kAccept;
    for (const ReplicaResult* r : best->members) d.agreeing.push_back(r->attempt_id);
    const std::vector<OutputFile>& accepted = best->members.front()->outputs;
    for (const Group& g : groups) {
      if (&g == best) continue;
      for (const ReplicaResult* r : g.members) {
        Result<Comparison> c = CompareOutputs(compare, accepted, r->outputs);
        d.wrong.push_back({r->attempt_id, r->provider, VerificationFailure::kOutvoted,
                           c.ok() ? c->difference : c.status().message()});
      }
    }
    d.wrong.insert(d.wrong.end(), malformed.begin(), malformed.end());
    d.reason = std::to_string(best_size) + " of " + std::to_string(providers.size()) + " providers agree (quorum " +
               std::to_string(rule.quorum) + ")";
    return d;
  }

  // Runs that could still add a vote: those in flight and those not started.
  const uint32_t unstarted = rule.max_replicas > runs_started ? rule.max_replicas - runs_started : 0;
  const uint32_t missing = std::max(rule.quorum > best_size ? rule.quorum - best_size : 0,
                                    runner_up + margin > best_size ? runner_up + margin - best_size : 0);
  if (missing > runs_running + unstarted) {
    d.verdict = Verdict::kFail;
    d.reason = "no " + std::to_string(rule.quorum) + " matching results from distinct providers in " +
               std::to_string(runs_started) + " runs (at most " + std::to_string(rule.max_replicas) +
               "); the largest group has " + std::to_string(best_size);
    return d;
  }
  const uint32_t to_replicas = rule.replicas > runs_started ? rule.replicas - runs_started : 0;
  const uint32_t to_break = missing > runs_running ? missing - runs_running : 0;
  d.more_runs = std::min(std::max(to_replicas, to_break), unstarted);
  d.verdict = d.more_runs > 0 ? Verdict::kNeedMoreRuns : Verdict::kWait;
  d.reason = std::to_string(best_size) + " matching of " + std::to_string(rule.quorum) + " needed (leading by " +
             std::to_string(margin) + "); " + std::to_string(runs_running) + " running";
  return d;
}

}  // namespace idlegrid::verify
