// What the store writes for an attempt's outcome (jobs/outcome_plan.h), on
// plain values: every branch the two store backends used to restate.
#include <gtest/gtest.h>

#include <string>

#include "jobs/outcome_plan.h"

namespace idlegrid::jobs {
namespace {

constexpr int64_t kNow = 1'000'000;

AttemptRow Row(v1::TaskState attempt, v1::TaskState task, uint32_t used = 1, uint32_t retries = 0,
               bool idempotent = false, int64_t accepted_ms = 0) {
  AttemptRow row;
  row.ctx.attempt_state = attempt;
  row.ctx.task_state = task;
  row.ctx.attempts_used = used;
  row.ctx.retries = retries;
  row.ctx.idempotent = idempotent;
  row.node_id = "node-a";
  row.accepted_ms = accepted_ms;
  return row;
}

v1::ReportAttemptRequest Report(v1::AttemptEvent event, int32_t exit_code = 0,
                                v1::FailureReason reason = v1::FAILURE_REASON_UNSPECIFIED) {
  v1::ReportAttemptRequest r;
  r.set_attempt_id("a1");
  r.set_event(event);
  r.set_exit_code(exit_code);
  r.set_failure_reason(reason);
  return r;
}

OutcomePlan Plan(const AttemptRow& row, const v1::ReportAttemptRequest& report) {
  auto plan = PlanReport(row, report, kNow);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return plan.ok() ? std::move(plan).value() : OutcomePlan{};
}

bool WritesNothing(const OutcomePlan& p) {
  return !p.accepted_ms && !p.attempt && !p.task && !p.task_not_before_ms && !p.exclude_node && !p.record_checkpoint;
}

TEST(OutcomePlanTest, FirstStartRunsAttemptAndTaskAndAcknowledges) {
  OutcomePlan p = Plan(Row(v1::ASSIGNED, v1::ASSIGNED), Report(v1::STARTED));
  ASSERT_TRUE(p.attempt && p.task);
  EXPECT_EQ(p.attempt->state, v1::RUNNING);
  EXPECT_EQ(p.attempt->started_ms, kNow);
  EXPECT_FALSE(p.attempt->finished_ms.has_value());
  EXPECT_FALSE(p.attempt->exit_code.has_value());
  EXPECT_FALSE(p.attempt->outputs.has_value());
  EXPECT_EQ(p.task->state, v1::RUNNING);
  EXPECT_FALSE(p.task->queued_ms.has_value());
  EXPECT_EQ(p.accepted_ms, kNow);  // its ACCEPTED was lost
  EXPECT_FALSE(p.task_not_before_ms || p.exclude_node || p.record_checkpoint);
}

TEST(OutcomePlanTest, AcknowledgementIsRecordedOnlyOnce) {
  OutcomePlan first = Plan(Row(v1::ASSIGNED, v1::ASSIGNED), Report(v1::ACCEPTED));
  EXPECT_EQ(first.accepted_ms, kNow);
  EXPECT_FALSE(first.attempt || first.task);
  OutcomePlan again = Plan(Row(v1::ASSIGNED, v1::ASSIGNED, 1, 0, false, 5), Report(v1::ACCEPTED));
  EXPECT_FALSE(again.accepted_ms.has_value());
  OutcomePlan started = Plan(Row(v1::ASSIGNED, v1::ASSIGNED, 1, 0, false, 5), Report(v1::STARTED));
  EXPECT_FALSE(started.accepted_ms.has_value());
}

TEST(OutcomePlanTest, DuplicateStartWritesNothing) {
  OutcomePlan p = Plan(Row(v1::RUNNING, v1::RUNNING, 1, 0, false, 5), Report(v1::STARTED));
  EXPECT_TRUE(WritesNothing(p));
}

TEST(OutcomePlanTest, ExitWithoutAStartImpliesOneAndRecordsTheExit) {
  v1::ReportAttemptRequest exit = Report(v1::EXITED);
  exit.set_runtime("runc");
  exit.add_outputs()->set_path("out.txt");
  OutcomePlan p = Plan(Row(v1::ASSIGNED, v1::ASSIGNED), exit);
  EXPECT_TRUE(p.outcome.implied_start);
  ASSERT_TRUE(p.attempt && p.task);
  EXPECT_EQ(p.attempt->state, v1::SUCCEEDED);
  EXPECT_EQ(p.attempt->started_ms, kNow);
  EXPECT_EQ(p.attempt->finished_ms, kNow);
  EXPECT_EQ(p.attempt->exit_code, 0);
  ASSERT_TRUE(p.attempt->outputs.has_value());
  EXPECT_EQ(p.attempt->outputs->outputs(0).path(), "out.txt");
  EXPECT_EQ(p.attempt->runtime, "runc");
  EXPECT_EQ(p.task->state, v1::SUCCEEDED);
  EXPECT_FALSE(p.accepted_ms.has_value());  // an exit is no acknowledgement
}

TEST(OutcomePlanTest, FailedExitOfARunningAttemptKeepsItsStartTime) {
  OutcomePlan p = Plan(Row(v1::RUNNING, v1::RUNNING), Report(v1::EXITED, 3));
  ASSERT_TRUE(p.attempt && p.task);
  EXPECT_EQ(p.attempt->state, v1::FAILED);
  EXPECT_EQ(p.attempt->reason, v1::NONZERO_EXIT);
  EXPECT_FALSE(p.attempt->started_ms.has_value());
  EXPECT_EQ(p.attempt->exit_code, 3);
  EXPECT_FALSE(p.attempt->runtime.has_value());
  EXPECT_EQ(p.task->state, v1::FAILED);
  EXPECT_EQ(p.task->reason, v1::NONZERO_EXIT);
  EXPECT_FALSE(p.task_not_before_ms || p.exclude_node);
}

// The provenance is the start's: recorded by the report that starts the
// attempt (STARTED, or an exit whose STARTED was lost), never rewritten.
TEST(OutcomePlanTest, TheProvenanceIsRecordedWithTheStartOnly) {
  v1::Provenance record;
  record.set_kernel_release("6.1.0-18-amd64");
  auto with = [&](v1::ReportAttemptRequest r) {
    *r.mutable_provenance() = record;
    return r;
  };
  OutcomePlan started = Plan(Row(v1::ASSIGNED, v1::ASSIGNED), with(Report(v1::STARTED)));
  ASSERT_TRUE(started.attempt && started.attempt->provenance);
  EXPECT_EQ(started.attempt->provenance->kernel_release(), "6.1.0-18-amd64");
  OutcomePlan implied = Plan(Row(v1::ASSIGNED, v1::ASSIGNED), with(Report(v1::EXITED)));
  ASSERT_TRUE(implied.attempt && implied.attempt->provenance);
  EXPECT_EQ(implied.attempt->provenance->kernel_release(), "6.1.0-18-amd64");
  OutcomePlan exited = Plan(Row(v1::RUNNING, v1::RUNNING, 1, 0, false, 5), with(Report(v1::EXITED)));
  ASSERT_TRUE(exited.attempt);
  EXPECT_FALSE(exited.attempt->provenance) << "an exit after STARTED keeps the start's record";
  OutcomePlan failed = Plan(Row(v1::RUNNING, v1::RUNNING, 1, 0, false, 5), with(Report(v1::EXITED, 3)));
  ASSERT_TRUE(failed.attempt);
  EXPECT_FALSE(failed.attempt->provenance);
  OutcomePlan bare = Plan(Row(v1::ASSIGNED, v1::ASSIGNED), Report(v1::STARTED));
  ASSERT_TRUE(bare.attempt);
  EXPECT_FALSE(bare.attempt->provenance) << "a report without one leaves the column as it is";
}

TEST(OutcomePlanTest, ImpliedStartThenRetryEndsQueuedWithBackoff) {
  OutcomePlan p = Plan(Row(v1::ASSIGNED, v1::ASSIGNED, 1, 2), Report(v1::EXITED, 1));
  ASSERT_TRUE(p.attempt && p.task);
  EXPECT_EQ(p.attempt->started_ms, kNow);
  EXPECT_EQ(p.task->state, v1::QUEUED);  // not the implied RUNNING
  EXPECT_EQ(p.task->reason, v1::FAILURE_REASON_UNSPECIFIED);
  EXPECT_EQ(p.task->queued_ms, kNow);
  EXPECT_EQ(p.task_not_before_ms, kNow + 1000);
  EXPECT_FALSE(p.exclude_node.has_value());
}

TEST(OutcomePlanTest, RetryBackoffDoublesAndIsCapped) {
  struct Case {
    uint32_t used;
    int64_t wait_ms;
  };
  for (const Case& c : {Case{1, 1000}, Case{2, 2000}, Case{3, 4000}, Case{7, 60000}, Case{20, 60000}}) {
    OutcomePlan p = Plan(Row(v1::RUNNING, v1::RUNNING, c.used, 100), Report(v1::EXITED, 1));
    EXPECT_EQ(p.task_not_before_ms, kNow + c.wait_ms) << "attempt " << c.used;
  }
}

TEST(OutcomePlanTest, PlatformFailureExcludesTheNode) {
  OutcomePlan p = Plan(Row(v1::RUNNING, v1::RUNNING, 1, 1), Report(v1::ERRORED));
  ASSERT_TRUE(p.attempt && p.task);
  EXPECT_EQ(p.attempt->reason, v1::PLATFORM_FAILURE);
  EXPECT_EQ(p.task->state, v1::QUEUED);
  EXPECT_EQ(p.exclude_node, "node-a");
  EXPECT_EQ(p.task_not_before_ms, kNow + 1000);
}

TEST(OutcomePlanTest, RejectionRequeuesAtOnceAndExcludesTheNode) {
  OutcomePlan p = Plan(Row(v1::ASSIGNED, v1::ASSIGNED), Report(v1::REJECTED));
  ASSERT_TRUE(p.attempt && p.task);
  EXPECT_EQ(p.attempt->state, v1::FAILED);
  EXPECT_EQ(p.attempt->reason, v1::POLICY_REJECTED);
  EXPECT_FALSE(p.attempt->started_ms.has_value());
  EXPECT_EQ(p.attempt->finished_ms, kNow);
  EXPECT_EQ(p.task->state, v1::QUEUED);
  EXPECT_EQ(p.task->queued_ms, kNow);
  EXPECT_EQ(p.exclude_node, "node-a");
  EXPECT_FALSE(p.task_not_before_ms.has_value());
}

TEST(OutcomePlanTest, BusyNodeRequeuesAfterAPauseWithoutExclusion) {
  OutcomePlan p = Plan(Row(v1::ASSIGNED, v1::ASSIGNED), Report(v1::REJECTED, 0, v1::NODE_BUSY));
  ASSERT_TRUE(p.task);
  EXPECT_EQ(p.task->state, v1::QUEUED);
  EXPECT_EQ(p.task_not_before_ms, kNow + kBusyRetryMs);
  EXPECT_FALSE(p.exclude_node.has_value());
}

TEST(OutcomePlanTest, StoppedByTheNodeIsHandedBack) {
  OutcomePlan p = Plan(Row(v1::RUNNING, v1::RUNNING), Report(v1::STOPPED));
  ASSERT_TRUE(p.attempt && p.task);
  EXPECT_EQ(p.attempt->reason, v1::HANDED_BACK);
  EXPECT_EQ(p.task->state, v1::QUEUED);
  EXPECT_FALSE(p.exclude_node.has_value()) << "handing back is the owner's doing, not the node's unfitness";
}

TEST(OutcomePlanTest, CheckpointFromAssignedStartsTheAttempt) {
  OutcomePlan p = Plan(Row(v1::ASSIGNED, v1::ASSIGNED), Report(v1::CHECKPOINTED));
  EXPECT_TRUE(p.record_checkpoint);
  ASSERT_TRUE(p.attempt && p.task);
  EXPECT_EQ(p.attempt->state, v1::RUNNING);
  EXPECT_EQ(p.attempt->started_ms, kNow);
  EXPECT_EQ(p.task->state, v1::RUNNING);
  OutcomePlan running = Plan(Row(v1::RUNNING, v1::RUNNING), Report(v1::CHECKPOINTED));
  EXPECT_TRUE(running.record_checkpoint);
  EXPECT_FALSE(running.attempt || running.task);
}

TEST(OutcomePlanTest, StopOfACancelledTaskEndsTheAttemptAndLeavesTheTask) {
  OutcomePlan p = Plan(Row(v1::RUNNING, v1::CANCELLED), Report(v1::STOPPED));
  ASSERT_TRUE(p.attempt);
  EXPECT_EQ(p.attempt->state, v1::CANCELLED);
  EXPECT_EQ(p.attempt->reason, v1::USER_CANCEL);
  EXPECT_EQ(p.attempt->finished_ms, kNow);
  EXPECT_FALSE(p.task.has_value());  // already cancelled: its message stands
  EXPECT_FALSE(p.record_checkpoint);
  // The confirmation repeated: the time the cancel happened is kept.
  OutcomePlan again = Plan(Row(v1::CANCELLED, v1::CANCELLED), Report(v1::STOPPED));
  EXPECT_TRUE(WritesNothing(again));
}

TEST(OutcomePlanTest, RefusedReportsPlanNothing) {
  struct Case {
    AttemptRow row;
    v1::AttemptEvent event;
  };
  for (const Case& c :
       {Case{Row(v1::FAILED, v1::FAILED), v1::EXITED}, Case{Row(v1::SUCCEEDED, v1::SUCCEEDED), v1::STOPPED},
        Case{Row(v1::RUNNING, v1::RUNNING), v1::ACCEPTED}, Case{Row(v1::RUNNING, v1::RUNNING), v1::REJECTED},
        // A task that is not where its active attempt says: its move is refused.
        Case{Row(v1::ASSIGNED, v1::QUEUED), v1::STARTED}, Case{Row(v1::ASSIGNED, v1::SUCCEEDED), v1::EXITED}}) {
    auto p = PlanReport(c.row, Report(c.event), kNow);
    ASSERT_FALSE(p.ok()) << v1::AttemptEvent_Name(c.event);
    EXPECT_EQ(p.status().code(), Code::kFailedPrecondition) << p.status().ToString();
  }
}

TEST(OutcomePlanTest, LostNodeOfANonIdempotentTaskLeavesItLost) {
  auto p = PlanNodeLost(Row(v1::RUNNING, v1::RUNNING, 1, 3), kNow);
  ASSERT_TRUE(p.ok() && p->attempt && p->task);
  EXPECT_EQ(p->attempt->state, v1::FAILED);
  EXPECT_EQ(p->attempt->reason, v1::NODE_LOST);
  EXPECT_EQ(p->attempt->finished_ms, kNow);
  EXPECT_FALSE(p->attempt->exit_code || p->attempt->outputs || p->attempt->runtime || p->attempt->started_ms);
  EXPECT_EQ(p->task->state, v1::LOST);
  EXPECT_EQ(p->task->reason, v1::NODE_LOST);
  EXPECT_NE(p->task->message.find("idlegrid retry"), std::string::npos);
  EXPECT_EQ(p->exclude_node, "node-a");
  EXPECT_FALSE(p->task_not_before_ms.has_value());
}

TEST(OutcomePlanTest, LostNodeOfAnIdempotentTaskRetriesIt) {
  auto p = PlanNodeLost(Row(v1::ASSIGNED, v1::ASSIGNED, 1, 1, /*idempotent=*/true), kNow);
  ASSERT_TRUE(p.ok() && p->task);
  EXPECT_EQ(p->task->state, v1::QUEUED);
  EXPECT_EQ(p->task->queued_ms, kNow);
  EXPECT_EQ(p->task_not_before_ms, kNow + 1000);
  EXPECT_EQ(p->exclude_node, "node-a");
}

TEST(OutcomePlanTest, LostNodeOfACancelledTaskCancelsTheAttempt) {
  auto p = PlanNodeLost(Row(v1::RUNNING, v1::CANCELLED), kNow);
  ASSERT_TRUE(p.ok() && p->attempt);
  EXPECT_EQ(p->attempt->state, v1::CANCELLED);
  EXPECT_EQ(p->attempt->reason, v1::USER_CANCEL);
  EXPECT_FALSE(p->task || p->exclude_node);
}

TEST(OutcomePlanTest, AVerifiedJobsSuccessIsHeldForTheVerdictWithoutUsingARetry) {
  AttemptRow row = Row(v1::RUNNING, v1::RUNNING);
  row.ctx.verified = true;
  OutcomePlan p = Plan(row, Report(v1::EXITED));
  ASSERT_TRUE(p.attempt && p.task && p.task_not_before_ms);
  EXPECT_EQ(p.attempt->state, v1::SUCCEEDED);
  EXPECT_EQ(p.attempt->vote, "pending");
  EXPECT_EQ(p.task->state, v1::QUEUED) << "not accepted on one node's word";
  EXPECT_EQ(*p.task_not_before_ms, kVerdictHoldMs) << "never offered until the verdict";
  EXPECT_TRUE(p.outcome.hold_for_verdict);
  EXPECT_FALSE(p.outcome.retried);
  EXPECT_FALSE(p.exclude_node);
  // A failed run of a verified job is retried as any other.
  OutcomePlan failed = Plan(row, Report(v1::EXITED, 3));
  ASSERT_TRUE(failed.task);
  EXPECT_EQ(failed.task->state, v1::FAILED);
  EXPECT_FALSE(failed.attempt->vote);
  // An unverified job's success ends the task.
  OutcomePlan plain = Plan(Row(v1::RUNNING, v1::RUNNING), Report(v1::EXITED));
  EXPECT_EQ(plain.task->state, v1::SUCCEEDED);
  EXPECT_FALSE(plain.attempt->vote);
}

}  // namespace
}  // namespace idlegrid::jobs
