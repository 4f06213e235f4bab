// End to end (issue 11): a job writing 100 files of 100 MiB under a 1 GiB
// total cap (resources.disk) fails with a clear reason, nothing of its
// outputs reaches the coordinator, and the node's disk is cleaned.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "e2e/harness.h"
#include "jobs/task_state.h"

namespace idlegrid::testing {
namespace {

constexpr int kFiles = 100;
constexpr int kFileMiB = 100;

class OutputCapE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    grid_ = std::make_unique<Grid>(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(grid_->StartCoordinator().ok());
  }
  void StartAgent(const std::vector<std::string>& extra = {}) {
    Status st = grid_->StartAgent(1, extra);
    ASSERT_TRUE(st.ok()) << st.message();
  }
  // A `testprog fill FILES MIB` job; `resources` is appended to its resources.
  std::string FillManifest(int files, int mib, const std::string& resources) {
    const std::string image = grid_->PushTestImage();
    EXPECT_FALSE(image.empty());
    return grid_->WriteFile("fill.yaml", "apiVersion: idlegrid/v1\nname: fill\nimage: igtest@" + image +
                                             "\ncommand: [\"/sim\"]\nargs: [\"fill\", \"" + std::to_string(files) +
                                             "\", \"" + std::to_string(mib) +
                                             "\"]\nresources:\n  cpu: 1\n  memory: 256Mi\n  pids: 64\n" + resources +
                                             "output: /out\nrunTimeout: 5m\n");
  }
  v1::Job SubmitAndWait(const std::string& manifest) {
    const auto start = std::chrono::steady_clock::now();
    auto r = grid_->Cli({"submit", manifest, "--wait", "--json"});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "[output-cap] submit --wait took %.1f s\n", seconds);
    v1::Job job;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &job).ok()) << r.out << r.err;
    return job;
  }
  std::unique_ptr<Grid> grid_;
};

TEST_F(OutputCapE2E, AJobWriting100FilesOf100MiBUnderA1GiBCapFailsAndTheNodesDiskIsCleaned) {
  StartAgent();
  // Each file is within the per-file cap (maxFileSize); together they pass the total (disk).
  const v1::Job job = SubmitAndWait(FillManifest(kFiles, kFileMiB, "  maxFileSize: 128Mi\n  disk: 1Gi\n"));

  ASSERT_EQ(job.state(), v1::FAILED);
  ASSERT_EQ(job.tasks_size(), 1);
  const v1::Task& task = job.tasks(0);
  EXPECT_EQ(task.failure_reason(), v1::DISK_LIMIT) << jobs::ReasonName(task.failure_reason());
  EXPECT_EQ(task.message(),
            "wrote more than 1Gi (resources.disk) to its home, output and checkpoint directories; killed");
  ASSERT_EQ(task.attempts_size(), 1);
  const v1::Attempt& attempt = task.attempts(0);
  EXPECT_EQ(attempt.failure_reason(), v1::DISK_LIMIT);
  EXPECT_EQ(attempt.outputs_size(), 0) << "no output of an attempt past its cap is uploaded";

  // It was stopped on its way, not left to finish.
  auto logs = grid_->Cli({"logs", job.id()});
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_NE(logs.out.find("writing /out/fill-0\n"), std::string::npos) << logs.out;
  EXPECT_EQ(logs.out.find("filled"), std::string::npos) << "the job wrote all 10 GiB";
  size_t started = 0;
  for (size_t at = logs.out.find("writing "); at != std::string::npos; at = logs.out.find("writing ", at + 1)) {
    ++started;
  }
  std::fprintf(stderr, "[output-cap] stopped while writing file %zu of %d (%d MiB each)\n", started, kFiles, kFileMiB);

  // The attempt's scratch is gone by the time its end is reported, and no
  // blob of its files reached the coordinator's artifact store.
  const std::string scratch = grid_->AgentDataDir(1) + "/state/attempts/" + attempt.id();
  EXPECT_FALSE(std::filesystem::exists(scratch)) << scratch << " left behind";
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(grid_->coordinator_dir + "/artifacts", ec)) {
    if (entry.is_regular_file()) {
      EXPECT_LT(entry.file_size(), uint64_t{kFileMiB} << 20) << entry.path() << " looks like an output";
    }
  }
  EXPECT_FALSE(ec) << ec.message();
}

TEST_F(OutputCapE2E, AJobThatSetsNoTotalIsHeldToTheAgentsDefault) {
  StartAgent({"--default-attempt-disk", "256Mi"});
  const v1::Job job = SubmitAndWait(FillManifest(20, kFileMiB, ""));
  ASSERT_EQ(job.state(), v1::FAILED);
  EXPECT_EQ(job.tasks(0).failure_reason(), v1::DISK_LIMIT);
  EXPECT_EQ(job.tasks(0).message(),
            "wrote more than 256Mi (this node's default for jobs that set no resources.disk) to its home, output "
            "and checkpoint directories; killed");
}

}  // namespace
}  // namespace idlegrid::testing
