#include "verify/task_verdict.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <set>
#include <utility>

#include "verify/adaptive.h"
#include "verify/challenge.h"
#include "verify/quorum.h"

namespace idlegrid::verify {

namespace {

bool Votes(const RunRecord& run) {
  return run.state == v1::SUCCEEDED && (run.vote == "pending" || run.vote == "agreed" || run.vote == "unverified");
}

bool Started(const RunRecord& run) {
  return run.state == v1::SUCCEEDED || run.state == v1::ASSIGNED || run.state == v1::RUNNING ||
         (run.state == v1::FAILED && run.vote == "wrong");
}

void AddOnce(std::vector<std::string>& list, const std::string& value) {
  if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

// The replication rule a task's quorum is decided by: the job's, with
// adaptive's floor of two replicas, and challenge's known answers settled by
// two providers agreeing.
ReplicationRule RuleFor(const VerificationSpec& spec) {
  ReplicationRule rule{spec.replicas, spec.quorum, spec.max_replicas, spec.margin};
  if (spec.mode == Mode::kAdaptive) rule.replicas = std::max<uint32_t>(rule.replicas, 2);
  // Known answers (and a challenged provider's results re-verified) are
  // settled by two providers agreeing, as under replicate's defaults.
  if (spec.mode == Mode::kChallenge) rule = {2, 2, 6, std::max<uint32_t>(spec.margin, 1)};
  return rule;
}

// Whether `run`'s outputs match `accepted`'s (a run that cannot be compared
// does not match).
bool Matches(const CompareSpec& compare, const RunRecord& accepted, const RunRecord& run) {
  if (!CheckComparable(compare, run.outputs).ok()) return false;
  auto c = CompareOutputs(compare, accepted.outputs, run.outputs);
  return c.ok() && c->match;
}

// The runs of a task as DecideTask counts them: those that vote (a result
// whose vote is still open or settled), and how many started and are running.
struct RunTally {
  std::vector<const RunRecord*> voters;
  uint32_t started = 0;
  uint32_t running = 0;
  bool pending = false;  // a voter's vote is still "pending"
};

RunTally TallyRuns(const std::vector<RunRecord>& runs) {
  RunTally tally;
  for (const RunRecord& run : runs) {
    if (Started(run)) ++tally.started;
    if (run.state == v1::ASSIGNED || run.state == v1::RUNNING) ++tally.running;
    if (!Votes(run)) continue;
    tally.voters.push_back(&run);
    tally.pending = tally.pending || run.vote == "pending";
  }
  return tally;
}

// A known-answer check: agreed results and one pending run (challenge.h).
// Nothing when the voters are not such a check.
std::optional<TaskVerdict> JudgeKnownAnswer(const TaskVerdictInput& in, const std::vector<const RunRecord*>& voters) {
  std::vector<const RunRecord*> agreed, pending_runs;
  for (const RunRecord* run : voters) (run->vote == "agreed" ? agreed : pending_runs).push_back(run);
  if (agreed.size() < 2 || pending_runs.size() != 1) return std::nullopt;
  TaskVerdict out;
  const RunRecord& under_test = *pending_runs[0];
  auto judged = JudgeChallenge(in.spec.compare, agreed[0]->outputs, under_test.outputs);
  out.outcome = TaskOutcome::kAccept;
  if (judged.ok() && judged->passed) {
    out.votes.push_back({under_test.attempt_id, "agreed", "passed a known-answer check", false});
    out.verified.push_back(under_test.provider);
    out.line = "accepted: " + std::to_string(agreed.size()) + " results agree; a known-answer check of provider " +
               under_test.provider + " passed";
  } else {
    const std::string why = judged.ok() ? judged->reason : judged.status().message();
    out.votes.push_back({under_test.attempt_id, "wrong",
                         std::string(FailureName(VerificationFailure::kChallengeFailed)) + ": " + why, true});
    out.caught.push_back(under_test.provider);
    out.line = "accepted: " + std::to_string(agreed.size()) + " results agree; provider " + under_test.provider +
               " failed a known-answer check";
  }
  return out;
}

// Challenge: a job with a known answer takes results on their run's word.
// Nothing when the lone result is to be replicated (or there is more than one).
std::optional<TaskVerdict> AcceptUnderChallenge(const TaskVerdictInput& in,
                                                const std::vector<const RunRecord*>& voters) {
  if (in.spec.mode != Mode::kChallenge || voters.size() != 1 ||
      ReplicateUnderChallenge(in.known_answer, in.provider_on_probation, in.spec.audit_floor, in.draw)) {
    return std::nullopt;
  }
  TaskVerdict out;
  out.outcome = TaskOutcome::kAccept;
  out.line = "accepted unverified: its provider is checked with known-answer tasks";
  out.votes.push_back({voters[0]->attempt_id, "unverified", "", false});
  return out;
}

// Adaptive: a lone result of a provider with a long enough record is
// audited only when the draw says so. Nothing when it is to be audited.
std::optional<TaskVerdict> AcceptUnaudited(const TaskVerdictInput& in, const std::vector<const RunRecord*>& voters) {
  if (in.spec.mode != Mode::kAdaptive || voters.size() != 1) return std::nullopt;
  ReplicationChoice choice = ChooseReplication(
      {in.spec.trust_threshold, AuditFloor(in.spec.audit_floor, in.spec.challenge_rate, in.check_can_reach)},
      in.consecutive_valid, in.draw);
  if (choice.replicate) return std::nullopt;
  char line[200];
  std::snprintf(line, sizeof line,
                "accepted unverified: its provider has %u verified results in a row; not audited this time "
                "(p=%.2f)",
                in.consecutive_valid, choice.probability);
  TaskVerdict out;
  out.outcome = TaskOutcome::kAccept;
  out.line = line;
  out.votes.push_back({voters[0]->attempt_id, "unverified", "", false});
  return out;
}

std::string ProviderOf(const std::vector<const RunRecord*>& voters, const std::string& attempt) {
  for (const RunRecord* run : voters) {
    if (run->attempt_id == attempt) return run->provider;
  }
  return "";
}

// A demoted vote (its provider was caught) that differs from the result now
// accepted was wrong too.
void MarkDemotedMismatches(const TaskVerdictInput& in, const std::vector<const RunRecord*>& voters,
                           const QuorumDecision& d, TaskVerdict& out) {
  const RunRecord* accepted = nullptr;
  for (const RunRecord* run : voters) {
    if (!d.agreeing.empty() && run->attempt_id == d.agreeing.front()) accepted = run;
  }
  for (const RunRecord& run : in.runs) {
    if (accepted == nullptr || run.state != v1::SUCCEEDED || run.vote != "demoted") continue;
    if (Matches(in.spec.compare, *accepted, run)) continue;
    out.votes.push_back({run.attempt_id, "wrong",
                         std::string(FailureName(VerificationFailure::kOutvoted)) +
                             ": its demoted vote differs from the result accepted on re-verification",
                         true});
    AddOnce(out.caught, run.provider);
  }
}

TaskVerdict QuorumAccepted(const TaskVerdictInput& in, const std::vector<const RunRecord*>& voters,
                           const QuorumDecision& d) {
  TaskVerdict out;
  out.outcome = TaskOutcome::kAccept;
  for (const auto& id : d.agreeing) {
    out.votes.push_back({id, "agreed", "", false});
    AddOnce(out.verified, ProviderOf(voters, id));
  }
  for (const Vote& v : d.wrong) {
    out.votes.push_back({v.attempt_id, "wrong", std::string(FailureName(v.failure)) + ": " + v.reason, true});
    if (ProvesProviderWrong(v.failure)) AddOnce(out.caught, v.provider);
  }
  for (const auto& id : d.ignored) out.votes.push_back({id, "ignored", "its provider had voted already", false});
  MarkDemotedMismatches(in, voters, d, out);
  out.line = "accepted: " + std::to_string(d.agreeing.size()) + " of " + std::to_string(voters.size()) +
             " results agree (" + ModeName(in.spec.mode) + ")";
  if (d.settled_by == SettledBy::kMajority) {
    out.line += "; settled by the majority rule: " + d.reason;
  }
  if (!d.wrong.empty()) out.line += "; " + std::to_string(d.wrong.size()) + " wrong";
  return out;
}

TaskVerdict QuorumNeedsMoreRuns(const TaskVerdictInput& in, const std::vector<const RunRecord*>& voters,
                                const ReplicationRule& rule, const QuorumDecision& d) {
  TaskVerdict out;
  out.outcome = TaskOutcome::kMoreRuns;
  for (const RunRecord& run : in.runs) {
    if (Started(run) && !run.provider.empty()) AddOnce(out.exclude_providers, run.provider);
  }
  out.line = "verifying: " + std::to_string(voters.size()) + " result(s) so far, " + std::to_string(rule.quorum) +
             " must agree; another run on a provider not yet used";
  if (!d.reason.empty()) out.line += " (" + d.reason + ")";
  return out;
}

TaskVerdict QuorumFailed(const std::vector<const RunRecord*>& voters, const QuorumDecision& d) {
  TaskVerdict out;
  out.outcome = TaskOutcome::kFail;
  for (const RunRecord* run : voters) {
    if (run->vote == "pending") out.votes.push_back({run->attempt_id, "no_quorum", d.reason, false});
  }
  out.line = "verification failed: " + (d.reason.empty() ? std::string("no quorum") : d.reason);
  return out;
}

// The voters' results replicated and put to the vote (quorum.h).
TaskVerdict DecideByQuorum(const TaskVerdictInput& in, const RunTally& tally) {
  std::vector<ReplicaResult> results;
  for (const RunRecord* run : tally.voters) results.push_back({run->attempt_id, run->provider, "", run->outputs});
  const ReplicationRule rule = RuleFor(in.spec);
  std::optional<uint32_t> fresh;
  if (in.providers) {
    std::set<std::string> fresh_set = *in.providers;
    for (const RunRecord& run : in.runs) {
      if (Started(run)) fresh_set.erase(run.provider);
    }
    fresh = uint32_t(fresh_set.size());
  }
  QuorumDecision d = DecideQuorum(rule, in.spec.compare, results, tally.started, tally.running, fresh);
  switch (d.verdict) {
    case Verdict::kAccept:
      return QuorumAccepted(in, tally.voters, d);
    case Verdict::kNeedMoreRuns:
    case Verdict::kWait:
      return QuorumNeedsMoreRuns(in, tally.voters, rule, d);
    case Verdict::kFail:
      return QuorumFailed(tally.voters, d);
  }
  return TaskVerdict{};
}

}  // namespace

const char* TaskOutcomeName(TaskOutcome outcome) {
  switch (outcome) {
    case TaskOutcome::kAccept:
      return "accept";
    case TaskOutcome::kMoreRuns:
      return "more_runs";
    case TaskOutcome::kFail:
      return "fail";
    case TaskOutcome::kNothing:
      return "nothing";
  }
  return "?";
}

TaskVerdict DecideTask(const TaskVerdictInput& in) {
  const RunTally tally = TallyRuns(in.runs);
  if (!tally.pending) return TaskVerdict{};
  if (auto verdict = JudgeKnownAnswer(in, tally.voters)) return *std::move(verdict);
  if (auto verdict = AcceptUnderChallenge(in, tally.voters)) return *std::move(verdict);
  if (auto verdict = AcceptUnaudited(in, tally.voters)) return *std::move(verdict);
  return DecideByQuorum(in, tally);
}

DemoteDecision DecideDemote(const VerificationSpec& spec, const std::string& caught, const std::string& caught_on,
                            const std::vector<RunRecord>& runs) {
  DemoteDecision out;
  std::vector<const RunRecord*> others;
  std::set<std::string> other_providers;
  for (const RunRecord& run : runs) {
    if (run.state != v1::SUCCEEDED || run.vote != "agreed") continue;
    if (run.provider == caught) {
      out.changed = true;
      out.votes.push_back({run.attempt_id, "demoted",
                           "its provider " + caught + " was proven wrong (attempt " + caught_on + ")", false});
    } else {
      others.push_back(&run);
      other_providers.insert(run.provider);
    }
  }
  if (!out.changed) return out;
  const uint32_t quorum = RuleFor(spec).quorum;
  if (other_providers.size() >= quorum) {
    out.line = "accepted: " + std::to_string(other_providers.size()) + " results agree without the vote of provider " +
               caught + ", proven wrong elsewhere";
    return out;
  }
  out.reopen = true;
  for (const RunRecord* run : others) {
    out.votes.push_back(
        {run->attempt_id, "pending",
         "re-verifying: it agreed with provider " + caught + ", proven wrong (attempt " + caught_on + ")", false});
  }
  for (const RunRecord& run : runs) {
    if (Started(run) && !run.provider.empty()) AddOnce(out.exclude_providers, run.provider);
  }
  out.line = "re-verifying: provider " + caught + ", one of its " + std::to_string(others.size() + 1) +
             " agreeing voters, was proven wrong (attempt " + caught_on + "); another run on a provider not yet used";
  return out;
}

}  // namespace idlegrid::verify
