// End to end (issue 30, the CLI): a 2,000-task job through the real CLI and
// a real coordinator. No node has joined, so every task waits, and one
// reason explains them all. `status` stays under 40 lines; `--state` and
// `--tasks` list exactly the tasks asked (and say how many more matched);
// `--explain` is one group for the 2,000; a malformed selection is refused
// with exit 2 before anything is asked of the coordinator. Over HTTPS the
// same job comes a page at a time (server-side), and a poll of a page that
// did not change is a 304 with no body.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
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

// The header `name` of a curl -D - dump (case-insensitive name), "" if absent.
std::string Header(const std::string& dump, const std::string& name) {
  for (std::string line : Lines(dump)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.size() > name.size() && line[name.size()] == ':' &&
        std::equal(name.begin(), name.end(), line.begin(),
                   [](char a, char b) { return std::tolower(a) == std::tolower(b); })) {
      const size_t value = line.find_first_not_of(' ', name.size() + 1);
      return value == std::string::npos ? "" : line.substr(value);
    }
  }
  return "";
}

TEST(SweepCliE2E, HttpsPagesALargeJobAndAnUnchangedPollIsANotModified) {
  Grid grid("SweepHttp");
  ASSERT_TRUE(grid.StartCoordinator().ok());
  const std::string manifest = grid.Manifest("sweep", {"sleep", "1"}, "array:\n  count: 2000\n");
  auto submitted = grid.Cli({"submit", manifest, "--json"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string id = ParseJson<v1::Job>(submitted.out).id();

  auto page = grid.Curl("/v1/jobs/" + id + "?state=queued&offset=100&limit=3");
  ASSERT_EQ(page.exit_code, 0) << page.err << page.out;
  const v1::Job paged = ParseJson<v1::Job>(page.out);
  ASSERT_EQ(paged.tasks_size(), 3) << page.out.substr(0, 400);
  EXPECT_EQ(paged.tasks(0).index(), 100u);
  EXPECT_EQ(paged.tasks(2).index(), 102u);
  EXPECT_TRUE(paged.tasks_paged());
  EXPECT_EQ(paged.tasks_matched(), 2000u);
  EXPECT_EQ(paged.summary().tasks(), 2000u);
  EXPECT_LT(page.out.size(), 50u * 1024) << "a page of a 2,000-task job is small";

  auto summary = grid.Curl("/v1/jobs/" + id + "?paged=1");
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  EXPECT_EQ(ParseJson<v1::Job>(summary.out).tasks_size(), 0);
  auto picked = grid.Curl("/v1/jobs/" + id + "?tasks=5,1999,7-8&state=QUEUED");
  ASSERT_EQ(picked.exit_code, 0) << picked.err;
  const v1::Job picked_job = ParseJson<v1::Job>(picked.out);
  ASSERT_EQ(picked_job.tasks_size(), 4);
  EXPECT_EQ(picked_job.tasks(3).index(), 1999u);

  auto too_big = grid.Curl("/v1/jobs/" + id + "?limit=5000");
  EXPECT_NE(too_big.exit_code, 0);
  EXPECT_NE(too_big.out.find("offset"), std::string::npos) << too_big.out;
  auto bad_state = grid.Curl("/v1/jobs/" + id + "?state=pending");
  EXPECT_NE(bad_state.exit_code, 0);
  EXPECT_NE(bad_state.out.find("unknown task state 'pending'"), std::string::npos) << bad_state.out;

  // Revalidation: the same page again with its ETag is a 304 and no body.
  auto first = grid.Curl("/v1/jobs/" + id + "?limit=50", {"-D", "-", "-o", "/dev/null"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string etag = Header(first.out, "ETag");
  ASSERT_FALSE(etag.empty()) << first.out;
  EXPECT_EQ(Header(first.out, "Cache-Control"), "no-cache");
  auto again =
      grid.Curl("/v1/jobs/" + id + "?limit=50",
                {"-D", "-", "-o", "/dev/null", "-w", "%{http_code} %{size_download}", "-H", "If-None-Match: " + etag});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("304 0"), std::string::npos) << again.out;
  // Once something changed (a task cancelled), the page is sent again.
  ASSERT_EQ(grid.Cli({"cancel", id, "--tasks", "0"}).exit_code, 0);
  auto changed = grid.Curl("/v1/jobs/" + id + "?limit=50",
                           {"-o", "/dev/null", "-w", "%{http_code}", "-H", "If-None-Match: " + etag});
  ASSERT_EQ(changed.exit_code, 0) << changed.err;
  EXPECT_EQ(changed.out, "200");
}

}  // namespace
}  // namespace idlegrid::testing
