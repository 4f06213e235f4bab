#pragma once
// Challenge (known-answer) tasks: work whose correct outputs the operator
// already holds, mixed into a provider's stream at a policy rate and shaped
// like the job's real tasks, so a provider cannot tell them apart. Unlike a
// replica, a colluding group cannot agree its way past one.
#include <string>
#include <vector>

#include "verify/compare.h"

namespace idlegrid::verify {

// Whether the next task offered to a provider should be a challenge.
// `uniform_draw` is uniform in [0, 1); a rate of 0 never challenges.
inline bool ShouldChallenge(double rate, double uniform_draw) { return uniform_draw < rate; }

// Challenge mode's rule for a lone result (DecideTask, and the cheating
// simulator): replicated while the job has no known answer yet, while its
// provider is on probation (caught, nothing verified since), and otherwise
// when `uniform_draw` < `supply_rate`. Each replicated task becomes a known
// answer, so the pool that checks draw from grows with the job; with only
// the job's first task in it, each provider was checked on that one task
// alone, which a colluding group that fakes a share of tasks mostly passes
// (docs/PERFORMANCE.md, "Verification").
inline bool ReplicateUnderChallenge(bool known_answer, bool on_probation, double supply_rate, double uniform_draw) {
  return !known_answer || on_probation || uniform_draw < supply_rate;
}

struct ChallengeVerdict {
  bool passed = false;
  std::string reason;  // how the answer differed, or why it could not be compared
};

// Judges a challenge run: it passes when its outputs match the known answer
// under `compare`; a malformed answer fails. InvalidArgument when the known
// answer itself cannot be compared: the operator's error, not the provider's.
Result<ChallengeVerdict> JudgeChallenge(const CompareSpec& compare, const std::vector<OutputFile>& known_answer,
                                        const std::vector<OutputFile>& answer);

}  // namespace idlegrid::verify
