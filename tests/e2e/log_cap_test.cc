// End to end: a job flooding stdout cannot fill the coordinator's store. Past
// the log cap only the first and last part of a task's output are kept, with
// a note between, and `status` says how much was dropped.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <string>

#include "e2e/harness.h"

namespace idlegrid::testing {
namespace {

constexpr uint64_t kCap = 64 * 1024;  // head and tail each
constexpr uint64_t kFloodMiB = 16;

class LogCapE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    grid_ = std::make_unique<Grid>("LogCap");
    ASSERT_TRUE(
        grid_->StartCoordinator({"--log-head-bytes", std::to_string(kCap), "--log-tail-bytes", std::to_string(kCap)})
            .ok());
    Status st = grid_->StartAgent(1);
    ASSERT_TRUE(st.ok()) << st.message();
  }
  std::unique_ptr<Grid> grid_;
};

TEST_F(LogCapE2E, AFloodingJobKeepsOnlyTheHeadAndTheTailOfItsOutput) {
  auto r = grid_->Cli({"submit", grid_->Manifest("flood", {"flood", std::to_string(kFloodMiB)}), "--wait", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  v1::Job job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &job).ok()) << r.out;
  ASSERT_EQ(job.state(), v1::SUCCEEDED);
  const uint64_t total = kFloodMiB * 1024 * 1024 + std::string("flood done\n").size();
  const uint64_t dropped = job.tasks(0).logs_dropped_bytes();
  // Whole tail rows are evicted, so the tail keeps between 0 and kCap bytes.
  EXPECT_GE(dropped, total - 2 * kCap);
  EXPECT_LE(dropped, total - kCap);

  auto logs = grid_->Cli({"logs", job.id()});
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_LE(logs.out.size(), 2 * kCap + 1024) << "more than the cap was kept";
  EXPECT_GE(logs.out.size(), kCap) << "the head is kept whole";
  EXPECT_EQ(logs.out.find('x'), 0u) << "the output starts with the job's own first bytes";
  const size_t note = logs.out.find("[idlegrid] this task's output passed");
  EXPECT_NE(note, std::string::npos) << "no note where the middle was dropped";
  EXPECT_EQ(note, logs.out.find("[idlegrid]")) << "one note only";
  EXPECT_NE(logs.out.rfind("flood done\n"), std::string::npos) << "the last line is in the kept tail";
}

}  // namespace
}  // namespace idlegrid::testing
