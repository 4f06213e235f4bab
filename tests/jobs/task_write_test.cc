// Task moves the store makes on its own account (jobs/task_write.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jobs/task_write.h"

namespace idlegrid::jobs {
namespace {

constexpr int64_t kNow = 1'000'000;

TEST(PlanTaskMoveTest, StayingPutWritesNothing) {
  auto w = PlanTaskMove(v1::RUNNING, {v1::RUNNING, v1::NONZERO_EXIT, "x"}, kNow);
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(w->has_value());
}

TEST(PlanTaskMoveTest, IllegalMoveIsFailedPreconditionNamingBothStates) {
  auto w = PlanTaskMove(v1::SUCCEEDED, {v1::QUEUED}, kNow);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(w.status().message().find("succeeded -> queued"), std::string::npos) << w.status().message();
}

TEST(PlanTaskMoveTest, OnlyReenteringTheQueueRestartsTheQueueClock) {
  auto queued = PlanTaskMove(v1::RUNNING, {v1::QUEUED, v1::FAILURE_REASON_UNSPECIFIED, "retry"}, kNow);
  ASSERT_TRUE(queued.ok() && queued->has_value());
  EXPECT_EQ((*queued)->queued_ms, kNow);
  EXPECT_EQ((*queued)->updated_ms, kNow);
  EXPECT_EQ((*queued)->message, "retry");
  auto failed = PlanTaskMove(v1::RUNNING, {v1::FAILED, v1::NONZERO_EXIT, "boom"}, kNow);
  ASSERT_TRUE(failed.ok() && failed->has_value());
  EXPECT_FALSE((*failed)->queued_ms.has_value());
  EXPECT_EQ((*failed)->state, v1::FAILED);
  EXPECT_EQ((*failed)->reason, v1::NONZERO_EXIT);
}

TEST(CancelTest, EveryUnfinishedStateIsCancellable) {
  EXPECT_EQ(CancellableStates(), (std::vector<v1::TaskState>{v1::QUEUED, v1::ASSIGNED, v1::RUNNING, v1::LOST}));
  for (v1::TaskState s : CancellableStates()) {
    auto w = PlanTaskMove(s, CancelMove(), kNow);
    ASSERT_TRUE(w.ok() && w->has_value()) << s;
    EXPECT_EQ((*w)->reason, v1::USER_CANCEL);
  }
}

TEST(ResolveLostTest, RetryRequeuesAndAbandonFailsAsNodeLost) {
  auto retry = PlanTaskMove(v1::LOST, ResolveLostMove(true), kNow);
  ASSERT_TRUE(retry.ok() && retry->has_value());
  EXPECT_EQ((*retry)->state, v1::QUEUED);
  EXPECT_EQ((*retry)->queued_ms, kNow);
  EXPECT_EQ((*retry)->message, "");
  auto abandon = PlanTaskMove(v1::LOST, ResolveLostMove(false), kNow);
  ASSERT_TRUE(abandon.ok() && abandon->has_value());
  EXPECT_EQ((*abandon)->state, v1::FAILED);
  EXPECT_EQ((*abandon)->reason, v1::NODE_LOST);
  EXPECT_NE((*abandon)->message.find("abandoned"), std::string::npos);
}

TEST(QueueTimeoutTest, ExpiresOnlyStrictlyAfterAPositiveTimeout) {
  EXPECT_FALSE(QueueTimedOut(0, 0, kNow));  // no timeout
  EXPECT_FALSE(QueueTimedOut(kNow - 5000, 5000, kNow));
  EXPECT_TRUE(QueueTimedOut(kNow - 5001, 5000, kNow));
  EXPECT_EQ(QueueTimeoutMove().reason, v1::QUEUE_TIMEOUT);
  EXPECT_TRUE(PlanTaskMove(v1::QUEUED, QueueTimeoutMove(), kNow).ok());
}

}  // namespace
}  // namespace idlegrid::jobs
