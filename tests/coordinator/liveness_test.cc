// The coordinator's liveness rules, driven through its public API one loop
// pass (Tick) at a time on a manual clock: a node silent past its timeout is
// confirmed offline and its attempts fail as node_lost and run elsewhere; a
// RUNNING attempt two heartbeats in a row do not list is failed; an
// assignment not acknowledged within the ack timeout goes elsewhere.
// Defaults: heartbeat interval 5 s, margin 3 (timeout 15 s, confirmed one
// interval later), ack timeout 10 s, one pass per simulated second.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "coordinator/pipeline_support.h"

namespace idlegrid::coordinator::testing {
namespace {

class LivenessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status init = h_.Init();
    ASSERT_TRUE(init.ok()) << init.ToString();
  }

  // Submits `spec` and runs one pass; returns the job and the node its first
  // attempt went to.
  void SubmitAndPlace(const v1::JobSpec& spec, std::string* job_id, v1::Attempt* attempt) {
    auto job = h_.Submit(spec);
    ASSERT_TRUE(job.ok()) << job.status().ToString();
    *job_id = *job;
    h_.coordinator().Tick();
    auto task = h_.Task(*job_id);
    ASSERT_TRUE(task.ok()) << task.status().ToString();
    ASSERT_EQ(task->attempts_size(), 1) << task->DebugString();
    *attempt = task->attempts(0);
    ASSERT_EQ(attempt->state(), v1::ASSIGNED);
  }

  v1::Task TaskOf(const std::string& job_id) {
    auto task = h_.Task(job_id);
    EXPECT_TRUE(task.ok()) << task.status().ToString();
    return task.ok() ? *task : v1::Task();
  }

  PipelineHarness h_;
};

v1::JobSpec RetriedJob(const std::string& name) {
  v1::JobSpec spec = CpuJob(name);
  spec.set_idempotent(true);  // a lost run may run again
  spec.set_retries(2);
  return spec;
}

TEST_F(LivenessTest, SilentNodeIsConfirmedOfflineAndItsAttemptRunsElsewhere) {
  auto a = h_.AddNode("node-a");
  auto b = h_.AddNode("node-b");
  ASSERT_TRUE(a.ok() && b.ok());
  std::string job;
  v1::Attempt first;
  ASSERT_NO_FATAL_FAILURE(SubmitAndPlace(RetriedJob("lost"), &job, &first));
  const std::string holder = first.node_id();
  const std::string other = holder == *a ? *b : *a;
  ASSERT_TRUE(h_.Accept(holder, first.id()).ok());
  ASSERT_TRUE(h_.Start(holder, first.id()).ok());

  // The holder falls silent; the other node keeps heartbeating. Within the
  // timeout (interval x margin) nothing is judged.
  for (int s = 1; s <= 14; ++s) ASSERT_TRUE(h_.Pass(1000, {other}).ok());
  v1::Task task = TaskOf(job);
  ASSERT_EQ(task.attempts_size(), 1);
  EXPECT_EQ(task.attempts(0).state(), v1::RUNNING);
  EXPECT_EQ(h_.NodeState(holder), "late");
  EXPECT_FALSE(h_.SessionClosed(holder));

  int waited_s = 14;
  while (TaskOf(job).attempts_size() < 2 && waited_s < 40) {
    ASSERT_TRUE(h_.Pass(1000, {other}).ok());
    ++waited_s;
  }
  task = TaskOf(job);
  ASSERT_EQ(task.attempts_size(), 2) << task.DebugString();
  EXPECT_EQ(task.attempts(0).state(), v1::FAILED);
  EXPECT_EQ(task.attempts(0).failure_reason(), v1::NODE_LOST);
  EXPECT_EQ(task.attempts(1).node_id(), other) << "the lost node is excluded";
  EXPECT_EQ(task.attempts(1).state(), v1::ASSIGNED);
  // Suspect past 15 s, confirmed one interval later, retried after a 1 s backoff.
  EXPECT_GT(waited_s, 15);
  EXPECT_LE(waited_s, 25);
  EXPECT_EQ(h_.NodeState(holder), "offline");
  EXPECT_TRUE(h_.SessionClosed(holder));
  EXPECT_EQ(h_.NodeState(other), "online");
}

TEST_F(LivenessTest, HeartbeatingNodeKeepsItsAttemptPastTheTimeout) {
  // The control for the test above: the same 30 s, with heartbeats.
  auto a = h_.AddNode("node-a");
  ASSERT_TRUE(a.ok());
  std::string job;
  v1::Attempt first;
  ASSERT_NO_FATAL_FAILURE(SubmitAndPlace(RetriedJob("kept"), &job, &first));
  ASSERT_TRUE(h_.Accept(*a, first.id()).ok());
  ASSERT_TRUE(h_.Start(*a, first.id()).ok());
  for (int s = 1; s <= 30; ++s) ASSERT_TRUE(h_.Pass(1000, {*a}).ok());
  v1::Task task = TaskOf(job);
  ASSERT_EQ(task.attempts_size(), 1);
  EXPECT_EQ(task.attempts(0).state(), v1::RUNNING);
  EXPECT_EQ(h_.NodeState(*a), "online");
}

TEST_F(LivenessTest, SuspectNodeGetsNoNewWorkUntilHeardFrom) {
  auto a = h_.AddNode("node-a");
  ASSERT_TRUE(a.ok());
  for (int s = 1; s <= 16; ++s) ASSERT_TRUE(h_.Pass(1000, {}).ok());  // silent past the 15 s timeout
  ASSERT_EQ(h_.NodeState(*a), "suspect");
  auto job = h_.Submit(CpuJob("held-back"));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  h_.coordinator().Tick();
  v1::Task task = TaskOf(*job);
  EXPECT_EQ(task.attempts_size(), 0) << task.DebugString();
  EXPECT_EQ(task.state(), v1::QUEUED);
  EXPECT_FALSE(task.message().empty()) << "a waiting task says why";

  ASSERT_TRUE(h_.Pass(100, {*a}).ok());  // heard from again, before it is confirmed offline
  EXPECT_EQ(h_.NodeState(*a), "online");
  task = TaskOf(*job);
  ASSERT_EQ(task.attempts_size(), 1) << task.DebugString();
  EXPECT_EQ(task.attempts(0).node_id(), *a);
}

TEST_F(LivenessTest, RunningAttemptUnlistedByTwoHeartbeatsIsFailed) {
  auto a = h_.AddNode("node-a");
  ASSERT_TRUE(a.ok());
  std::string job;
  v1::Attempt first;
  ASSERT_NO_FATAL_FAILURE(SubmitAndPlace(RetriedJob("reconciled"), &job, &first));
  ASSERT_TRUE(h_.Accept(*a, first.id()).ok());
  ASSERT_TRUE(h_.Start(*a, first.id()).ok());
  // Listed: kept, however many heartbeats.
  for (int s = 1; s <= 3; ++s) ASSERT_TRUE(h_.Pass(1000, {*a}).ok());
  ASSERT_EQ(TaskOf(job).attempts(0).state(), v1::RUNNING);

  h_.running(*a).clear();  // the agent restarted and lost the attempt
  ASSERT_TRUE(h_.Pass(1000, {*a}).ok());
  EXPECT_EQ(TaskOf(job).attempts(0).state(), v1::RUNNING) << "one unlisting heartbeat may predate STARTED";
  ASSERT_TRUE(h_.Pass(1000, {*a}).ok());
  v1::Task task = TaskOf(job);
  EXPECT_EQ(task.attempts(0).state(), v1::FAILED);
  EXPECT_EQ(task.attempts(0).failure_reason(), v1::NODE_LOST);
  // Idempotent with retries left: queued again, but not on the node that lost it.
  EXPECT_EQ(task.state(), v1::QUEUED);
  EXPECT_EQ(task.attempts_size(), 1);
  EXPECT_EQ(h_.NodeState(*a), "online") << "the node itself is alive";
}

TEST_F(LivenessTest, ReconciliationMissesDoNotAccumulateAcrossListings) {
  auto a = h_.AddNode("node-a");
  ASSERT_TRUE(a.ok());
  std::string job;
  v1::Attempt first;
  ASSERT_NO_FATAL_FAILURE(SubmitAndPlace(RetriedJob("flicker"), &job, &first));
  ASSERT_TRUE(h_.Accept(*a, first.id()).ok());
  ASSERT_TRUE(h_.Start(*a, first.id()).ok());
  ASSERT_TRUE(h_.Pass(1000, {*a}).ok());
  // Unlisted, listed, unlisted: never two misses in a row.
  for (int round = 0; round < 3; ++round) {
    h_.running(*a).clear();
    ASSERT_TRUE(h_.Pass(1000, {*a}).ok());
    h_.running(*a).insert(first.id());
    ASSERT_TRUE(h_.Pass(1000, {*a}).ok());
  }
  EXPECT_EQ(TaskOf(job).attempts(0).state(), v1::RUNNING);
}

TEST_F(LivenessTest, UnacknowledgedAssignmentGoesElsewhere) {
  auto a = h_.AddNode("node-a");
  auto b = h_.AddNode("node-b");
  ASSERT_TRUE(a.ok() && b.ok());
  std::string job;
  v1::Attempt first;
  ASSERT_NO_FATAL_FAILURE(SubmitAndPlace(CpuJob("unacked"), &job, &first));
  const std::string holder = first.node_id();
  const std::string other = holder == *a ? *b : *a;
  std::vector<v1::Command> sent = h_.TakeCommands(holder);
  ASSERT_EQ(sent.size(), 1u);
  ASSERT_TRUE(sent[0].has_assign());
  EXPECT_EQ(sent[0].assign().attempt_id(), first.id());

  // Both nodes alive; the holder never acknowledges.
  for (int s = 1; s <= 9; ++s) ASSERT_TRUE(h_.Pass(1000, {*a, *b}).ok());
  ASSERT_EQ(TaskOf(job).attempts_size(), 1);
  EXPECT_EQ(TaskOf(job).attempts(0).state(), v1::ASSIGNED);

  int waited_s = 9;
  while (TaskOf(job).attempts_size() < 2 && waited_s < 20) {
    ASSERT_TRUE(h_.Pass(1000, {*a, *b}).ok());
    ++waited_s;
  }
  v1::Task task = TaskOf(job);
  ASSERT_EQ(task.attempts_size(), 2) << task.DebugString();
  EXPECT_LE(waited_s, 12);
  EXPECT_EQ(task.attempts(0).state(), v1::FAILED);
  EXPECT_EQ(task.attempts(0).failure_reason(), v1::ACK_TIMEOUT);
  EXPECT_EQ(task.attempts(1).node_id(), other);
  // The job has no retries: an ack timeout uses none (not the job's fault).
  EXPECT_EQ(task.attempts(1).lease_epoch(), 2u);
  sent = h_.TakeCommands(holder);
  ASSERT_EQ(sent.size(), 1u) << "should the assignment still arrive, the agent must drop it";
  ASSERT_TRUE(sent[0].has_cancel());
  EXPECT_EQ(sent[0].cancel().attempt_id(), first.id());
  sent = h_.TakeCommands(other);
  ASSERT_EQ(sent.size(), 1u);
  ASSERT_TRUE(sent[0].has_assign());
  EXPECT_EQ(sent[0].assign().attempt_id(), task.attempts(1).id());
}

TEST_F(LivenessTest, AcknowledgedAssignmentOutlivesTheAckTimeout) {
  auto a = h_.AddNode("node-a");
  ASSERT_TRUE(a.ok());
  std::string job;
  v1::Attempt first;
  ASSERT_NO_FATAL_FAILURE(SubmitAndPlace(CpuJob("acked"), &job, &first));
  ASSERT_TRUE(h_.Accept(*a, first.id()).ok());  // acknowledged, not started yet
  for (int s = 1; s <= 15; ++s) ASSERT_TRUE(h_.Pass(1000, {*a}).ok());
  v1::Task task = TaskOf(job);
  ASSERT_EQ(task.attempts_size(), 1);
  EXPECT_EQ(task.attempts(0).state(), v1::ASSIGNED);
}

}  // namespace
}  // namespace idlegrid::coordinator::testing
