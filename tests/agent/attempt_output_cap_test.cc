// Whole attempts past their total disk cap (resources.disk, else the
// node's default), through AttemptRunner with the fakes: killed while they
// run or stopped at collect, reported as DISK_LIMIT, nothing uploaded, and
// their files gone before the coordinator hears of it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "agent/attempt_fixture_support.h"
#include "common/fs.h"

namespace idlegrid::agent {
namespace {

using testing::AttemptRunnerTest;
using testing::Exit;

constexpr uint64_t kMiB = 1ull << 20;

class OutputCapTest : public AttemptRunnerTest {
 protected:
  v1::Assignment Capped(uint64_t total_bytes) {
    v1::Assignment a = Assignment();
    a.mutable_spec()->mutable_resources()->set_disk_bytes(kMiB);
    a.mutable_spec()->mutable_resources()->set_output_bytes(total_bytes);
    return a;
  }
  // Notes, at the final report, whether the scratch was still there.
  void WatchTheFinalReport() {
    reporter_.on_report = [this](const v1::ReportAttemptRequest& r) {
      if (r.event() == v1::ERRORED || r.event() == v1::EXITED) scratch_at_report_ = PathExists(Scratch());
    };
  }
  bool scratch_at_report_ = true;
};

TEST_F(OutputCapTest, AJobWritingPastItsTotalWhileRunningIsKilledAsOutputLimit) {
  bool killed = false;
  runtime_.while_running = [&](const runtime::RunSpec& spec) {
    scratch_seen_ = PathExists(Scratch());
    // Three files of 1 MiB each, under the per-file cap, past the 2 MiB total;
    // then it would run on until stopped.
    for (int i = 0; i < 3; ++i) {
      std::ofstream(spec.mounts[0].host_path + "/part" + std::to_string(i), std::ios::binary) << std::string(kMiB, 'x');
    }
    killed = runtime_.WaitForKill(std::chrono::seconds(10));
    runtime::ExitInfo gone = Exit(137);
    gone.killed = true;
    runtime_.exit = gone;
  };
  WatchTheFinalReport();
  Run(Capped(2 * kMiB));

  EXPECT_TRUE(killed) << "the watcher never stopped the container";
  EXPECT_EQ(runtime_.Killed(), std::vector<std::string>{"idlegrid-n1-a1"});
  EXPECT_EQ(EventNames(), "ACCEPTED STARTED ERRORED");
  EXPECT_EQ(Last().failure_reason(), v1::DISK_LIMIT);
  EXPECT_EQ(Last().message(),
            "wrote more than 2Mi (resources.disk) to its home, output and checkpoint directories; killed");
  EXPECT_EQ(Last().outputs_size(), 0);
  EXPECT_TRUE(artifacts_.Uploaded().empty());
  // Its files are gone before the coordinator, which may send the next task
  // here on this report, hears of it.
  EXPECT_TRUE(scratch_seen_);
  EXPECT_FALSE(scratch_at_report_);
  ExpectCleanedUp();
}

TEST_F(OutputCapTest, WhatTheWatcherMissedIsCaughtBeforeAnyUpload) {
  // The job ends before the watcher's next look: the check at collect
  // judges what it left, under the node's default for a job that sets none.
  output_watch_interval_ = std::chrono::hours(1);
  default_output_bytes_ = kMiB;
  runtime_.outputs = {{"small.txt", "ok"}, {"big.bin", std::string(2 * kMiB, 'x')}};
  WatchTheFinalReport();
  Run(Assignment());

  EXPECT_TRUE(runtime_.Killed().empty());
  EXPECT_EQ(EventNames(), "ACCEPTED STARTED ERRORED");
  EXPECT_EQ(Last().failure_reason(), v1::DISK_LIMIT);
  EXPECT_EQ(Last().message(),
            "left more than 1Mi (this node's default for jobs that set no resources.disk) in its home, output and "
            "checkpoint directories; no output was uploaded");
  EXPECT_TRUE(artifacts_.Uploaded().empty()) << "not even the small file";
  EXPECT_FALSE(scratch_at_report_);
  ExpectCleanedUp();
}

TEST_F(OutputCapTest, ACheckpointPastTheCapCountsAndIsNotSyncedAgain) {
  // A failed checkpointing job normally syncs its checkpoint once more; one
  // whose checkpoint is what passed the cap sends nothing more.
  output_watch_interval_ = std::chrono::hours(1);
  v1::Assignment a = Capped(2 * kMiB);
  a.mutable_spec()->set_checkpoint_path("/ckpt");
  a.mutable_spec()->set_checkpoint_interval_seconds(3600);
  runtime_.checkpoint_files = {{"state", std::string(3 * kMiB, 's')}};
  runtime_.outputs = {{"result.txt", "partial"}};
  runtime_.exit = Exit(1);
  Run(a);

  EXPECT_EQ(EventNames(), "ACCEPTED STARTED ERRORED");
  EXPECT_EQ(Last().failure_reason(), v1::DISK_LIMIT);
  EXPECT_TRUE(artifacts_.Uploaded().empty());
  ExpectCleanedUp();
}

TEST_F(OutputCapTest, WhatTheJobWritesToItsHomeCountsInItsTotal) {
  bool killed = false;
  bool cache_writable = false;
  runtime_.while_running = [&](const runtime::RunSpec& spec) {
    auto home = std::find_if(spec.mounts.begin(), spec.mounts.end(),
                             [](const runtime::Mount& m) { return m.container_path == "/home/job"; });
    ASSERT_NE(home, spec.mounts.end());
    // A cache (pip's, torch's) fills HOME, not the outputs: 3 MiB past the 2 MiB total.
    const std::string cache = home->host_path + "/.cache";
    cache_writable = ::access(cache.c_str(), W_OK) == 0;
    for (int i = 0; i < 3; ++i) {
      std::ofstream(cache + "/blob" + std::to_string(i), std::ios::binary) << std::string(kMiB, 'c');
    }
    killed = runtime_.WaitForKill(std::chrono::seconds(10));
    runtime::ExitInfo gone = Exit(137);
    gone.killed = true;
    runtime_.exit = gone;
  };
  WatchTheFinalReport();
  Run(Capped(2 * kMiB));

  EXPECT_TRUE(cache_writable);
  EXPECT_TRUE(killed) << "the watcher never stopped the container";
  EXPECT_EQ(Last().failure_reason(), v1::DISK_LIMIT);
  EXPECT_FALSE(scratch_at_report_) << "HOME goes with the scratch";
  ExpectCleanedUp();
}

TEST_F(OutputCapTest, WithinItsTotalTheJobSucceedsWithItsOutputs) {
  runtime_.outputs = {{"a.bin", std::string(kMiB / 2, 'a')}, {"b.bin", std::string(kMiB / 2, 'b')}};
  Run(Capped(2 * kMiB));
  EXPECT_EQ(EventNames(), "ACCEPTED STARTED EXITED");
  EXPECT_EQ(Last().outputs_size(), 2);
  EXPECT_TRUE(runtime_.Killed().empty());
  ExpectCleanedUp();
}

}  // namespace
}  // namespace idlegrid::agent
