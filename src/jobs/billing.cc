#include "jobs/billing.h"

namespace idlegrid::jobs {

ledger::AttemptEnd LedgerEnd(const v1::Attempt& a) {
  using ledger::AttemptEnd;
  switch (a.state()) {
    case v1::SUCCEEDED:
      if (a.vote().empty() || a.vote() == "agreed" || a.vote() == "unverified") return AttemptEnd::kVerified;
      return a.vote() == "wrong" ? AttemptEnd::kFailedVerification : AttemptEnd::kUnverified;
    case v1::FAILED:
      switch (a.failure_reason()) {
        case v1::NONZERO_EXIT:
        case v1::RUN_TIMEOUT:
        case v1::OUT_OF_MEMORY:
        case v1::DISK_LIMIT:
          return AttemptEnd::kJobFailure;
        case v1::VERIFICATION_FAILED:
          return AttemptEnd::kFailedVerification;
        default:
          return AttemptEnd::kPlatformFailure;
      }
    case v1::CANCELLED:
    case v1::LOST:
      return AttemptEnd::kPlatformFailure;
    default:
      return AttemptEnd::kUnverified;  // not ended yet
  }
}

}  // namespace idlegrid::jobs
