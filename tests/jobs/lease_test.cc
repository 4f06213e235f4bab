#include "jobs/attempt_events.h"
#include "jobs/lease.h"

#include <gtest/gtest.h>

namespace idlegrid::jobs {
namespace {

v1::ReportAttemptRequest Report(v1::AttemptEvent event, uint64_t epoch) {
  v1::ReportAttemptRequest r;
  r.set_attempt_id("a1");
  r.set_event(event);
  r.set_lease_epoch(epoch);
  return r;
}

TEST(LeaseEpoch, MatchingEpochOfTheNewestAttemptIsAccepted) {
  EXPECT_TRUE(CheckLeaseEpoch(Report(v1::EXITED, 3), 3, 3).ok());
  EXPECT_TRUE(CheckLeaseEpoch(Report(v1::EXITED, 0), 3, 3).ok());  // judged on the attempt alone
}

TEST(LeaseEpoch, AnotherEpochIsRefused) {
  Status st = CheckLeaseEpoch(Report(v1::EXITED, 2), 3, 3);
  EXPECT_EQ(st.code(), Code::kFailedPrecondition);
  EXPECT_NE(st.message().find("epoch 2"), std::string::npos) << st.message();
}

TEST(LeaseEpoch, SupersededAttemptIsRefusedEvenWithItsOwnEpoch) {
  for (auto event : {v1::STARTED, v1::EXITED, v1::CHECKPOINTED, v1::ERRORED}) {
    EXPECT_EQ(CheckLeaseEpoch(Report(event, 1), 1, 2).code(), Code::kFailedPrecondition) << event;
  }
  // A late stop confirmation changes nothing and is harmless.
  EXPECT_TRUE(CheckLeaseEpoch(Report(v1::STOPPED, 1), 1, 2).ok());
}

TEST(LeaseEpoch, AttemptsFromBeforeEpochsAreNotJudgedByEpoch) {
  EXPECT_TRUE(CheckLeaseEpoch(Report(v1::EXITED, 5), 0, 2).ok());
}

google::protobuf::RepeatedPtrField<v1::OutputFile> Files(std::vector<std::pair<std::string, std::string>> list) {
  google::protobuf::RepeatedPtrField<v1::OutputFile> out;
  for (auto& [path, digest] : list) {
    auto* f = out.Add();
    f->set_path(path);
    f->set_digest(digest);
  }
  return out;
}

const std::string kDigest = "sha256:" + std::string(64, 'a');

TEST(CheckpointFiles, CleanRelativePathsWithDigestsAreValid) {
  EXPECT_TRUE(ValidateCheckpointFiles(Files({{"state", kDigest}, {"sub/dir/model.bin", kDigest}})).ok());
  EXPECT_TRUE(ValidateCheckpointFiles(Files({})).ok());
}

TEST(CheckpointFiles, HostilePathsAndBadDigestsAreRefusedByName) {
  struct Case {
    std::string path, digest, expect;
  } cases[] = {
      {"/etc/passwd", kDigest, "relative"}, {"../escape", kDigest, "relative"},
      {"a/../../b", kDigest, "relative"},   {"a//b", kDigest, "relative"},
      {"./state", kDigest, "relative"},     {"", kDigest, "relative"},
      {"state", "sha256:xyz", "digest"},    {"state", "md5:" + std::string(64, 'a'), "digest"},
  };
  for (const auto& c : cases) {
    Status st = ValidateCheckpointFiles(Files({{c.path, c.digest}}));
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << c.path;
    EXPECT_NE(st.message().find(c.expect), std::string::npos) << st.message();
  }
  Status dup = ValidateCheckpointFiles(Files({{"state", kDigest}, {"state", kDigest}}));
  EXPECT_NE(dup.message().find("twice"), std::string::npos) << dup.message();
}

v1::Attempt Ended(v1::TaskState state, int64_t started, int64_t checkpoint, int64_t finished) {
  v1::Attempt a;
  a.set_state(state);
  a.set_started_at_ms(started);
  a.set_last_checkpoint_at_ms(checkpoint);
  a.set_finished_at_ms(finished);
  return a;
}

TEST(WorkLost, CountsFromTheLastCheckpointOrTheStart) {
  EXPECT_EQ(WorkLostMs(Ended(v1::FAILED, 1000, 0, 5000)), 4000);
  EXPECT_EQ(WorkLostMs(Ended(v1::FAILED, 1000, 4200, 5000)), 800);
  EXPECT_EQ(WorkLostMs(Ended(v1::SUCCEEDED, 1000, 0, 5000)), 0);
  EXPECT_EQ(WorkLostMs(Ended(v1::RUNNING, 1000, 0, 0)), 0);
  EXPECT_EQ(WorkLostMs(Ended(v1::FAILED, 0, 0, 5000)), 0);  // never started
}

}  // namespace
}  // namespace idlegrid::jobs

namespace idlegrid::jobs {
namespace {

v1::ReportAttemptRequest Exited(int code) {
  v1::ReportAttemptRequest r;
  r.set_attempt_id("a");
  r.set_event(v1::EXITED);
  r.set_exit_code(code);
  return r;
}

TEST(RetryRules, RealFailuresBackOffExponentiallyAndNoFaultOnesGoAtOnce) {
  AttemptContext ctx{v1::RUNNING, v1::RUNNING, 1, 10, true};
  auto first = ApplyAttemptEvent(ctx, Exited(1));
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->retried);
  EXPECT_EQ(first->retry_after_ms, 1000);
  ctx.attempts_used = 3;
  EXPECT_EQ(ApplyAttemptEvent(ctx, Exited(1))->retry_after_ms, 4000);
  ctx.attempts_used = 9;
  EXPECT_EQ(ApplyAttemptEvent(ctx, Exited(1))->retry_after_ms, 60000);  // capped
  v1::ReportAttemptRequest rejected;
  rejected.set_event(v1::REJECTED);
  AttemptContext assigned{v1::ASSIGNED, v1::ASSIGNED, 1, 0, false};
  auto no_fault = ApplyAttemptEvent(assigned, rejected);
  ASSERT_TRUE(no_fault.ok());
  EXPECT_TRUE(no_fault->retried);
  EXPECT_EQ(no_fault->retry_after_ms, 0);
  EXPECT_TRUE(IsNoFault(no_fault->reason));
}

TEST(RetryRules, ALostNonIdempotentTaskTellsTheUserWhatToDo) {
  auto lost = NodeLostOutcome({v1::RUNNING, v1::RUNNING, 1, 3, false});
  EXPECT_EQ(lost.task_state, v1::LOST);
  EXPECT_EQ(lost.task_reason, v1::NODE_LOST);
  EXPECT_NE(lost.task_message.find("`idlegrid retry JOB`"), std::string::npos) << lost.task_message;
  EXPECT_EQ(lost.retry_after_ms, 0);
}

}  // namespace
}  // namespace idlegrid::jobs
