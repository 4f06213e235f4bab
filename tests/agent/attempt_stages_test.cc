// The pure parts of an attempt's stages (agent/attempt_stages.h), on plain values.
#include "agent/attempt_stages.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace idlegrid::agent {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

v1::Assignment Task(uint32_t array_count, const std::string& checkpoint_path) {
  v1::Assignment a;
  a.set_attempt_id("a1");
  a.set_job_id("j1");
  a.set_task_index(3);
  a.mutable_spec()->set_array_count(array_count);
  a.mutable_spec()->set_checkpoint_path(checkpoint_path);
  a.mutable_spec()->set_output_path("/out");
  a.mutable_spec()->set_runtime("runsc");
  (*a.mutable_spec()->mutable_env())["A"] = "1";
  return a;
}

TEST(BuildRunSpecTest, TheJobsEnvComesFirstThenWhatIdlegridTellsIt) {
  RunLayout layout;
  layout.checkpoint_dir = "/s/checkpoint";
  EXPECT_EQ(BuildRunSpec(Task(0, ""), layout).env,
            (Env{{"A", "1"}, {"IDLEGRID_TASK_INDEX", "3"}, {"IDLEGRID_TASK_COUNT", "1"}, {"IDLEGRID_JOB_ID", "j1"}}));
  EXPECT_EQ(BuildRunSpec(Task(8, "/ckpt"), layout).env, (Env{{"A", "1"},
                                                             {"IDLEGRID_TASK_INDEX", "3"},
                                                             {"IDLEGRID_TASK_COUNT", "8"},
                                                             {"IDLEGRID_JOB_ID", "j1"},
                                                             {"IDLEGRID_CHECKPOINT_DIR", "/ckpt"}}));
}

TEST(BuildRunSpecTest, OnlyArrayTasksWithoutCheckpointsShareASandbox) {
  const struct {
    uint32_t array_count;
    std::string checkpoint_path;
    std::string group;
  } cases[] = {{0, "", ""}, {1, "", ""}, {2, "", "j1"}, {2, "/ckpt", ""}, {1, "/ckpt", ""}};
  for (const auto& c : cases) {
    EXPECT_EQ(BuildRunSpec(Task(c.array_count, c.checkpoint_path), RunLayout{}).sandbox_group, c.group)
        << "array " << c.array_count << ", checkpoint '" << c.checkpoint_path << "'";
  }
}

TEST(BuildRunSpecTest, MountsAreOutputsThenCheckpointThenInputs) {
  v1::Assignment a = Task(1, "/ckpt");
  auto* in = a.mutable_spec()->add_inputs();
  in->set_artifact("sha256:" + std::string(64, 'c'));
  in->set_path("/data/x");
  RunLayout layout;
  layout.container_name = "idlegrid-n1-a1";
  layout.image_id = std::string(64, 'a');
  layout.out_dir = "/s/out";
  layout.checkpoint_dir = "/s/checkpoint";
  layout.input_paths = {"/s/input-0"};
  layout.gpu_uuids = {"GPU-1"};
  layout.host_user_processes = 12;
  runtime::RunSpec run = BuildRunSpec(a, layout);
  ASSERT_EQ(run.mounts.size(), 3u);
  EXPECT_EQ(run.mounts[0].host_path, "/s/out");
  EXPECT_FALSE(run.mounts[0].read_only);
  EXPECT_EQ(run.mounts[1].host_path, "/s/checkpoint");
  EXPECT_EQ(run.mounts[1].container_path, "/ckpt");
  EXPECT_FALSE(run.mounts[1].read_only);
  EXPECT_EQ(run.mounts[2].host_path, "/s/input-0");
  EXPECT_EQ(run.mounts[2].container_path, "/data/x");
  EXPECT_TRUE(run.mounts[2].read_only);
  EXPECT_EQ(run.mounts[2].content_digest, in->artifact());
  EXPECT_EQ(run.container_name, "idlegrid-n1-a1");
  EXPECT_EQ(run.runtime, "runsc");
  EXPECT_EQ(run.gpu_uuids, std::vector<std::string>{"GPU-1"});
  EXPECT_EQ(run.host_user_processes, 12u);
}

TEST(BuildRunSpecTest, HomeAndCacheAreTheScratchsUnlessTheJobSetsThem) {
  RunLayout layout;
  layout.out_dir = "/s/out";
  layout.home_dir = "/s/home";
  runtime::RunSpec run = BuildRunSpec(Task(1, ""), layout);
  EXPECT_EQ(run.env, (Env{{"A", "1"},
                          {"IDLEGRID_TASK_INDEX", "3"},
                          {"IDLEGRID_TASK_COUNT", "1"},
                          {"IDLEGRID_JOB_ID", "j1"},
                          {"HOME", "/home/job"},
                          {"XDG_CACHE_HOME", "/home/job/.cache"}}));
  ASSERT_EQ(run.mounts.size(), 2u);
  EXPECT_EQ(run.mounts[1].host_path, "/s/home");
  EXPECT_EQ(run.mounts[1].container_path, "/home/job");
  EXPECT_FALSE(run.mounts[1].read_only);

  // What the manifest's env says stays; only what it leaves out is added.
  v1::Assignment own = Task(1, "");
  (*own.mutable_spec()->mutable_env())["HOME"] = "/work";
  run = BuildRunSpec(own, layout);
  EXPECT_EQ(std::count(run.env.begin(), run.env.end(), std::pair<std::string, std::string>("HOME", "/work")), 1);
  EXPECT_EQ(std::count_if(run.env.begin(), run.env.end(), [](const auto& e) { return e.first == "HOME"; }), 1);
  EXPECT_EQ(std::count(run.env.begin(), run.env.end(),
                       std::pair<std::string, std::string>("XDG_CACHE_HOME", "/home/job/.cache")),
            1);
  (*own.mutable_spec()->mutable_env())["XDG_CACHE_HOME"] = "/work/cache";
  run = BuildRunSpec(own, layout);
  EXPECT_EQ(std::count_if(run.env.begin(), run.env.end(), [](const auto& e) { return e.first == "XDG_CACHE_HOME"; }),
            1);
}

TEST(BuildRunSpecTest, AJobMountAtOrAboveHomeHoldsIt) {
  RunLayout layout;
  layout.out_dir = "/s/out";
  layout.home_dir = "/s/home";
  const struct {
    std::string output;
    bool home_mounted;
  } cases[] = {{"/home/job", false}, {"/home", false}, {"/home/job/out", true}, {"/home/jobs", true}, {"/out", true}};
  for (const auto& c : cases) {
    v1::Assignment a = Task(1, "");
    a.mutable_spec()->set_output_path(c.output);
    const runtime::RunSpec run = BuildRunSpec(a, layout);
    const bool mounted = std::any_of(run.mounts.begin(), run.mounts.end(),
                                     [](const runtime::Mount& m) { return m.host_path == "/s/home"; });
    EXPECT_EQ(mounted, c.home_mounted) << c.output;
    EXPECT_EQ(std::count(run.env.begin(), run.env.end(), std::pair<std::string, std::string>("HOME", "/home/job")), 1)
        << c.output;
  }
}

TEST(SelectGpusTest, PassesOnlyRealAssignedGpus) {
  v1::GpuDevice real, sim, other;
  real.set_uuid("GPU-r");
  sim.set_uuid("GPU-s");
  sim.set_simulated(true);
  other.set_uuid("GPU-o");
  v1::Assignment a;
  a.add_device_uuids("GPU-s");
  a.add_device_uuids("GPU-r");
  auto gpus = SelectGpus(a, {other, sim, real});
  ASSERT_TRUE(gpus.ok());
  EXPECT_EQ(*gpus, std::vector<std::string>{"GPU-r"});
  a.add_device_uuids("GPU-missing");
  auto missing = SelectGpus(a, {other, sim, real});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kFailedPrecondition);
}

TEST(OutcomeReportTest, CarriesWhatEachEventNeeds) {
  Outcome exited;
  exited.event = v1::EXITED;
  exited.exit_code = 137;
  exited.reason = v1::RUN_TIMEOUT;
  exited.message = "run timeout";
  v1::ReportAttemptRequest r = OutcomeReport("a1", exited);
  EXPECT_EQ(r.attempt_id(), "a1");
  EXPECT_EQ(r.event(), v1::EXITED);
  EXPECT_EQ(r.exit_code(), 137);
  EXPECT_EQ(r.failure_reason(), v1::RUN_TIMEOUT);
  EXPECT_EQ(r.message(), "run timeout");

  Outcome stopped;
  stopped.event = v1::STOPPED;
  stopped.exit_code = 137;
  r = OutcomeReport("a1", stopped);
  EXPECT_EQ(r.event(), v1::STOPPED);
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_EQ(r.failure_reason(), v1::FAILURE_REASON_UNSPECIFIED);
}

}  // namespace
}  // namespace idlegrid::agent
