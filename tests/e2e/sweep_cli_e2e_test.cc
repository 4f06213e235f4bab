// End to end (issue 30, the CLI): a 2,000-task job through the real CLI and
// a real coordinator. No node has joined, so every task waits, and one
// reason explains them all. `status` stays under 40 lines; `--state` and
// `--tasks` list exactly the tasks asked (and say how many more matched);
// `--explain` is one group for the 2,000; a malformed selection is refused
// with exit 2 before anything is asked of the coordinator.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/harness.h"

namespace idlegrid::testing {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The indices of the "  task N: ..." lines `status` printed.
std::vector<int> ListedTasks(const std::string& text) {
  std::vector<int> out;
  for (const std::string& line : Lines(text)) {
    if (line.rfind("  task ", 0) == 0) out.push_back(std::stoi(line.substr(7)));
  }
  return out;
}

TEST(SweepCliE2E, TwoThousandTasksStayReadableAndFiltersSelectExactlyWhatIsAsked) {
  Grid grid("SweepCli");
  ASSERT_TRUE(grid.StartCoordinator().ok());
  const std::string manifest = grid.Manifest("sweep", {"sleep", "1"}, "array:\n  count: 2000\n");
  auto submitted = grid.Cli({"submit", manifest, "--json"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string id = ParseJson<v1::Job>(submitted.out).id();
  ASSERT_FALSE(id.empty()) << submitted.out;

  auto status = grid.Cli({"status", id});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_LT(Lines(status.out).size(), 40u) << status.out;
  EXPECT_NE(status.out.find("2000/2000 queued"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("(2000 tasks: list some with --tasks"), std::string::npos) << status.out;
  EXPECT_TRUE(ListedTasks(status.out).empty()) << status.out;

  auto queued = grid.Cli({"status", id, "--state", "queued", "--limit", "5"});
  ASSERT_EQ(queued.exit_code, 0) << queued.err;
  EXPECT_EQ(ListedTasks(queued.out), (std::vector<int>{0, 1, 2, 3, 4})) << queued.out;
  EXPECT_NE(queued.out.find("... 1995 more task(s) match"), std::string::npos) << queued.out;

  auto picked = grid.Cli({"status", id, "--tasks", "3,7-9,1999"});
  ASSERT_EQ(picked.exit_code, 0) << picked.err;
  EXPECT_EQ(ListedTasks(picked.out), (std::vector<int>{3, 7, 8, 9, 1999})) << picked.out;

  auto none = grid.Cli({"status", id, "--state", "failed"});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_TRUE(ListedTasks(none.out).empty()) << none.out;

  auto explain = grid.Cli({"status", id, "--explain"});
  ASSERT_EQ(explain.exit_code, 0) << explain.err;
  const std::vector<std::string> explained = Lines(explain.out);
  ASSERT_FALSE(explained.empty());
  EXPECT_EQ(explained[0].rfind("2000 tasks wait (tasks 0-1999): ", 0), 0u) << explain.out;
  EXPECT_EQ(std::count_if(explained.begin(), explained.end(),
                          [](const std::string& l) { return l.find(" wait (tasks ") != std::string::npos; }),
            1)
      << explain.out;

  auto bad = grid.Cli({"status", id, "--tasks", "9-3"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  auto bad_stream = grid.Cli({"logs", id, "--stream", "stdin"});
  EXPECT_EQ(bad_stream.exit_code, 2) << bad_stream.out << bad_stream.err;
  EXPECT_NE(bad_stream.err.find("--stream must be stdout or stderr"), std::string::npos) << bad_stream.err;
}

}  // namespace
}  // namespace idlegrid::testing
