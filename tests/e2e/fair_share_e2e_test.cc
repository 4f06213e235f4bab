// End to end (issue 11): one account's long queue does not starve another's
// short one. The operator queues 16 tasks on an agent with 2 cores; alice
// then submits 2: her first starts when the next slot opens, while most of
// the operator's are still queued.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "e2e/harness.h"

namespace idlegrid::testing {
namespace {

std::string TrimmedLine(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

int Count(const v1::Job& job, v1::TaskState state) {
  int n = 0;
  for (const auto& t : job.tasks()) n += t.state() == state;
  return n;
}

TEST(FairShareE2E, ASmallAccountsTasksStartAtTheNextSlotNotAfterTheBigQueue) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("FairShare");
  ASSERT_TRUE(grid.StartCoordinator().ok());
  Status st = grid.StartAgent(1);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(grid.Cli({"account", "create", "alice", "--role", "requester"}).exit_code, 0);
  auto token = grid.Cli({"token", "create", "--account", "alice"});
  ASSERT_EQ(token.exit_code, 0) << token.err;
  const std::string alice = TrimmedLine(token.out);

  // The operator's long queue: 16 one-core tasks of 3 s on 2 cores.
  const std::string big = grid.Manifest("big", {"sleep", "3"}, "array:\n  count: 16\n");
  auto submitted = grid.Cli({"submit", big, "--json"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  v1::Job big_job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(submitted.out, &big_job).ok());
  auto busy = grid.WaitJob(big_job.id(), [](const v1::Job& j) { return Count(j, v1::RUNNING) >= 2; });
  ASSERT_TRUE(busy.ok()) << busy.status().ToString();

  // alice, with her own copy of the image, queues 2 behind them.
  const std::string archive = "/tmp/igtest-image-" + std::to_string(::getpid()) + ".tar";
  ASSERT_EQ(grid.Cli({"image", "push", archive, "--token", alice}).exit_code, 0);
  const std::string small = grid.Manifest("small", {"sleep", "1"}, "array:\n  count: 2\n");
  auto mine = grid.Cli({"submit", small, "--json", "--token", alice});
  ASSERT_EQ(mine.exit_code, 0) << mine.err;
  v1::Job small_job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(mine.out, &small_job).ok());
  auto started = grid.WaitJob(small_job.id(),
                              [](const v1::Job& j) { return Count(j, v1::RUNNING) + Count(j, v1::SUCCEEDED) >= 1; });
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  auto big_now = grid.WaitJob(big_job.id(), [](const v1::Job&) { return true; });  // as it stands now
  ASSERT_TRUE(big_now.ok()) << big_now.status().ToString();
  // First come, first served would start alice only after all 16; fair share
  // gives her the first slot that opens (at most the two running then and
  // one more per slot finished meanwhile have left the queue).
  EXPECT_GE(Count(*big_now, v1::QUEUED), 10) << "alice waited for most of the operator's queue";
  auto explain = grid.Cli({"status", big_job.id(), "--explain"});
  EXPECT_EQ(explain.exit_code, 0) << explain.err;
  EXPECT_NE(explain.out.find("fair share"), std::string::npos) << explain.out;
}

}  // namespace
}  // namespace idlegrid::testing
