// Whole attempts through AttemptRunner (agent/attempt_runner.h) with a fake
// runtime, host, reporter and artifact store: which reports an attempt sends,
// with which reasons and outputs, and that its capacity and scratch are freed
// on every path.
#include "agent/attempt_runner.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "agent/attempt_fixture_support.h"
#include "common/digest.h"
#include "common/fs.h"

namespace idlegrid::agent {
namespace {

using testing::AttemptRunnerTest;
using testing::Exit;

TEST_F(AttemptRunnerTest, SuccessReportsAcceptedStartedExitedWithOutputs) {
  runtime_.outputs = {{"result.txt", "42"}, {"sub/more.txt", "x"}};
  bool held_at_exit = true;
  bool scratch_at_exit = true;
  std::string logs_at_exit;
  reporter_.on_report = [&](const v1::ReportAttemptRequest& r) {
    if (r.event() != v1::EXITED) return;
    held_at_exit = host_.Holds("a1");
    scratch_at_exit = PathExists(Scratch());
    logs_at_exit = LogsSent();
  };
  Run(Assignment());

  EXPECT_EQ(EventNames(), "ACCEPTED STARTED EXITED");
  EXPECT_EQ(reporter_.Reports()[1].runtime(), "runc");
  v1::ReportAttemptRequest done = Last();
  EXPECT_EQ(done.exit_code(), 0);
  EXPECT_EQ(done.failure_reason(), v1::FAILURE_REASON_UNSPECIFIED);
  EXPECT_TRUE(done.message().empty());
  ASSERT_EQ(done.outputs_size(), 2);
  EXPECT_EQ(done.outputs(0).path(), "result.txt");
  EXPECT_EQ(done.outputs(0).digest(), Sha256Digest("42"));
  EXPECT_EQ(done.outputs(1).path(), "sub/more.txt");
  EXPECT_EQ(artifacts_.Uploaded().at("result.txt"), "42");
  // The capacity and the disk are free before the coordinator hears the
  // attempt ended, and the job's output reached it before that too.
  EXPECT_FALSE(held_at_exit);
  EXPECT_FALSE(scratch_at_exit);
  EXPECT_EQ(logs_at_exit, "hello\n");
  EXPECT_EQ(host_.releases, 1);
  EXPECT_TRUE(scratch_seen_);
  ExpectCleanedUp();
}

TEST_F(AttemptRunnerTest, TheContainerIsStartedFromTheAssignment) {
  Run(Assignment());
  ASSERT_EQ(runtime_.runs.size(), 1u);
  const runtime::RunSpec& run = runtime_.runs[0];
  EXPECT_EQ(run.container_name, "idlegrid-n1-a1");
  EXPECT_EQ(run.image_id, std::string(64, 'a'));
  EXPECT_EQ(run.command, std::vector<std::string>{"/bin/job"});
  EXPECT_EQ(run.args, std::vector<std::string>{"--fast"});
  ASSERT_EQ(run.mounts.size(), 2u);
  EXPECT_EQ(run.mounts[0].host_path, Scratch() + "/out");
  EXPECT_EQ(run.mounts[0].container_path, "/out");
  EXPECT_FALSE(run.mounts[0].read_only);
  // HOME: a writable directory of the scratch, with its cache directory made.
  EXPECT_EQ(run.mounts[1].host_path, Scratch() + "/home");
  EXPECT_EQ(run.mounts[1].container_path, "/home/job");
  EXPECT_FALSE(run.mounts[1].read_only);
  EXPECT_TRUE(std::count(run.env.begin(), run.env.end(), std::pair<std::string, std::string>("HOME", "/home/job")));
  EXPECT_TRUE(std::count(run.env.begin(), run.env.end(),
                         std::pair<std::string, std::string>("XDG_CACHE_HOME", "/home/job/.cache")));
  EXPECT_EQ(runtime_.timeouts[0], std::chrono::seconds(60));
}

TEST_F(AttemptRunnerTest, ANonZeroExitIsExitedWithItsCodeAndOutputs) {
  runtime_.exit = Exit(3);
  runtime_.outputs = {{"partial.txt", "half"}};
  Run(Assignment());
  EXPECT_EQ(EventNames(), "ACCEPTED STARTED EXITED");
  EXPECT_EQ(Last().exit_code(), 3);
  EXPECT_EQ(Last().outputs_size(), 1);
  ExpectCleanedUp();
}

TEST_F(AttemptRunnerTest, ARunErrorIsAPlatformFailureWithoutOutputs) {
  runtime_.start = false;
  runtime_.exit = Status::Internal("podman died");
  bool held_at_error = true;
  reporter_.on_report = [&](const v1::ReportAttemptRequest& r) {
    if (r.event() == v1::ERRORED) held_at_error = host_.Holds("a1");
  };
  Run(Assignment());
  EXPECT_EQ(EventNames(), "ACCEPTED ERRORED");
  EXPECT_EQ(Last().failure_reason(), v1::PLATFORM_FAILURE);
  EXPECT_EQ(Last().message(), "podman died");
  EXPECT_TRUE(artifacts_.Uploaded().empty());
  // As for EXITED: the capacity is free before the coordinator hears of it.
  EXPECT_FALSE(held_at_error);
  EXPECT_EQ(host_.releases, 1);
  ExpectCleanedUp();
}

TEST_F(AttemptRunnerTest, AnOciRuntimeErrorAfterTheStartIsAPlatformFailure) {
  runtime::ExitInfo exit = Exit(125);
  exit.error = "OCI runtime error: cannot mount";
  runtime_.exit = exit;
  runtime_.outputs = {{"result.txt", "42"}};
  Run(Assignment());
  EXPECT_EQ(EventNames(), "ACCEPTED STARTED ERRORED");
  EXPECT_EQ(Last().failure_reason(), v1::PLATFORM_FAILURE);
  EXPECT_EQ(Last().message(), "OCI runtime error: cannot mount");
  EXPECT_EQ(Last().outputs_size(), 0);
  EXPECT_TRUE(scratch_seen_);
  ExpectCleanedUp();
}

TEST_F(AttemptRunnerTest, ATimeoutIsExitedAsRunTimeoutKeepingItsOutputs) {
  runtime::ExitInfo exit = Exit(137);
  exit.timed_out = true;
  runtime_.exit = exit;
  runtime_.outputs = {{"progress.txt", "70%"}};
  Run(Assignment());
  EXPECT_EQ(EventNames(), "ACCEPTED STARTED EXITED");
  EXPECT_EQ(Last().failure_reason(), v1::RUN_TIMEOUT);
  EXPECT_EQ(Last().message(), "run timeout of 60 s reached; killed");
  EXPECT_EQ(Last().exit_code(), 137);
  EXPECT_EQ(Last().outputs_size(), 1);
  ExpectCleanedUp();
}

TEST_F(AttemptRunnerTest, AnOomKillIsExitedAsOutOfMemory) {
  runtime::ExitInfo exit = Exit(137);
  exit.oom = true;
  runtime_.exit = exit;
  Run(Assignment());
  EXPECT_EQ(EventNames(), "ACCEPTED STARTED EXITED");
  EXPECT_EQ(Last().failure_reason(), v1::OUT_OF_MEMORY);
  EXPECT_EQ(Last().message(), "killed: out of memory (limit 67108864 bytes)");
  ExpectCleanedUp();
}

TEST_F(AttemptRunnerTest, TooManyOutputsIsTheJobsFaultAndNothingIsUploaded) {
  runtime_.extra_output_files = kMaxOutputFiles + 1;
  Run(Assignment());
  EXPECT_EQ(EventNames(), "ACCEPTED STARTED ERRORED");
  EXPECT_EQ(Last().failure_reason(), v1::NONZERO_EXIT);
  EXPECT_NE(Last().message().find("left 10001 output files"), std::string::npos) << Last().message();
  EXPECT_TRUE(artifacts_.Uploaded().empty());
  ExpectCleanedUp();
}

TEST_F(AttemptRunnerTest, AFailedUploadIsAPlatformFailure) {
  runtime_.outputs = {{"result.txt", "42"}};
  artifacts_.fail_uploads = true;
  Run(Assignment());
  EXPECT_EQ(EventNames(), "ACCEPTED STARTED ERRORED");
  EXPECT_EQ(Last().failure_reason(), v1::PLATFORM_FAILURE);
  EXPECT_EQ(Last().message(), "upload refused by the test");
  ExpectCleanedUp();
}

TEST_F(AttemptRunnerTest, CancelledWhileRunningIsStoppedWithoutOutputs) {
  runtime::ExitInfo exit = Exit(137);
  exit.killed = true;
  runtime_.exit = exit;
  runtime_.outputs = {{"result.txt", "42"}};
  runtime_.while_running = [this](const runtime::RunSpec&) {
    scratch_seen_ = PathExists(Scratch());
    host_.Cancel("a1");  // what HandleCancel does before the kill lands
  };
  Run(Assignment());
  EXPECT_EQ(EventNames(), "ACCEPTED STARTED STOPPED");
  EXPECT_EQ(Last().outputs_size(), 0);
  EXPECT_EQ(Last().failure_reason(), v1::FAILURE_REASON_UNSPECIFIED);
  EXPECT_TRUE(artifacts_.Uploaded().empty());
  EXPECT_TRUE(scratch_seen_);
  ExpectCleanedUp();
}

TEST_F(AttemptRunnerTest, CancelledBeforeTheStartNeverRuns) {
  host_.Cancel("a1");
  Run(Assignment());
  EXPECT_EQ(EventNames(), "ACCEPTED STOPPED");
  EXPECT_TRUE(runtime_.runs.empty());
  ExpectCleanedUp();
}

TEST_F(AttemptRunnerTest, TheOwnersPolicyRefusesBeforeAnyHoldOrScratch) {
  host_.policy = Status::FailedPrecondition("the owner paused this node");
  Run(Assignment());
  EXPECT_EQ(EventNames(), "REJECTED");
  EXPECT_EQ(Last().failure_reason(), v1::FAILURE_REASON_UNSPECIFIED);
  EXPECT_EQ(Last().message(), "the owner paused this node");
  EXPECT_TRUE(runtime_.runs.empty());
  EXPECT_EQ(host_.releases, 0);
  EXPECT_FALSE(PathExists(dir_ + "/attempts"));
}

// An owner who trusts a key runs only images it signed: anything else is
// refused before the acknowledgement, a hold or a download, with the reason.
TEST_F(AttemptRunnerTest, AnImageWithoutASignatureTheOwnerTrustsIsRejectedBeforeItIsFetched) {
  auto owner = image::ImageSigningKey::Generate("owner");
  auto stranger = image::ImageSigningKey::Generate("stranger");
  ASSERT_TRUE(owner.ok() && stranger.ok());
  host_.trusted_image_keys = {owner->public_key()};
  v1::Assignment a = Assignment();
  v1::ImageSignature* by_stranger = a.add_image_signatures();
  by_stranger->set_image(a.spec().image());
  by_stranger->set_public_key(stranger->public_key().key);
  by_stranger->set_signature(*stranger->Sign(a.spec().image()));
  Run(a);
  EXPECT_EQ(EventNames(), "REJECTED");
  EXPECT_EQ(Last().failure_reason(), v1::FAILURE_REASON_UNSPECIFIED) << "a policy refusal, not node_busy";
  EXPECT_NE(Last().message().find("not signed by a key this node's owner trusts"), std::string::npos)
      << Last().message();
  EXPECT_NE(Last().message().find(owner->public_key().id()), std::string::npos) << Last().message();
  EXPECT_EQ(images_.ensure_calls, 0) << "nothing was fetched";
  EXPECT_TRUE(runtime_.runs.empty());
  EXPECT_EQ(host_.releases, 0);
  EXPECT_FALSE(PathExists(dir_ + "/attempts"));
}

TEST_F(AttemptRunnerTest, ARegistryTheOwnerDoesNotAllowIsRejectedBeforeAnyPull) {
  v1::LocalPolicy owner = DefaultOwnerPolicy().policy;
  owner.add_allowed_registries("ghcr.io");
  host_.owner = owner;
  v1::Assignment a = Assignment();
  a.mutable_spec()->set_image("127.0.0.1:5000/igtest/prog@sha256:" + std::string(64, 'b'));
  Run(a);
  EXPECT_EQ(EventNames(), "REJECTED");
  // Not node_busy: the coordinator counts it as the owner's refusal (no retry
  // used) and offers the task to this node no more.
  EXPECT_EQ(Last().failure_reason(), v1::FAILURE_REASON_UNSPECIFIED);
  EXPECT_NE(Last().message().find("registry 127.0.0.1:5000 is not in this node's allowedRegistries"), std::string::npos)
      << Last().message();
  EXPECT_EQ(images_.ensure_calls, 0);
  EXPECT_TRUE(runtime_.runs.empty());
  EXPECT_EQ(host_.releases, 0);
  EXPECT_FALSE(PathExists(dir_ + "/attempts"));
}

TEST_F(AttemptRunnerTest, AnImageSignedByATrustedKeyRuns) {
  auto owner = image::ImageSigningKey::Generate("owner");
  ASSERT_TRUE(owner.ok());
  host_.trusted_image_keys = {owner->public_key()};
  v1::Assignment a = Assignment();
  v1::ImageSignature* signature = a.add_image_signatures();
  signature->set_image(a.spec().image());
  signature->set_public_key(owner->public_key().key);
  signature->set_signature(*owner->Sign(a.spec().image()));
  Run(a);
  EXPECT_EQ(EventNames(), "ACCEPTED STARTED EXITED");
  EXPECT_EQ(images_.ensure_calls, 1);
  ExpectCleanedUp();
}

TEST_F(AttemptRunnerTest, ARegistryTheOwnerAllowsRuns) {
  v1::LocalPolicy owner = DefaultOwnerPolicy().policy;
  owner.add_allowed_registries("127.0.0.1:5000");
  host_.owner = owner;
  v1::Assignment a = Assignment();
  a.mutable_spec()->set_image("127.0.0.1:5000/igtest/prog@sha256:" + std::string(64, 'b'));
  Run(a);
  EXPECT_EQ(EventNames(), "ACCEPTED STARTED EXITED");
  EXPECT_EQ(images_.ensure_calls, 1);
  ExpectCleanedUp();
}

TEST_F(AttemptRunnerTest, ARuntimeTheHostLacksIsRejected) {
  v1::Assignment a = Assignment();
  a.mutable_spec()->set_runtime("runsc");
  Run(a);
  EXPECT_EQ(EventNames(), "REJECTED");
  EXPECT_EQ(Last().failure_reason(), v1::FAILURE_REASON_UNSPECIFIED);
  EXPECT_NE(Last().message().find("runsc"), std::string::npos) << Last().message();
  EXPECT_TRUE(runtime_.runs.empty());
}

TEST_F(AttemptRunnerTest, NoFreeCapacityIsRejectedAsNodeBusy) {
  host_.capacity = Status::FailedPrecondition("needs 1 CPU, 0.5 free");
  Run(Assignment());
  EXPECT_EQ(EventNames(), "REJECTED");
  EXPECT_EQ(Last().failure_reason(), v1::NODE_BUSY);
  EXPECT_EQ(Last().message(), "needs 1 CPU, 0.5 free");
  EXPECT_TRUE(runtime_.runs.empty());
}

TEST_F(AttemptRunnerTest, AnUndeliveredAcceptDropsTheAttemptAndItsHold) {
  reporter_.refuse = {v1::ACCEPTED};
  Run(Assignment());
  EXPECT_EQ(EventNames(), "ACCEPTED");
  EXPECT_TRUE(runtime_.runs.empty());
  EXPECT_EQ(host_.releases, 1);
  ExpectCleanedUp();
}

TEST_F(AttemptRunnerTest, AnImageThatFailsIsAPlatformFailure) {
  images_.image = Status::DataLoss("image sha256:bb.. has config sha256:cc.., coordinator said sha256:dd..");
  Run(Assignment());
  EXPECT_EQ(EventNames(), "ACCEPTED ERRORED");
  EXPECT_EQ(Last().failure_reason(), v1::PLATFORM_FAILURE);
  EXPECT_EQ(Last().message(), "image sha256:bb.. has config sha256:cc.., coordinator said sha256:dd..");
  EXPECT_EQ(host_.releases, 1);
  ExpectCleanedUp();
}

}  // namespace
}  // namespace idlegrid::agent
