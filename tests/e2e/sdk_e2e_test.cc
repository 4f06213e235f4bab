// The Python SDK (sdk/python) against a real coordinator and agent: its
// example sweep prints each item's result, byte for byte what the same
// program computes on the host; and its live checks (sdk/python/tests/
// live_grid.py) see refusals that name the item or image at fault, a
// manifest submitted, logs, verified outputs, explain and cancel. Python and
// its packages (python3-grpcio, -protobuf, -tqdm, -yaml) are dependencies:
// missing, these tests fail.
#include <gtest/gtest.h>
#include <unistd.h>

#include "common/fs.h"
#include "e2e/harness.h"

namespace idlegrid::testing {
namespace {

const std::string kSource = IDLEGRID_SOURCE_DIR;

// The example's workload (examples/sweep/sim.c) as an image, built once per process.
std::string PiSimArchive() {
  static std::string archive;
  if (archive.empty()) {
    const std::string out = "/tmp/igtest-pi-sim-" + std::to_string(::getpid()) + ".tar";
    auto r = RunCommand({kSource + "/scripts/build-image.sh", kSource + "/examples/sweep/sim.c",
                         "localhost/igtest-pi-sim:" + std::to_string(::getpid()), out});
    if (r.exit_code != 0) {
      std::fprintf(stderr, "[sdk] building the pi-sim image failed (%d): %s%s\n", r.exit_code, r.out.c_str(),
                   r.err.c_str());
      return "";
    }
    archive = out;
  }
  return archive;
}

class SdkE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    grid_ = std::make_unique<Grid>(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(grid_->StartCoordinator().ok());
    Status started = grid_->StartAgent(1);
    ASSERT_TRUE(started.ok()) << started.message();
    const std::string archive = PiSimArchive();
    ASSERT_FALSE(archive.empty());
    auto pushed = grid_->Cli({"image", "push", archive});
    ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
    image_ = "pi-sim@" + Trim(pushed.out);
  }

  // Python with the SDK and its generated stubs, configured as the CLI is.
  CmdResult Python(std::vector<std::string> args) {
    // Only the grid's client.yaml: values in our own environment would win over it.
    std::vector<std::string> argv = {"env",
                                     "-u",
                                     "IDLEGRID_ADDR",
                                     "-u",
                                     "IDLEGRID_CA_FILE",
                                     "-u",
                                     "IDLEGRID_TOKEN",
                                     "IDLEGRID_CONFIG=" + grid_->client_yaml,
                                     "PYTHONPATH=" + std::string(IDLEGRID_PYTHONPATH),
                                     "IDLEGRID_BIN=" + grid_->binary(),
                                     "IDLEGRID_TEST_IMAGE=" + image_,
                                     "IDLEGRID_TEST_ARCHIVE=" + PiSimArchive(),
                                     IDLEGRID_PYTHON};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, 600);
  }

  std::unique_ptr<Grid> grid_;
  std::string image_;
};

TEST_F(SdkE2E, ExampleSweepPrintsEachItemsResultAsTheHostComputesIt) {
  const std::vector<std::string> samples = {"100000", "200000", "300000"};
  auto r = Python({kSource + "/sdk/python/examples/sweep.py", image_, "--samples", "100000,200000,300000"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("submitted j"), 0u) << r.out;
  EXPECT_NE(r.out.find(" SUCCEEDED: {'succeeded': 3}"), std::string::npos) << r.out;
  // The same program on the host, with each task's index and item, is the
  // truth the SDK's downloaded (and sha256-verified) result must equal.
  const std::string host_sim = grid_->root + "/sim-host";
  auto cc = RunCommand({"gcc", "-O2", "-o", host_sim, kSource + "/examples/sweep/sim.c"});
  ASSERT_EQ(cc.exit_code, 0) << cc.err;
  for (size_t i = 0; i < samples.size(); ++i) {
    const std::string dir = grid_->root + "/host-" + std::to_string(i);
    ASSERT_TRUE(MakeDirs(dir).ok());
    auto run = RunCommand({"env", "IDLEGRID_TASK_INDEX=" + std::to_string(i), host_sim, samples[i], dir});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    auto want = ReadFile(dir + "/result.txt");
    ASSERT_TRUE(want.ok());
    const std::string line = "item " + std::to_string(i) + " samples=" + samples[i] + ": " + Trim(*want) + "\n";
    EXPECT_NE(r.out.find(line), std::string::npos) << "missing: " << line << "in:\n" << r.out;
  }
}

TEST_F(SdkE2E, ExampleNamesAMissingImageAndExitsTwo) {
  auto r = Python({kSource + "/sdk/python/examples/sweep.py", "ghost@sha256:" + std::string(64, 'a')});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("submit refused (FAILED_PRECONDITION): image sha256:" + std::string(64, 'a') +
                       " is not in this coordinator's store"),
            std::string::npos)
      << r.err;
}

TEST_F(SdkE2E, LiveChecksPass) {
  auto r = Python({kSource + "/sdk/python/tests/live_grid.py", "-v"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("\nOK\n"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("skipped"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace idlegrid::testing
