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

namespace {

// "2, 1, 1": each group's size, largest first, malformed results as groups of one.
std::string GroupSizes(const std::vector<Group>& groups, size_t malformed) {
  std::vector<size_t> sizes;
  for (const Group& g : groups) sizes.push_back(g.members.size());
  sizes.insert(sizes.end(), malformed, 1);
  std::sort(sizes.rbegin(), sizes.rend());
  std::string out;
  for (size_t n : sizes) out += (out.empty() ? "" : ", ") + std::to_string(n);
  return out.empty() ? "none" : out;
}

void Accept(const ReplicationRule& rule, const CompareSpec& compare, const std::vector<Group>& groups,
            const Group& best, std::vector<Vote> malformed, size_t voters, QuorumDecision& d) {
  d.verdict = Verdict::kAccept;
  for (const ReplicaResult* r : best.members) d.agreeing.push_back(r->attempt_id);
  const std::vector<OutputFile>& accepted = best.members.front()->outputs;
  for (const Group& g : groups) {
    if (&g == &best) continue;
    for (const ReplicaResult* r : g.members) {
      Result<Comparison> c = CompareOutputs(compare, accepted, r->outputs);
      d.wrong.push_back(
          {r->attempt_id, r->provider, VerificationFailure::kOutvoted, c.ok() ? c->difference : c.status().message()});
    }
  }
  d.wrong.insert(d.wrong.end(), malformed.begin(), malformed.end());
  d.reason = std::to_string(best.members.size()) + " of " + std::to_string(voters) + " providers agree (quorum " +
             std::to_string(rule.quorum) + ")";
}

}  // namespace

QuorumDecision DecideQuorum(const ReplicationRule& rule, const CompareSpec& compare,
                            const std::vector<ReplicaResult>& results, uint32_t runs_started, uint32_t runs_running,
                            std::optional<uint32_t> fresh_providers) {
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
  const uint32_t voters = uint32_t(providers.size());
  // Malformed results are votes against every group.
  uint32_t runner_up = uint32_t(malformed.size());
  for (const Group& g : groups) {
    if (&g != best) runner_up = std::max(runner_up, uint32_t(g.members.size()));
  }
  const uint32_t margin = std::max(rule.margin, 1u);

  if (best_size >= rule.quorum && best_size >= runner_up + margin) {
    Accept(rule, compare, groups, *best, std::move(malformed), voters, d);
    return d;
  }

  // Runs that could still add a vote: those in flight and those not started,
  // within the job's budget and (when known) the providers not yet used.
  const uint32_t budget = rule.max_replicas > runs_started ? rule.max_replicas - runs_started : 0;
  const uint32_t unstarted = fresh_providers ? std::min(budget, *fresh_providers) : budget;
  const auto short_of = [](uint32_t want, uint32_t have) { return want > have ? want - have : 0; };
  uint32_t missing = std::max(short_of(rule.quorum, best_size), short_of(runner_up + margin, best_size));
  if (missing > runs_running + budget) {
    d.verdict = Verdict::kFail;
    d.reason = "no " + std::to_string(rule.quorum) + " matching results from distinct providers in " +
               std::to_string(runs_started) + " runs (at most " + std::to_string(rule.max_replicas) + "); groups of " +
               GroupSizes(groups, malformed.size());
    return d;
  }
  const bool majority_rule = missing > runs_running + unstarted;
  if (majority_rule) {
    // The providers ran out before the margin could be reached.
    const uint32_t others = voters - best_size;
    if (best_size >= rule.quorum && best_size > others) {
      Accept(rule, compare, groups, *best, std::move(malformed), voters, d);
      d.settled_by = SettledBy::kMajority;
      d.reason += "; a strict majority, settled so because no provider is left to lead by " + std::to_string(margin);
      return d;
    }
    missing = std::max(short_of(rule.quorum, best_size), short_of(others + 1, best_size));
    if (missing > runs_running + unstarted) {
      d.verdict = Verdict::kFail;
      d.reason = "no quorum: groups of " + GroupSizes(groups, malformed.size()) + " from " + std::to_string(voters) +
                 " providers, and no provider is left who has not run it";
      return d;
    }
  }
  const uint32_t to_replicas = rule.replicas > runs_started ? rule.replicas - runs_started : 0;
  const uint32_t to_break = missing > runs_running ? missing - runs_running : 0;
  d.more_runs = std::min(std::max(to_replicas, to_break), unstarted);
  d.verdict = d.more_runs > 0 ? Verdict::kNeedMoreRuns : Verdict::kWait;
  d.reason = std::to_string(best_size) + " matching of " + std::to_string(rule.quorum) + " needed (leading by " +
             std::to_string(margin) + "); " + std::to_string(runs_running) + " running";
  if (majority_rule)
    d.reason += "; too few providers left to lead by " + std::to_string(margin) + ", so a strict majority decides";
  return d;
}

}  // namespace idlegrid::verify
