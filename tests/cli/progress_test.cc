// Progress of long CLI operations (cli/progress.h): what a bar, plain lines
// and --json print.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "cli/progress.h"

namespace idlegrid::cli {
namespace {

TEST(ProgressTest, StyleFollowsJsonThenTerminal) {
  EXPECT_EQ(ChooseProgressStyle(true, true), ProgressStyle::kNone);
  EXPECT_EQ(ChooseProgressStyle(true, false), ProgressStyle::kNone);
  EXPECT_EQ(ChooseProgressStyle(false, true), ProgressStyle::kBar);
  EXPECT_EQ(ChooseProgressStyle(false, false), ProgressStyle::kLines);
}

TEST(ProgressTest, PercentAndBarRoundDownAndReachFullOnlyWhenDone) {
  struct Case {
    uint64_t done, total;
    int percent;
    const char* bar;
  };
  const Case cases[] = {
      {0, 10, 0, "[----------]"},
      {1, 10, 10, "[#---------]"},
      {19, 20, 95, "[#########-]"},
      {999, 1000, 99, "[#########-]"},
      {10, 10, 100, "[##########]"},
      {0, 0, 100, "[##########]"},
      {12, 10, 100, "[##########]"},  // more than announced: shown as done, never past it
      {UINT64_MAX / 2, UINT64_MAX, 49, "[####------]"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(PercentDone(c.done, c.total), c.percent) << c.done << "/" << c.total;
    EXPECT_EQ(Bar(c.done, c.total, 10), c.bar) << c.done << "/" << c.total;
  }
}

TEST(ProgressTest, BytesTruncatedToOneDecimal) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes((1ull << 20) - 1), "1023.9 KiB");
  EXPECT_EQ(FormatBytes(28'000'000), "26.7 MiB");
  EXPECT_EQ(FormatBytes(3ull << 30), "3.0 GiB");
  EXPECT_EQ(TransferText("pushing a.tar", 12ull << 20, 28'000'000), "pushing a.tar: 12.0 MiB of 26.7 MiB (44%)");
}

v1::Job ArrayJob() {
  v1::Job job;
  auto& counts = *job.mutable_task_counts();
  counts["succeeded"] = 5;
  counts["failed"] = 1;
  counts["cancelled"] = 1;
  counts["running"] = 2;
  counts["queued"] = 1;
  counts["lost"] = 0;
  return job;
}

TEST(ProgressTest, JobProgressCountsEndedTasksAndListsStatesInAFixedOrder) {
  const JobTally t = TallyOf(ArrayJob());
  EXPECT_EQ(t.total, 10u);
  EXPECT_EQ(t.ended, 7u);
  EXPECT_EQ(JobProgressText(ArrayJob()),
            "7/10 tasks ended (70%): 5 succeeded, 1 failed, 1 cancelled, 2 running, 1 queued");
}

TEST(ProgressDisplayTest, BarRedrawsInPlaceAndPadsOverALongerLine) {
  std::ostringstream out;
  ProgressDisplay d(out, ProgressStyle::kBar, ProgressDisplay::LineEvery::kChange, 4);
  d.Update(1, 4, "long text");
  d.Update(4, 4, "done");
  d.Finish();
  EXPECT_EQ(out.str(), "\r[#---] long text\r[####] done     \n");
}

TEST(ProgressDisplayTest, ClearErasesTheBarForOtherOutput) {
  std::ostringstream out;
  ProgressDisplay d(out, ProgressStyle::kBar, ProgressDisplay::LineEvery::kTenth, 2);
  d.Update(1, 2, "ab");
  d.Clear();
  d.Finish();  // nothing drawn since the clear: no empty line
  EXPECT_EQ(out.str(), "\r[#-] ab\r       \r");
}

TEST(ProgressDisplayTest, LinesForBytesOnlyAtEachTenth) {
  std::ostringstream out;
  ProgressDisplay d(out, ProgressStyle::kLines, ProgressDisplay::LineEvery::kTenth);
  for (uint64_t done = 0; done <= 100; done += 5) d.Update(done, 100, "at " + std::to_string(done));
  d.Finish();
  EXPECT_EQ(out.str(), "at 0\nat 10\nat 20\nat 30\nat 40\nat 50\nat 60\nat 70\nat 80\nat 90\nat 100\n");
}

TEST(ProgressDisplayTest, LinesForAJobWhenItsTextChanges) {
  std::ostringstream out;
  ProgressDisplay d(out, ProgressStyle::kLines, ProgressDisplay::LineEvery::kChange);
  d.Update(0, 2, "a");
  d.Update(1, 2, "a");
  d.Update(1, 2, "b");
  d.Finish();
  EXPECT_EQ(out.str(), "a\nb\n");
}

TEST(ProgressDisplayTest, JsonPrintsNothing) {
  std::ostringstream out;
  ProgressDisplay d(out, ProgressStyle::kNone, ProgressDisplay::LineEvery::kChange);
  d.Update(1, 2, "a");
  d.Finish();
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace idlegrid::cli
