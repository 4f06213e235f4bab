#include "verify/failure.h"

namespace idlegrid::verify {

const char* FailureName(VerificationFailure failure) {
  switch (failure) {
    case VerificationFailure::kOutvoted:
      return "outvoted";
    case VerificationFailure::kNoQuorum:
      return "no_quorum";
    case VerificationFailure::kChallengeFailed:
      return "challenge_failed";
    case VerificationFailure::kMalformedOutput:
      return "malformed_output";
  }
  return "";
}

bool ProvesProviderWrong(VerificationFailure failure) { return failure != VerificationFailure::kNoQuorum; }

}  // namespace idlegrid::verify
