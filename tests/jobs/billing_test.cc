// How an attempt ended for the ledger (jobs/billing.h), and how long a run is
// billed for (ledger::BilledRunMs): one reading shared by charges, receipts,
// earnings and cost caps.
#include "jobs/billing.h"

#include <gtest/gtest.h>

#include <vector>

#include "jobs/lease.h"
#include "jobs/task_state.h"

namespace idlegrid::jobs {
namespace {

using ledger::AttemptEnd;

v1::Attempt Attempt(v1::TaskState state, v1::FailureReason reason = v1::FAILURE_REASON_UNSPECIFIED,
                    const char* vote = "") {
  v1::Attempt a;
  a.set_state(state);
  a.set_failure_reason(reason);
  a.set_vote(vote);
  return a;
}

TEST(LedgerEndTest, EachWayAnAttemptEndsAndWhetherItIsCharged) {
  struct Case {
    const char* name;
    v1::Attempt attempt;
    AttemptEnd want;
  };
  const std::vector<Case> cases = {
      {"succeeded, not verified", Attempt(v1::SUCCEEDED), AttemptEnd::kVerified},
      {"agreed", Attempt(v1::SUCCEEDED, {}, "agreed"), AttemptEnd::kVerified},
      {"audit not drawn", Attempt(v1::SUCCEEDED, {}, "unverified"), AttemptEnd::kVerified},
      {"awaiting its verdict", Attempt(v1::SUCCEEDED, {}, "pending"), AttemptEnd::kUnverified},
      {"judged wrong", Attempt(v1::SUCCEEDED, {}, "wrong"), AttemptEnd::kFailedVerification},
      {"verification failed", Attempt(v1::FAILED, v1::VERIFICATION_FAILED), AttemptEnd::kFailedVerification},
      {"exit code", Attempt(v1::FAILED, v1::NONZERO_EXIT), AttemptEnd::kJobFailure},
      {"run timeout", Attempt(v1::FAILED, v1::RUN_TIMEOUT), AttemptEnd::kJobFailure},
      {"out of memory", Attempt(v1::FAILED, v1::OUT_OF_MEMORY), AttemptEnd::kJobFailure},
      {"disk limit", Attempt(v1::FAILED, v1::DISK_LIMIT), AttemptEnd::kJobFailure},
      {"node lost", Attempt(v1::FAILED, v1::NODE_LOST), AttemptEnd::kPlatformFailure},
      {"platform", Attempt(v1::FAILED, v1::PLATFORM_FAILURE), AttemptEnd::kPlatformFailure},
      {"refused busy", Attempt(v1::FAILED, v1::NODE_BUSY), AttemptEnd::kPlatformFailure},
      {"handed back", Attempt(v1::FAILED, v1::HANDED_BACK), AttemptEnd::kPlatformFailure},
      {"cancelled", Attempt(v1::CANCELLED, v1::USER_CANCEL), AttemptEnd::kPlatformFailure},
      {"lost", Attempt(v1::LOST, v1::NODE_LOST), AttemptEnd::kPlatformFailure},
      {"running", Attempt(v1::RUNNING), AttemptEnd::kUnverified},
      {"assigned", Attempt(v1::ASSIGNED), AttemptEnd::kUnverified},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(LedgerEnd(c.attempt), c.want);
    // The result the CLI fetches and earnings count is the one the ledger charges.
    EXPECT_EQ(IsAcceptedResult(c.attempt), ledger::IsCharged(c.want));
  }
}

TEST(BilledRunMsTest, FinishedLessStartedFlooredAndZeroWhenNeverStarted) {
  EXPECT_EQ(ledger::BilledRunMs(1000, 4500), 3500);
  EXPECT_EQ(ledger::BilledRunMs(0, 4500), 0) << "never started";
  EXPECT_EQ(ledger::BilledRunMs(4500, 1000), 0) << "a clock that went back bills nothing, never a refund";
  EXPECT_EQ(ledger::BilledRunMs(1000, 0), 0) << "not finished";
}

TEST(BilledRunMsTest, AnAttemptsCostIsItsPriceTimesTheBilledTime) {
  v1::Attempt a = Attempt(v1::SUCCEEDED);
  a.mutable_placement()->set_price_per_hour(3.6);
  a.set_started_at_ms(10'000);
  a.set_finished_at_ms(20'000);
  EXPECT_DOUBLE_EQ(AttemptCost(a, 99'000), 0.01);
  a.set_finished_at_ms(5'000);
  EXPECT_DOUBLE_EQ(AttemptCost(a, 99'000), 0);
  v1::Attempt running = Attempt(v1::RUNNING);
  running.mutable_placement()->set_price_per_hour(3.6);
  running.set_started_at_ms(10'000);
  EXPECT_DOUBLE_EQ(AttemptCost(running, 30'000), 0.02) << "a running attempt costs up to now";
}

}  // namespace
}  // namespace idlegrid::jobs
