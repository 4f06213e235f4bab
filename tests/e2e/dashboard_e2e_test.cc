// The web dashboard in a real browser: headless Chromium, driven by
// tests/e2e/dashboard_test.py through python3-selenium, against a real
// coordinator and agent. The script logs in with a token, lists the node,
// follows a running job's task to success without reloading, shows why a task
// waits, cancels that job with its button, and keeps screenshots; then, as a
// requester, pages through a 2,000-task job, filters it, reads a task's
// attempts and its log by stream and downloads an output; as the node's
// provider, drains and undrains the node and reads its earnings. This test
// owns the grid and checks through the CLI what the buttons did. The JSON
// routes the page polls (logs, history) are checked here with curl first.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "common/fs.h"
#include "e2e/harness.h"

namespace idlegrid::testing {
namespace {

constexpr const char* kPython = "/usr/bin/python3";  // Debian's, where python3-selenium is

// Where the screenshots go: $IDLEGRID_TEST_ARTIFACTS, else test-artifacts/
// beside the binary under test (the build directory).
std::string ArtifactsDir() {
  if (const char* dir = std::getenv("IDLEGRID_TEST_ARTIFACTS"); dir && *dir) return dir;
  return (std::filesystem::path(IDLEGRID_BINARY).parent_path() / "test-artifacts").string();
}

// What the browser needs, or why it is missing (a failure: scripts/install-deps.sh installs it).
std::string BrowserMissing() {
  for (const char* tool : {"/usr/bin/chromium", "/usr/bin/chromedriver", kPython}) {
    if (access(tool, X_OK) != 0) return std::string(tool) + " missing";
  }
  if (RunCommand({kPython, "-c", "import selenium"}).exit_code != 0) return "python3-selenium missing";
  return "";
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

TEST(DashboardE2E, ABrowserFollowsAJobExplainsAWaitingOneAndCancelsIt) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  if (std::string why = BrowserMissing(); !why.empty()) {
    FAIL() << why << ": scripts/install-deps.sh installs chromium, chromium-driver and python3-selenium";
  }
  Grid grid("DashboardE2E");
  ASSERT_TRUE(grid.StartCoordinator().ok());
  // The node joins under a provider account, whose token drains it in the page.
  ASSERT_EQ(grid.Cli({"account", "create", "pat", "--role", "provider"}).exit_code, 0);
  auto join = grid.Cli({"join-token", "create", "--provider", "pat"});
  ASSERT_EQ(join.exit_code, 0) << join.err;
  grid.agent_join_tokens[1] = Trimmed(join.out);
  auto pat = grid.Cli({"token", "create", "--account", "pat"});
  ASSERT_EQ(pat.exit_code, 0) << pat.err;
  const std::string pat_token = Trimmed(pat.out);
  Status started = grid.StartAgent(1);
  ASSERT_TRUE(started.ok()) << started.message();
  ASSERT_TRUE(
      grid.WaitNodes([](const v1::ListNodesResponse& l) { return l.nodes_size() == 1 && l.nodes(0).schedulable(); })
          .ok());

  // The page and its assets: served with their types and a policy that
  // forbids inline script.
  auto page = grid.Curl("/", {"-D", "-"});
  ASSERT_EQ(page.exit_code, 0) << page.err;
  EXPECT_NE(Lower(page.out).find("content-type: text/html"), std::string::npos) << page.out;
  EXPECT_NE(Lower(page.out).find("content-security-policy: default-src 'none'; script-src 'self';"), std::string::npos)
      << page.out;
  auto script = grid.Curl("/dashboard/app.js", {"-D", "-"});
  ASSERT_EQ(script.exit_code, 0) << script.err;
  EXPECT_NE(Lower(script.out).find("content-type: text/javascript"), std::string::npos) << script.out.substr(0, 400);

  // A job that runs long enough for the browser to see it running, and one
  // that can never be placed (more cores than the node has).
  auto running = grid.Cli({"submit", grid.Manifest("dash-running", {"sleep", "45"})});
  ASSERT_EQ(running.exit_code, 0) << running.err;
  const std::string running_id = Trim(running.out.substr(0, running.out.find('\n')));
  const std::string image = grid.PushTestImage();
  const std::string waiting_manifest =
      grid.WriteFile("dash-waiting.yaml", "apiVersion: idlegrid/v1\nname: dash-waiting\nimage: igtest@" + image +
                                              "\ncommand: [\"/sim\"]\nargs: [\"write\", \"never\"]\n"
                                              "resources:\n  cpu: 512\n  memory: 256Mi\n  pids: 64\noutput: /out\n");
  auto waiting = grid.Cli({"submit", waiting_manifest});
  ASSERT_EQ(waiting.exit_code, 0) << waiting.err;
  const std::string waiting_id = Trim(waiting.out.substr(0, waiting.out.find('\n')));
  auto now_running = grid.WaitJob(running_id, [](const v1::Job& j) { return j.tasks(0).state() == v1::RUNNING; });
  ASSERT_TRUE(now_running.ok());
  ASSERT_EQ(now_running->tasks(0).state(), v1::RUNNING);
  ASSERT_TRUE(grid.WaitForLog(running_id, "started"));

  // The routes the page polls: logs after a cursor, the load history.
  auto logs = grid.Curl("/v1/jobs/" + running_id + "/logs?after=0");
  ASSERT_EQ(logs.exit_code, 0) << logs.err << logs.out;
  EXPECT_NE(logs.out.find("\"chunks\":[{"), std::string::npos) << logs.out;
  const size_t next_at = logs.out.rfind("\"next\":");
  ASSERT_NE(next_at, std::string::npos) << logs.out;
  const std::string next = logs.out.substr(next_at + 7, logs.out.find('}', next_at) - next_at - 7);
  auto after = grid.Curl("/v1/jobs/" + running_id + "/logs?after=" + next);
  ASSERT_EQ(after.exit_code, 0) << after.err << after.out;
  EXPECT_NE(after.out.find("{\"chunks\":[],\"next\":" + next + "}"), std::string::npos)
      << "nothing new after the cursor: " << after.out;
  auto bad_cursor = grid.Curl("/v1/jobs/" + running_id + "/logs?after=x");
  EXPECT_NE(bad_cursor.exit_code, 0);
  EXPECT_NE(bad_cursor.out.find("InvalidArgument"), std::string::npos) << bad_cursor.out;
  auto history = grid.Curl("/v1/history");
  ASSERT_EQ(history.exit_code, 0) << history.err;
  EXPECT_NE(history.out.find("\"periodMs\":5000,\"samples\":[{\"atMs\":"), std::string::npos) << history.out;

  // A requester, for the landing view (requesters see no nodes), and her
  // jobs: one task writing to both streams, one writing outputs, then a
  // 2,000-task sweep that waits (each task asks for more cores than the node
  // has) with tasks 100-149 cancelled, so that it has a failure-reason group.
  ASSERT_EQ(grid.Cli({"account", "create", "rita", "--role", "requester"}).exit_code, 0);
  auto rita = grid.Cli({"token", "create", "--account", "rita"});
  ASSERT_EQ(rita.exit_code, 0) << rita.err;
  const std::string rita_token = Trimmed(rita.out);
  ASSERT_EQ(grid.Cli({"image", "push", Grid::TestImageArchive(), "--token", rita_token}).exit_code, 0);
  auto submit_as_rita = [&](const std::string& manifest) {
    auto out = grid.Cli({"submit", manifest, "--token", rita_token});
    EXPECT_EQ(out.exit_code, 0) << out.err;
    return Trim(out.out.substr(0, out.out.find('\n')));
  };
  const std::string streams_id = submit_as_rita(grid.Manifest("dash-streams", {"exit", "0"}));
  const std::string output_id = submit_as_rita(grid.Manifest("dash-output", {"write", "dash-out"}));
  for (const std::string& id : {streams_id, output_id}) {
    auto done = grid.WaitJob(id, [](const v1::Job& j) { return j.state() == v1::SUCCEEDED; });
    ASSERT_TRUE(done.ok()) << done.status().message();
    ASSERT_EQ(done->state(), v1::SUCCEEDED) << id;
  }
  const std::string sweep_id = submit_as_rita(
      grid.WriteFile("dash-sweep.yaml",
                     "apiVersion: idlegrid/v1\nname: dash-sweep\nimage: igtest@" + image +
                         "\ncommand: [\"/sim\"]\nargs: [\"write\", \"never\"]\n"
                         "resources:\n  cpu: 512\n  memory: 64Mi\n  pids: 16\noutput: /out\narray: {count: 2000}\n"));
  ASSERT_FALSE(sweep_id.empty());
  std::string some = "{\"taskIndices\":[";
  for (int i = 100; i < 150; ++i) some += (i > 100 ? "," : "") + std::to_string(i);
  auto cancelled = grid.Curl("/v1/jobs/" + sweep_id + "/cancel", {"-X", "POST", "-d", some + "]}"});
  ASSERT_EQ(cancelled.exit_code, 0) << cancelled.err << cancelled.out;

  const std::string artifacts = ArtifactsDir();
  std::vector<std::string> argv = {kPython,
                                   std::string(IDLEGRID_SOURCE_DIR) + "/tests/e2e/dashboard_test.py",
                                   "--url",
                                   "https://" + grid.http_addr,
                                   "--token",
                                   grid.admin_token,
                                   "--running-job",
                                   running_id,
                                   "--waiting-job",
                                   waiting_id,
                                   "--explain-contains",
                                   "insufficient CPU (need 512 cores)",
                                   "--artifacts",
                                   artifacts,
                                   "--requester-token",
                                   rita_token,
                                   "--provider-token",
                                   pat_token,
                                   "--sweep-job",
                                   sweep_id,
                                   "--streams-job",
                                   streams_id,
                                   "--output-job",
                                   output_id,
                                   "--output-text",
                                   "dash-out from task 0\n"};
  for (const auto& node : grid.node_ids) {
    argv.push_back("--node");
    argv.push_back(node);
  }
  auto browser = RunCommand(argv, 400);
  std::cout << browser.out << browser.err;
  ASSERT_EQ(browser.exit_code, 0) << browser.out << browser.err;
  EXPECT_NE(browser.out.find("SCREENSHOT " + artifacts + "/dashboard-fleet.png"), std::string::npos);
  EXPECT_TRUE(std::filesystem::file_size(artifacts + "/dashboard-fleet.png") > 0);

  // What the buttons did, as the API sees it.
  auto status = grid.Cli({"status", waiting_id, "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  auto job = ParseJson<v1::Job>(status.out);
  EXPECT_EQ(job.state(), v1::CANCELLED);
  EXPECT_EQ(job.tasks(0).state(), v1::CANCELLED);
  auto done = grid.Cli({"status", running_id, "--json"});
  ASSERT_EQ(done.exit_code, 0) << done.err;
  EXPECT_EQ(ParseJson<v1::Job>(done.out).state(), v1::SUCCEEDED);
  // The sweep's cancel was dismissed: it still waits, all but the 50 cancelled.
  auto sweep_read = grid.Curl("/v1/jobs/" + sweep_id + "?paged=1");
  ASSERT_EQ(sweep_read.exit_code, 0) << sweep_read.err << sweep_read.out;
  const auto sweep = ParseJson<v1::Job>(sweep_read.out);
  EXPECT_EQ(sweep.state(), v1::QUEUED);
  ASSERT_EQ(sweep.task_counts().count("queued"), 1u) << sweep_read.out;
  EXPECT_EQ(sweep.task_counts().at("queued"), 1950u);
  // Drained, then undrained: the node takes work again.
  auto nodes =
      grid.WaitNodes([](const v1::ListNodesResponse& l) { return l.nodes_size() == 1 && l.nodes(0).schedulable(); });
  ASSERT_TRUE(nodes.ok()) << nodes.status().message();
  EXPECT_TRUE(nodes->nodes(0).schedulable()) << nodes->nodes(0).unschedulable_reason();
}

}  // namespace
}  // namespace idlegrid::testing
