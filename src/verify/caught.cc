#include "verify/caught.h"

#include <algorithm>

namespace idlegrid::verify {

CaughtOutcome OnCaught(const std::string& provider, uint32_t reliability, uint32_t caught_before,
                       const VerificationPolicy& policy, Backtrack backtrack,
                       const std::vector<AcceptedResult>& history) {
  CaughtOutcome out;
  out.reliability_lost = std::min(reliability, policy.reliability_penalty);
  out.reliability = reliability - out.reliability_lost;

  size_t from = 0;
  if (backtrack == Backtrack::kEscalating) {
    backtrack = caught_before == 0 ? Backtrack::kSinceLastVerified : Backtrack::kWholeWindow;
  }
  if (backtrack == Backtrack::kSinceLastVerified) {
    for (size_t i = history.size(); i-- > 0;) {
      const AcceptedResult& r = history[i];
      if (r.provider == provider && r.check != Check::kUnverified) {
        from = i + 1;
        break;
      }
    }
  }
  for (size_t i = from; i < history.size(); ++i) {
    const AcceptedResult& r = history[i];
    if (r.provider == provider && r.check == Check::kUnverified) out.reverify.push_back(r.result_id);
  }
  // A quorum the provider was part of rests on the others' word alone now.
  for (const AcceptedResult& r : history) {
    if (r.check != Check::kReplicated) continue;
    const bool voted =
        r.provider == provider || std::find(r.vouched_by.begin(), r.vouched_by.end(), provider) != r.vouched_by.end();
    if (voted) out.demote.push_back(r.result_id);
  }
  return out;
}

uint32_t ReliabilityAfterValid(uint32_t reliability) { return std::min<uint32_t>(reliability + 1, 1000); }

}  // namespace idlegrid::verify
