#pragma once
// The verdict on one task of a verified job, each time one of its runs
// returns a result: accept a result (and which runs agreed, which were
// wrong), ask for another run on a provider not yet used, or fail the task.
// It puts quorum.h and adaptive.h together over the task's runs as the store
// holds them; the coordinator (coordinator/verification_service.h) reads the runs,
// asks here, and has the store write the answer in one transaction.
//
// Challenge mode: until the job has a known answer (a task accepted by a
// quorum of two providers), results are replicated; afterwards each is
// accepted on its run's word, and the coordinator, at the job's challenge
// rate, sends a known-answer task to that provider: a task of the same job,
// indistinguishable from the rest because it is one of them, whose agreed
// result is the answer. A task whose runs are agreed results plus one
// pending run is such a check, in any mode: the pending run is judged
// against the known answer (challenge.h), which a wrong answer cannot outvote.
//
// Runs are replicated one after another, not at once: a task holds at most
// one live attempt, as every other task does (leases, capacity and fencing
// stay per attempt), and a sweep is throughput-bound, not latency-bound.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "idlegrid/v1/idlegrid.pb.h"
#include "verify/compare.h"
#include "verify/spec.h"

namespace idlegrid::verify {

// One attempt of the task, as stored.
struct RunRecord {
  std::string attempt_id;
  std::string provider;  // the provider account owning the attempt's node
  v1::TaskState state = v1::QUEUED;
  std::string vote;  // v1::Attempt.vote
  std::vector<OutputFile> outputs;
};

struct TaskVerdictInput {
  VerificationSpec spec;
  std::vector<RunRecord> runs;  // every attempt of the task, oldest first
  // Adaptive: the consecutive verified results of the provider of the only
  // result so far (for this image). Adaptive and challenge: a uniform draw
  // in [0, 1) from the coordinator's random source.
  uint32_t consecutive_valid = 0;
  double draw = 0;
  // Challenge: another task of the job already has a result accepted by a
  // quorum (a known answer), so results may be accepted on one run's word.
  bool known_answer = false;
  // Challenge: the provider of the only result was proven wrong before and
  // has had no result verified since; its results are replicated again
  // until one is.
  bool provider_on_probation = false;
  // Adaptive: a known-answer check can reach the provider of the only
  // result (the job has a known answer it never ran), so the audit floor
  // gives way to the checks (AuditFloor, adaptive.h).
  bool check_can_reach = false;
  // The provider accounts that could run the task (the coordinator's: those
  // with a node registered, online or not); nullopt: unbounded. Those that
  // have not started a run of it bound the runs a split may still get, so
  // disagreeing providers never hold a task open once no one else is left
  // (DecideQuorum's majority rule).
  std::optional<std::set<std::string>> providers;
};

// What the verdict writes on one attempt.
struct VoteWrite {
  std::string attempt_id;
  std::string vote;     // v1::Attempt.vote
  std::string reason;   // v1::Attempt.vote_reason
  bool failed = false;  // the attempt becomes FAILED with VERIFICATION_FAILED (a wrong result)
};

enum class TaskOutcome {
  kAccept,    // the task succeeds with the agreeing runs' result
  kMoreRuns,  // the task goes back to the queue for a provider not yet used
  kFail,      // the task fails with VERIFICATION_FAILED (no quorum)
  kNothing,   // no result awaits a verdict (e.g. a repeated call): change nothing
};
const char* TaskOutcomeName(TaskOutcome outcome);

struct TaskVerdict {
  TaskOutcome outcome = TaskOutcome::kNothing;
  std::vector<VoteWrite> votes;
  std::vector<std::string> exclude_providers;  // kMoreRuns: providers that already ran it
  std::string line;                            // v1::Task.verification, and the task's message
  std::vector<std::string> verified;           // providers one of whose results was verified valid
  std::vector<std::string> caught;             // providers proven wrong (slash, reset, backtrack)
};

TaskVerdict DecideTask(const TaskVerdictInput& input);

// Demote (caught.h): a provider proven wrong no longer vouches for anything,
// so its agreeing votes in an accepted task stop counting. Over one task's
// runs as stored (the task SUCCEEDED):
//   - no agreeing vote of `caught` here: nothing changes (`changed` false);
//   - its agreeing votes become "demoted" (they count for nothing: not a
//     voter, not an accepted result, not fetched);
//   - if the other agreeing providers still make the job's quorum, the
//     result stands on their word;
//   - otherwise the task is reopened (`reopen`): their votes go back to
//     "pending" as the claim under test, and one more run on a provider that
//     has not run it decides, as any split does (DecideTask). A demoted run
//     whose output turns out to differ from the result then accepted is
//     found wrong there like any other.
// Demoting rather than re-running every result the provider ever agreed
// with: a quorum it shared with enough other providers is still a quorum.
struct DemoteDecision {
  bool changed = false;
  bool reopen = false;
  std::vector<VoteWrite> votes;
  std::vector<std::string> exclude_providers;  // reopen: every provider that ran it
  std::string line;                            // v1::Task.verification
};
DemoteDecision DecideDemote(const VerificationSpec& spec, const std::string& caught, const std::string& caught_on,
                            const std::vector<RunRecord>& runs);

}  // namespace idlegrid::verify
