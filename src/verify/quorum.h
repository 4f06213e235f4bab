#pragma once
// The quorum decision over a task's replica results: accept one result,
// start more runs, wait, or fail verification. Votes count per provider
// ACCOUNT: two nodes of one provider are one opinion, since one owner can
// make all its machines lie alike.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "verify/compare.h"
#include "verify/failure.h"

namespace idlegrid::verify {

// A run that finished and reported outputs (runs that failed are retried by
// the coordinator's usual rules and never vote).
struct ReplicaResult {
  std::string attempt_id;
  std::string provider;  // the provider account that owns the node
  std::string node_id;
  std::vector<OutputFile> outputs;
};

struct ReplicationRule {
  uint32_t replicas = 2;      // runs started before any decision
  uint32_t quorum = 2;        // matching results from distinct providers that accept
  uint32_t max_replicas = 4;  // runs allowed in all
  // How far the winning group must lead the runner-up. 1: a plain quorum.
  // 2: a split is settled only by a lead of two, so a colluding group that
  // wins a tie-break run by chance (its share of providers) does not outvote
  // an honest result; it must win two more runs than the honest side.
  uint32_t margin = 1;
};

enum class Verdict {
  kAccept,        // `agreeing` hold the result; `wrong` are proven wrong
  kNeedMoreRuns,  // start `more_runs` runs, each on a provider not yet used
  kWait,          // runs in flight can still decide it
  kFail,          // no quorum is possible within max_replicas (VerificationFailure::kNoQuorum)
};

const char* VerdictName(Verdict verdict);

struct Vote {
  std::string attempt_id;
  std::string provider;
  VerificationFailure failure;  // kOutvoted or kMalformedOutput
  std::string reason;           // how it differed, or why it could not be compared
};

// Which rule accepted a result.
enum class SettledBy {
  kQuorum,    // `quorum` matching results leading every other group by `margin`
  kMajority,  // no provider was left to reach the margin: `quorum` matching results that are a
              // strict majority of the distinct providers that voted (DecideQuorum)
};

struct QuorumDecision {
  Verdict verdict = Verdict::kWait;
  SettledBy settled_by = SettledBy::kQuorum;  // kAccept
  uint32_t more_runs = 0;
  std::vector<std::string> agreeing;  // attempt ids, in arrival order
  std::vector<Vote> wrong;            // kAccept: results that lost the vote or were malformed
  std::vector<std::string> ignored;   // a provider's second and later results: not counted
  std::string reason;                 // one line for the user
};

// Decides over `results` (in arrival order). `runs_started` counts every run
// started for the task so far (those in `results`, those still running, and
// those that failed); `runs_running` those still running. Results are grouped
// by CompareOutputs against each group's first member; a group of `quorum`
// distinct providers that leads every other by `margin` wins.
//
// `fresh_providers`: how many provider accounts that have not run the task
// could still run it (nullopt: unbounded). When the runs still possible
// (those running, plus those not started up to max_replicas and to the fresh
// providers) cannot reach the margin, the task settles without waiting: by
// the majority rule (kMajority) when the largest group has `quorum` members
// and is a strict majority of the distinct providers that voted (malformed
// results count against it), or by the runs that could still make it one;
// else kFail, "no quorum", with every group's size. So providers that
// disagree can never hold a task open without bound (Byzantine providers
// stall nothing), and an honest quorum still wins over a lone liar.
QuorumDecision DecideQuorum(const ReplicationRule& rule, const CompareSpec& compare,
                            const std::vector<ReplicaResult>& results, uint32_t runs_started, uint32_t runs_running,
                            std::optional<uint32_t> fresh_providers = std::nullopt);

}  // namespace idlegrid::verify
