#include "verify/challenge.h"

namespace idlegrid::verify {

Result<ChallengeVerdict> JudgeChallenge(const CompareSpec& compare, const std::vector<OutputFile>& known_answer,
                                        const std::vector<OutputFile>& answer) {
  Status known = CheckComparable(compare, known_answer);
  if (!known.ok()) return known.WithContext("known answer");
  Status comparable = CheckComparable(compare, answer);
  if (!comparable.ok()) return ChallengeVerdict{false, "malformed answer: " + comparable.message()};
  IG_ASSIGN_OR_RETURN(Comparison c, CompareOutputs(compare, known_answer, answer));
  return ChallengeVerdict{c.match, c.difference};
}

}  // namespace idlegrid::verify
