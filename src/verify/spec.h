#pragma once
// A job's verification as plain values: which mode, how results
// are compared, and the operator's policy that fills in what the job leaves
// unset. docs/verification.md is the user-facing reference.
//
// Everything in src/verify is pure: plain values in, plain values out, no
// clock, no randomness of its own (draws come in as parameters), no I/O.
// Thread-safe because it holds no state.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::verify {

enum class Mode { kNone, kReplicate, kAdaptive, kChallenge };

// "none", "replicate", "adaptive", "challenge".
const char* ModeName(Mode mode);
std::optional<Mode> ParseMode(const std::string& name);

enum class TableFormat { kJson, kCsv };

// One output compared by its numbers rather than its bytes (tolerance.h).
struct ToleranceRule {
  std::string output;  // path under the output directory
  TableFormat format = TableFormat::kJson;
  std::vector<std::string> fields;  // json: dotted paths; csv: column names; empty: every number
  double relative = 0;
  double absolute = 0;
};

// How two runs' outputs are compared. Outputs without a tolerance rule are
// compared by sha256 digest.
struct CompareSpec {
  std::vector<std::string> outputs;  // paths compared; empty: every output of either run
  std::vector<ToleranceRule> tolerances;
};

// A job's verification with every default filled in.
struct VerificationSpec {
  Mode mode = Mode::kNone;
  uint32_t replicas = 1;      // runs a result needs before it can be accepted
  uint32_t quorum = 1;        // matching results, from distinct providers, that decide
  uint32_t max_replicas = 1;  // runs allowed in all (tie-breakers included)
  uint32_t margin = 1;        // how far a split's winner must lead (quorum.h)
  CompareSpec compare;
  uint32_t trust_threshold = 0;  // adaptive
  // adaptive: the least share of a trusted provider's results replicated;
  // challenge: the share of results replicated to add known answers.
  double audit_floor = 0;
  // Challenge: known-answer checks per result taken on its run's word;
  // adaptive: the same after a trusted provider's lone result.
  double challenge_rate = 0;
};

// The operator's verification policy: the default for jobs that say nothing
// and the parameters a job may leave at 0. The figures are tuned by
// bench/verification (docs/PERFORMANCE.md, "Verification").
struct VerificationPolicy {
  Mode default_mode = Mode::kAdaptive;
  uint32_t replicas = 2;
  // Tie-breakers beyond `replicas`: a 1-1 split needs two more runs to be
  // settled by a lead of two, and four leave room for a colluder among them.
  uint32_t extra_runs = 4;
  // How far a split's winner must lead (quorum.h, ReplicationRule::margin):
  // with 1, a colluding group outvotes an honest provider whenever the one
  // tie-breaker lands in it; bench/verification measured 2 cutting the
  // overhead from 131% to 46% against 20% colluders (docs/PERFORMANCE.md).
  uint32_t dispute_margin = 2;
  // An honest newcomer is trusted (no longer always replicated) after this
  // many consecutive verified results (issue 13 asks for at most 10).
  uint32_t trust_threshold = 10;
  // A trusted provider's result is replicated with probability
  // max(1/consecutive_valid, audit_floor).
  double audit_floor = 0.12;
  double challenge_rate = 0.05;
  // Reliability is per mille (1000: never caught); a provider proven wrong
  // loses this much of it (caught.h).
  uint32_t reliability_penalty = 250;
  // The most of the verified work in flight that accounts not yet proven
  // for its image hold together, while a proven one could take it
  // (standing.h; the scheduler's standing stage). 1: no cap.
  double unproven_share = 0.02;
  // Adaptive: the share of results accepted on a trusted provider's word
  // after which that provider gets a known-answer check (challenge.h); 0:
  // none. Challenge mode uses challenge_rate.
  double known_answer_rate = 0.05;
};

// A rule a Verification breaks, named as proto field and manifest field
// (relative to JobSpec: "verification.quorum").
struct Violation {
  std::string field;
  std::string manifest_field;
  std::string description;
};

// The first rule `v` breaks, or nullopt. An unset message (mode "") is valid.
std::optional<Violation> FindViolation(const v1::Verification& v);

// `v` with the policy's defaults filled in. InvalidArgument when `v` breaks a
// rule (the FindViolation description, prefixed with its field).
Result<VerificationSpec> Resolve(const v1::Verification& v, const VerificationPolicy& policy);

// The strict majority of `replicas`: 2 of 2, 2 of 3, 3 of 4.
inline uint32_t MajorityOf(uint32_t replicas) { return replicas / 2 + 1; }

}  // namespace idlegrid::verify
