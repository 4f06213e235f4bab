// The prepare stage of whole attempts (agent/attempt_runner.h): inputs,
// checkpoints (restore, final sync) and GPUs, with the fakes of
// attempt_fakes_support.h. Every failure here is the platform's, not the job's.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "agent/attempt_fixture_support.h"
#include "common/digest.h"
#include "common/fs.h"

namespace idlegrid::agent {
namespace {

using testing::AttemptRunnerTest;
using testing::Exit;

v1::GpuDevice Gpu(const std::string& uuid, bool simulated) {
  v1::GpuDevice d;
  d.set_uuid(uuid);
  d.set_simulated(simulated);
  return d;
}

TEST_F(AttemptRunnerTest, InputsAreDownloadedAndMountedReadOnly) {
  const std::string digest = Sha256Digest("input bytes");
  artifacts_.store[digest] = "input bytes";
  v1::Assignment a = Assignment();
  auto* in = a.mutable_spec()->add_inputs();
  in->set_artifact(digest);
  in->set_path("/data/in.txt");
  std::string contents;
  mode_t mode = 0;
  runtime_.while_running = [&](const runtime::RunSpec& spec) {
    ASSERT_EQ(spec.mounts.size(), 3u);  // outputs, the input, HOME
    const runtime::Mount& m = spec.mounts[1];
    EXPECT_EQ(m.container_path, "/data/in.txt");
    EXPECT_TRUE(m.read_only);
    EXPECT_EQ(m.content_digest, digest);
    contents = ReadFile(m.host_path).value();
    struct stat st;
    ASSERT_EQ(::stat(m.host_path.c_str(), &st), 0);
    mode = st.st_mode & 0777;
  };
  Run(a);
  EXPECT_EQ(EventNames(), "ACCEPTED STARTED EXITED");
  EXPECT_EQ(contents, "input bytes");
  EXPECT_EQ(mode, 0444u);
  ExpectCleanedUp();
}

TEST_F(AttemptRunnerTest, AMissingInputFailsBeforeTheRun) {
  v1::Assignment a = Assignment();
  auto* in = a.mutable_spec()->add_inputs();
  in->set_artifact(Sha256Digest("gone"));
  in->set_path("/data/in.txt");
  Run(a);
  EXPECT_EQ(EventNames(), "ACCEPTED ERRORED");
  EXPECT_EQ(Last().failure_reason(), v1::PLATFORM_FAILURE);
  EXPECT_EQ(Last().message().rfind("input /data/in.txt: no artifact", 0), 0u) << Last().message();
  EXPECT_TRUE(runtime_.runs.empty());
  ExpectCleanedUp();
}

TEST_F(AttemptRunnerTest, ACheckpointIsRestoredBeforeTheRunAndSyncedAfterAFailure) {
  const std::string saved = Sha256Digest("step 4");
  artifacts_.store[saved] = "step 4";
  v1::Assignment a = Assignment();
  a.mutable_spec()->set_checkpoint_path("/ckpt");
  a.mutable_spec()->set_array_count(4);
  a.mutable_restore()->set_attempt_id("a0");
  auto* f = a.mutable_restore()->add_files();
  f->set_path("state");
  f->set_digest(saved);
  f->set_size(6);
  std::string restored;
  runtime_.while_running = [&](const runtime::RunSpec& spec) {
    ASSERT_EQ(spec.mounts.size(), 3u);  // outputs, the checkpoint, HOME
    EXPECT_EQ(spec.mounts[1].container_path, "/ckpt");
    restored = ReadFile(spec.mounts[1].host_path + "/state").value();
  };
  runtime_.checkpoint_files = {{"state", "step 9"}};
  runtime_.exit = Exit(1);
  Run(a);

  EXPECT_EQ(restored, "step 4");
  // A checkpointing array task keeps a container of its own.
  EXPECT_EQ(runtime_.runs.at(0).sandbox_group, "");
  const auto& env = runtime_.runs.at(0).env;
  EXPECT_EQ(std::count(env.begin(), env.end(), std::pair<std::string, std::string>{"IDLEGRID_CHECKPOINT_DIR", "/ckpt"}),
            1);
  // What it saved before failing is what the next attempt resumes from.
  EXPECT_EQ(EventNames(), "ACCEPTED STARTED CHECKPOINTED EXITED");
  const v1::ReportAttemptRequest checkpointed = reporter_.Reports()[2];
  ASSERT_EQ(checkpointed.checkpoint_size(), 1);
  EXPECT_EQ(checkpointed.checkpoint(0).path(), "state");
  EXPECT_EQ(checkpointed.checkpoint(0).digest(), Sha256Digest("step 9"));
  EXPECT_EQ(Last().exit_code(), 1);
  ExpectCleanedUp();
}

TEST_F(AttemptRunnerTest, AFailedRestoreIsAPlatformFailure) {
  v1::Assignment a = Assignment();
  a.mutable_spec()->set_checkpoint_path("/ckpt");
  a.mutable_restore()->set_attempt_id("a0");
  auto* f = a.mutable_restore()->add_files();
  f->set_path("state");
  f->set_digest(Sha256Digest("not in the store"));
  Run(a);
  EXPECT_EQ(EventNames(), "ACCEPTED ERRORED");
  EXPECT_EQ(Last().failure_reason(), v1::PLATFORM_FAILURE);
  EXPECT_EQ(Last().message().rfind("restoring checkpoint of attempt a0: ", 0), 0u) << Last().message();
  EXPECT_TRUE(runtime_.runs.empty());
  ExpectCleanedUp();
}

TEST_F(AttemptRunnerTest, SimulatedGpusStayOutOfTheContainer) {
  host_.gpus = {Gpu("GPU-sim", true)};
  v1::Assignment a = Assignment();
  a.add_device_uuids("GPU-sim");
  Run(a);
  EXPECT_EQ(EventNames(), "ACCEPTED STARTED EXITED");
  EXPECT_TRUE(runtime_.runs.at(0).gpu_uuids.empty());
}

TEST_F(AttemptRunnerTest, AGpuNotOnThisHostFailsTheAttempt) {
  host_.gpus = {Gpu("GPU-other", false)};
  v1::Assignment a = Assignment();
  a.add_device_uuids("GPU-gone");
  Run(a);
  EXPECT_EQ(EventNames(), "ACCEPTED ERRORED");
  EXPECT_EQ(Last().failure_reason(), v1::PLATFORM_FAILURE);
  EXPECT_EQ(Last().message().rfind("assigned GPU GPU-gone is not on this host", 0), 0u) << Last().message();
  EXPECT_TRUE(runtime_.runs.empty());
  ExpectCleanedUp();
}

TEST_F(AttemptRunnerTest, ARealGpuNeedsACdiSpec) {
  host_.gpus = {Gpu("GPU-real", false)};
  v1::Assignment a = Assignment();
  a.add_device_uuids("GPU-real");
  Run(a);
  EXPECT_EQ(EventNames(), "ACCEPTED ERRORED");
  EXPECT_EQ(Last().message().rfind("no CDI spec for NVIDIA GPUs on this host", 0), 0u) << Last().message();
  EXPECT_TRUE(runtime_.runs.empty());
  ExpectCleanedUp();
}

TEST_F(AttemptRunnerTest, ARealGpuWithACdiSpecIsPassedIn) {
  ASSERT_TRUE(MakeDirs(dir_ + "/cdi").ok());
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/cdi/nvidia.yaml", "cdiVersion: 0.5.0\n").ok());
  host_.gpus = {Gpu("GPU-real", false), Gpu("GPU-sim", true)};
  v1::Assignment a = Assignment();
  a.add_device_uuids("GPU-real");
  a.add_device_uuids("GPU-sim");
  Run(a);
  EXPECT_EQ(EventNames(), "ACCEPTED STARTED EXITED");
  EXPECT_EQ(runtime_.runs.at(0).gpu_uuids, std::vector<std::string>{"GPU-real"});
}

}  // namespace
}  // namespace idlegrid::agent
