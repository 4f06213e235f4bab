#pragma once
// How an attempt ended, as far as money is concerned: the one reading of an
// attempt's state, failure reason and verdict that the ledger (charges),
// earnings and `results` share. Which of these ends is charged is the
// ledger's rule (ledger::IsCharged); how long a run is billed for is
// ledger::BilledRunMs. Pure.
#include "idlegrid/v1/idlegrid.pb.h"
#include "ledger/plans.h"

namespace idlegrid::jobs {

// kVerified: succeeded and accepted (verification `none`, "agreed", or
// "unverified" when an adaptive audit was not drawn); kUnverified: still
// running, or succeeded and awaiting its verdict; kFailedVerification: its
// result was judged wrong; kJobFailure: the job's own fault (its exit code,
// run timeout, memory or disk limit); kPlatformFailure: everything else
// (node lost, refused, cancelled, handed back, the platform's errors).
ledger::AttemptEnd LedgerEnd(const v1::Attempt& attempt);

}  // namespace idlegrid::jobs
