// End to end: a real coordinator and real agents (separate processes, agents
// as unprivileged users, rootless podman), TLS on loopback.
#include <gtest/gtest.h>
#include <google/protobuf/util/json_util.h>
#include <pwd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "common/digest.h"
#include "common/fs.h"
#include "e2e/harness.h"

namespace idlegrid::testing {
namespace {

v1::Job ParseJob(const std::string& json) {
  v1::Job job;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &job).ok()) << json;
  return job;
}

bool Ended(const v1::Job& j) {
  return j.tasks_size() > 0 && (j.state() == v1::SUCCEEDED || j.state() == v1::FAILED || j.state() == v1::CANCELLED);
}

// A coordinator alone: for what needs no agent (and so no podman).
class CoordinatorOnly : public ::testing::Test {
 protected:
  void SetUp() override { StartGrid(); }
  void StartGrid() {
    grid_ = std::make_unique<Grid>(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(grid_->StartCoordinator().ok());
  }
  void StartAgents(int n) {
    for (int i = 1; i <= n; ++i) {
      Status st = grid_->StartAgent(i);
      ASSERT_TRUE(st.ok()) << st.message();
    }
  }
  std::string Submit(const std::string& manifest) {
    auto r = grid_->Cli({"submit", manifest});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Trim(r.out);
  }
  std::unique_ptr<Grid> grid_;
};

// A coordinator and agents running containers: skipped, saying why, where
// podman is missing.
class E2E : public CoordinatorOnly {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    StartGrid();
  }
};

TEST_F(E2E, SubmitRunsInPodmanAndFetchVerifiesOutputs) {
  StartAgents(2);
  auto r = grid_->Cli({"submit", grid_->Manifest("hello", {"write", "greetings"}), "--wait", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  v1::Job job = ParseJob(r.out);
  ASSERT_EQ(job.state(), v1::SUCCEEDED);
  ASSERT_EQ(job.tasks_size(), 1);
  const v1::Attempt& a = job.tasks(0).attempts(0);
  EXPECT_EQ(a.runtime(), "runc");
  EXPECT_EQ(a.exit_code(), 0);
  ASSERT_EQ(a.outputs_size(), 2);

  std::string out_dir = grid_->root + "/fetched";
  auto f = grid_->Cli({"fetch", job.id(), out_dir});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  for (const auto& o : a.outputs()) {
    std::string path = out_dir + "/task-0/" + o.path();
    auto digest = Sha256File(path);
    ASSERT_TRUE(digest.ok()) << path;
    EXPECT_EQ(*digest, o.digest()) << path;
  }
  auto hello = ReadFile(out_dir + "/task-0/hello.txt");
  ASSERT_TRUE(hello.ok());
  EXPECT_EQ(*hello, "greetings from task 0\n");
  EXPECT_EQ(*ReadFile(out_dir + "/task-0/sub/index.txt"), "0\n");

  // The agents run unprivileged and never listen on a socket.
  for (int n = 1; n <= 2; ++n) {
    pid_t pid = grid_->agents[static_cast<size_t>(n - 1)]->pid();
    auto status = ReadFile("/proc/" + std::to_string(pid) + "/status");
    ASSERT_TRUE(status.ok());
    if (::geteuid() == 0) {
      EXPECT_EQ(status->find("\nUid:\t0\t"), std::string::npos) << "agent runs as root";
    }
    auto ss = RunCommand({"ss", "-Hltnp"});
    ASSERT_EQ(ss.exit_code, 0) << "ss (iproute2) is needed to see listening sockets: " << ss.err;
    EXPECT_EQ(ss.out.find("pid=" + std::to_string(pid) + ","), std::string::npos) << ss.out;
  }
  // The per-attempt scratch directory is gone.
  for (int n = 1; n <= 2; ++n) {
    const std::filesystem::path attempts = grid_->AgentDataDir(n) + "/state/attempts";
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(attempts, ec))
      ADD_FAILURE() << "left: " << entry.path();
    EXPECT_TRUE(!ec || ec == std::errc::no_such_file_or_directory) << attempts << ": " << ec.message();
  }
}

TEST_F(E2E, ArrayJobOfTwentyTasksSpreadsOverBothAgents) {
  StartAgents(2);
  auto r =
      grid_->Cli({"submit", grid_->Manifest("sweep", {"write", "sweep"}, "array: {count: 20}\n"), "--wait", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  v1::Job job = ParseJob(r.out);
  ASSERT_EQ(job.tasks_size(), 20);
  std::set<std::string> nodes;
  for (const auto& t : job.tasks()) {
    ASSERT_EQ(t.state(), v1::SUCCEEDED) << t.index();
    nodes.insert(t.attempts(0).node_id());
  }
  EXPECT_EQ(nodes.size(), 2u) << "both agents should have run tasks";
  std::string out_dir = grid_->root + "/fetched";
  ASSERT_EQ(grid_->Cli({"fetch", job.id(), out_dir}).exit_code, 0);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(*ReadFile(out_dir + "/task-" + std::to_string(i) + "/sub/index.txt"), std::to_string(i) + "\n");
  }
}

TEST_F(E2E, CancelKillsTheRunningContainer) {
  StartAgents(1);
  std::string id = Submit(grid_->Manifest("sleepy", {"sleep", "300"}));
  auto running = grid_->WaitJob(
      id, [](const v1::Job& j) { return j.state() == v1::RUNNING && j.tasks(0).state() == v1::RUNNING; });
  ASSERT_TRUE(running.ok());
  ASSERT_EQ(running->tasks(0).state(), v1::RUNNING);
  std::string attempt = running->tasks(0).attempts(0).id();
  // The program inside prints "started" once it runs, so its container surely exists.
  ASSERT_TRUE(grid_->WaitForLog(id, "started")) << "the container never started";
  auto before = AgentRunsContainerOf(*grid_, 1, attempt);
  ASSERT_TRUE(before.ok()) << before.status().message();
  EXPECT_TRUE(*before) << "container should be running";

  auto c = grid_->Cli({"cancel", id});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  // The watch ends once the job is settled: the agent confirmed the stop.
  auto stopped = grid_->WaitJob(
      id, [](const v1::Job&) { return false; }, 60000);
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(stopped->state(), v1::CANCELLED);
  EXPECT_NE(stopped->tasks(0).attempts(0).message().find("container stopped"), std::string::npos);
  auto after = AgentRunsContainerOf(*grid_, 1, attempt);
  ASSERT_TRUE(after.ok()) << after.status().message();
  EXPECT_FALSE(*after) << "container still exists after cancel";
}

TEST_F(E2E, InputsArriveVerifiedAndReadOnly) {
  StartAgents(1);
  std::string input = grid_->WriteFile("input.txt", "the input data\n");
  auto push = grid_->Cli({"artifact", "push", input});
  ASSERT_EQ(push.exit_code, 0) << push.err;
  std::string digest = Trim(push.out);
  EXPECT_EQ(digest, *Sha256File(input));
  std::string manifest = grid_->Manifest("withinput", {"copy", "/data/input.txt"},
                                         "inputs:\n  - artifact: " + digest + "\n    path: /data/input.txt\n");
  auto r = grid_->Cli({"submit", manifest, "--wait", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto f = grid_->Cli({"fetch", ParseJob(r.out).id(), grid_->root + "/out"});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  EXPECT_EQ(*ReadFile(grid_->root + "/out/task-0/copy.txt"), "the input data\n");

  // An input the coordinator does not hold is refused at submission.
  std::string missing =
      grid_->Manifest("noinput", {"copy", "/data/x"},
                      "inputs:\n  - artifact: sha256:" + std::string(64, 'c') + "\n    path: /data/x\n");
  auto bad = grid_->Cli({"submit", missing});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("upload it first"), std::string::npos) << bad.err;
}

TEST_F(CoordinatorOnly, HelpListsTheSubcommands) {
  auto r = grid_->Cli({"--help"}, false);
  EXPECT_EQ(r.exit_code, 0);
  for (const char* sub :
       {"coordinator", "agent", "submit", "status", "jobs", "nodes", "logs", "fetch", "cancel", "image"}) {
    EXPECT_NE(r.out.find(sub), std::string::npos) << sub;
  }
  EXPECT_EQ(grid_->Cli({"frobnicate"}, false).exit_code, 2);
}

TEST_F(CoordinatorOnly, UnknownImageDigestFailsWithAClearReason) {
  std::string bad = "sha256:" + std::string(64, 'a');
  std::string manifest =
      grid_->WriteFile("ghost.yaml", "apiVersion: idlegrid/v1\nname: ghost\nimage: " + bad + "\ncommand: [\"/sim\"]\n");
  auto r = grid_->Cli({"submit", manifest});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("idlegrid image push"), std::string::npos) << r.err;
  auto jobs = grid_->Cli({"jobs", "--json"});
  EXPECT_EQ(jobs.out.find("ghost"), std::string::npos) << "nothing should have been queued";
}

TEST_F(CoordinatorOnly, MalformedManifestExitsTwoWithFileLineColumn) {
  std::string manifest =
      grid_->WriteFile("bad.yaml", "apiVersion: idlegrid/v1\nname: bad\nimage: sha256:" + std::string(64, 'b') +
                                       "\nresources:\n  memroy: 1Gi\n");
  auto r = grid_->Cli({"submit", manifest});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.yaml:5:3:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("memroy"), std::string::npos) << r.err;
}

TEST_F(E2E, NonZeroExitFailsWithReasonAndLogsKeepBothStreams) {
  StartAgents(1);
  auto r = grid_->Cli({"submit", grid_->Manifest("fails", {"exit", "3"}), "--wait", "--json"});
  EXPECT_EQ(r.exit_code, 1);
  v1::Job job = ParseJob(r.out);
  ASSERT_EQ(job.state(), v1::FAILED);
  EXPECT_EQ(job.tasks(0).failure_reason(), v1::NONZERO_EXIT);
  EXPECT_EQ(job.tasks(0).attempts(0).exit_code(), 3);
  auto logs = grid_->Cli({"logs", job.id()});
  ASSERT_EQ(logs.exit_code, 0);
  EXPECT_NE(logs.out.find("to stdout"), std::string::npos) << logs.out;
  EXPECT_NE(logs.err.find("to stderr"), std::string::npos) << logs.err;
}

TEST_F(E2E, LogsFollowStreamsUntilTheJobEnds) {
  StartAgents(1);
  std::string id = Submit(grid_->Manifest("ticks", {"ticks", "15"}));
  auto logs = grid_->Cli({"logs", id, "--follow"});
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  for (int i = 0; i < 15; ++i) EXPECT_NE(logs.out.find("tick " + std::to_string(i) + "\n"), std::string::npos) << i;
  auto status = grid_->Cli({"status", id, "--json"});
  EXPECT_EQ(ParseJob(status.out).state(), v1::SUCCEEDED) << "--follow returned before the job ended";
}

TEST_F(E2E, HttpJsonSubmissionTakesTheSamePath) {
  StartAgents(1);
  std::string image = grid_->PushTestImage();
  ASSERT_FALSE(image.empty());
  std::string body = R"({"spec": {"apiVersion": "idlegrid/v1", "name": "viacurl", "image": ")" + image +
                     R"(", "command": ["/sim"], "args": ["write", "curl"]}})";
  std::string url = "https://" + grid_->http_addr + "/v1/jobs";
  std::string ca = grid_->coordinator_dir + "/pki/ca.crt";
  auto unauth = RunCommand(
      {"curl", "-sS", "--cacert", ca, "--resolve",
       "idlegrid-coordinator:" + grid_->http_addr.substr(grid_->http_addr.rfind(':') + 1) + ":127.0.0.1", "-o",
       "/dev/null", "-w", "%{http_code}", "-X", "POST", "-d", body,
       "https://idlegrid-coordinator:" + grid_->http_addr.substr(grid_->http_addr.rfind(':') + 1) + "/v1/jobs"});
  EXPECT_EQ(unauth.out, "401") << unauth.err;
  auto r = RunCommand({"curl", "-sS", "--cacert", ca, "-H", "Authorization: Bearer " + grid_->admin_token, "-X", "POST",
                       "-d", body, "-w", "\n%{http_code}", url});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_NE(r.out.find("\n201"), std::string::npos) << r.out;
  v1::SubmitJobResponse resp;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out.substr(0, r.out.rfind('\n')), &resp).ok()) << r.out;
  auto done = grid_->WaitJob(resp.job().id(), Ended);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state(), v1::SUCCEEDED);
  EXPECT_EQ(done->tasks(0).attempts(0).outputs_size(), 2);
  // The CLI sees the job exactly like its own.
  auto status = grid_->Cli({"status", resp.job().id(), "--json"});
  EXPECT_EQ(ParseJob(status.out).spec().name(), "viacurl");
  // A malformed body is a 400 naming the problem.
  auto bad = RunCommand({"curl", "-sS", "--cacert", ca, "-H", "Authorization: Bearer " + grid_->admin_token, "-X",
                         "POST", "-d", R"({"spec": {"name": 5}})", "-w", "\n%{http_code}", url});
  EXPECT_NE(bad.out.find("\n400"), std::string::npos) << bad.out;
}

TEST_F(E2E, JobWhoseLimitsTheHostCannotEnforceIsNotRunUnbounded) {
  StartAgents(1);
  auto nodes = grid_->Cli({"nodes", "--json"});
  bool can_cap_cpu = nodes.out.find("\"cpu\": \"cgroup\"") != std::string::npos;
  std::string manifest =
      grid_->WriteFile("strict.yaml", "apiVersion: idlegrid/v1\nname: strict\nimage: " + grid_->PushTestImage() +
                                          "\ncommand: [\"/sim\"]\n"
                                          "resources: {cpu: 1, strictCpu: true}\n");
  std::string id = Submit(manifest);
  if (can_cap_cpu) {
    auto done = grid_->WaitJob(id, Ended);
    ASSERT_TRUE(done.ok());
    EXPECT_EQ(done->state(), v1::SUCCEEDED);
    return;
  }
  auto waiting = grid_->WaitJob(
      id, [](const v1::Job& j) { return j.tasks(0).message().find("cannot cap CPU") != std::string::npos; }, 30000);
  ASSERT_TRUE(waiting.ok());
  EXPECT_EQ(waiting->tasks(0).state(), v1::QUEUED);
  EXPECT_NE(waiting->tasks(0).message().find("cannot cap CPU"), std::string::npos) << waiting->tasks(0).message();
  EXPECT_EQ(waiting->tasks(0).attempts_size(), 0) << "it must not have been started anywhere";
}

TEST_F(E2E, SecondCoordinatorOnTheSameDataDirFailsAndRestartKeepsJobs) {
  std::string id = Submit(grid_->Manifest("kept", {"write", "kept"}, "array: {count: 3}\n"));
  auto second = RunCommand({IDLEGRID_BINARY, "coordinator", "--data-dir", grid_->coordinator_dir, "--listen",
                            "127.0.0.1:0", "--http-listen", "127.0.0.1:0"},
                           30);
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_NE(second.err.find("in use"), std::string::npos) << second.err;

  grid_->StopCoordinator(SIGKILL);  // a crash, not a clean stop
  ASSERT_TRUE(grid_->StartCoordinator().ok());
  auto status = grid_->Cli({"status", id, "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  v1::Job job = ParseJob(status.out);
  EXPECT_EQ(job.tasks_size(), 3);
  EXPECT_EQ(job.state(), v1::QUEUED);
  // And the restarted coordinator still runs it.
  StartAgents(1);
  auto done = grid_->WaitJob(id, Ended);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state(), v1::SUCCEEDED);
}

}  // namespace
}  // namespace idlegrid::testing
