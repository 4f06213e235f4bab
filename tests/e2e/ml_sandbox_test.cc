// End to end (issue 28): the sandbox fits ordinary ML code. A job writes to
// $HOME and $XDG_CACHE_HOME (which the agent points at the attempt's scratch)
// and fills /dev/shm past the old 64 MiB within its resources.shm, and
// succeeds; a job whose caches pass its resources.disk total in many small
// files fails with the disk-limit reason. Under each driver the agent has.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "e2e/harness.h"
#include "jobs/task_state.h"

namespace idlegrid::testing {
namespace {

class MlSandboxE2E : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name) {
      if (c == '/') c = '-';
    }
    grid_ = std::make_unique<Grid>(name);
    ASSERT_TRUE(grid_->StartCoordinator().ok());
    Status st = grid_->StartAgent(1, {"--driver", GetParam()});
    ASSERT_TRUE(st.ok()) << st.message();
  }
  // A testprog job with `args`; `resources` is appended to its resources.
  std::string Manifest(const std::string& name, const std::vector<std::string>& args, const std::string& resources) {
    const std::string image = grid_->PushTestImage();
    EXPECT_FALSE(image.empty());
    std::string y =
        "apiVersion: idlegrid/v1\nname: " + name + "\nimage: igtest@" + image + "\ncommand: [\"/sim\"]\nargs: [";
    for (size_t i = 0; i < args.size(); ++i) y += (i ? ", \"" : "\"") + args[i] + "\"";
    y += "]\nresources:\n  cpu: 1\n  pids: 64\n" + resources + "output: /out\nrunTimeout: 5m\n";
    return grid_->WriteFile(name + ".yaml", y);
  }
  v1::Job SubmitAndWait(const std::string& manifest) {
    CmdResult r = grid_->Cli({"submit", manifest, "--wait", "--json"});
    v1::Job job;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &job).ok()) << r.out << r.err;
    return job;
  }
  // The job's stdout and stderr (which `idlegrid logs` prints on its own).
  std::string Logs(const std::string& id) {
    CmdResult r = grid_->Cli({"logs", id});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out + r.err;
  }
  void ExpectScratchGone(const v1::Job& job) {
    ASSERT_EQ(job.tasks_size(), 1);
    ASSERT_GE(job.tasks(0).attempts_size(), 1);
    const std::string scratch = grid_->AgentDataDir(1) + "/state/attempts/" + job.tasks(0).attempts(0).id();
    EXPECT_FALSE(std::filesystem::exists(scratch)) << scratch << " left behind";
  }
  std::unique_ptr<Grid> grid_;
};

TEST_P(MlSandboxE2E, HomeCacheAndAShmPast64MiBWork) {
  // 96 MiB of /dev/shm: past the 64 MiB every job had before, within its 128Mi.
  const v1::Job job = SubmitAndWait(Manifest("home", {"home", "96"}, "  memory: 512Mi\n  shm: 128Mi\n"));
  const std::string logs = Logs(job.id());
  ASSERT_EQ(job.state(), v1::SUCCEEDED) << job.DebugString() << logs;
  EXPECT_NE(logs.find("home ok"), std::string::npos) << logs;
  const v1::Attempt& attempt = job.tasks(0).attempts(0);
  // HOME and its caches are scratch, not outputs: only what the job wrote to /out comes back.
  ASSERT_EQ(attempt.outputs_size(), 1) << attempt.DebugString();
  EXPECT_EQ(attempt.outputs(0).path(), "home.txt");
  ExpectScratchGone(job);
}

TEST_P(MlSandboxE2E, ArrayTasksSharingASandboxEachGetTheirHome) {
  // Under runc, tasks of an array job run one after another in one pilot
  // sandbox (runtime/pilot_pool.h): HOME moves in and out with each task.
  const v1::Job job =
      SubmitAndWait(Manifest("homes", {"home", "80"}, "  memory: 512Mi\n  shm: 128Mi\narray: {count: 3}\n"));
  ASSERT_EQ(job.state(), v1::SUCCEEDED) << job.DebugString() << Logs(job.id());
  ASSERT_EQ(job.tasks_size(), 3);
  for (const v1::Task& task : job.tasks()) {
    ASSERT_GE(task.attempts_size(), 1);
    const v1::Attempt& last = task.attempts(task.attempts_size() - 1);
    ASSERT_EQ(last.outputs_size(), 1) << last.DebugString();
    EXPECT_EQ(last.outputs(0).path(), "home.txt");
  }
}

TEST_P(MlSandboxE2E, ShmIsCappedAtItsSize) {
  // The same job asking for more /dev/shm than it has: the tmpfs is full.
  const v1::Job job = SubmitAndWait(Manifest("shmfull", {"home", "96"}, "  memory: 512Mi\n  shm: 64Mi\n"));
  ASSERT_EQ(job.state(), v1::FAILED) << job.DebugString();
  const std::string logs = Logs(job.id());
  EXPECT_NE(logs.find("/dev/shm/fill: No space left on device"), std::string::npos) << logs << job.DebugString();
}

TEST_P(MlSandboxE2E, ManySmallCacheFilesPastTheDiskTotalFailAsDiskLimit) {
  // 4000 files of 128 KiB (500 MiB), each far below the largest file allowed,
  // into $XDG_CACHE_HOME: past the 256Mi total whether the watcher stops the
  // job on its way or the check before upload finds what it left.
  const v1::Job job = SubmitAndWait(Manifest("cachefill", {"cachefill", "4000", "128"}, "  disk: 256Mi\n"));
  ASSERT_EQ(job.state(), v1::FAILED) << job.DebugString();
  ASSERT_EQ(job.tasks_size(), 1);
  const v1::Task& task = job.tasks(0);
  EXPECT_EQ(task.failure_reason(), v1::DISK_LIMIT) << jobs::ReasonName(task.failure_reason()) << "\n" << Logs(job.id());
  EXPECT_NE(task.message().find("more than 256Mi (resources.disk)"), std::string::npos) << task.message();
  EXPECT_NE(task.message().find("its home, output and checkpoint directories"), std::string::npos) << task.message();
  EXPECT_EQ(task.attempts(0).outputs_size(), 0);
  ExpectScratchGone(job);
}

INSTANTIATE_TEST_SUITE_P(Drivers, MlSandboxE2E, ::testing::Values("runc", "podman"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace idlegrid::testing
