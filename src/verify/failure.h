#pragma once
// A failed verification is its own failure class (v1::VERIFICATION_FAILED),
// never a job failure (NONZERO_EXIT) nor a platform failure: the job's code
// ran, but a result could not be trusted.
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::verify {

enum class VerificationFailure {
  kOutvoted,         // this run's result disagreed with the quorum's: wrong
  kNoQuorum,         // the runs allowed ended without enough matching results
  kChallengeFailed,  // a known-answer task came back with another answer: wrong
  kMalformedOutput,  // an output the comparison needs is missing or unparsable: wrong
};

// "outvoted", "no_quorum", "challenge_failed", "malformed_output".
const char* FailureName(VerificationFailure failure);

// Whether the failure proves the provider that ran it wrong (and so whether
// caught.h's penalties apply). kNoQuorum proves nobody wrong.
bool ProvesProviderWrong(VerificationFailure failure);

inline v1::FailureReason FailureReasonOf(VerificationFailure) { return v1::VERIFICATION_FAILED; }

}  // namespace idlegrid::verify
