// `idlegrid agent join` on a fresh machine (issue 15, docs/provider.md): a new
// unprivileged user without subordinate ids is told the exact fix; once it is
// applied, join enrolls, pins the CA and writes the config and a user unit
// that systemd accepts. A reboot-equivalent (the unit's ExecStart started,
// stopped, started again) keeps the node's identity and the node runs work.
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "common/fs.h"
#include "e2e/harness.h"
#include "jobs/task_state.h"

namespace idlegrid::testing {
namespace {

constexpr char kUser[] = "igtest-joiner";

// The words of the unit's ExecStart= line (the test's paths hold no spaces).
std::vector<std::string> ExecStartOf(const std::string& unit) {
  std::smatch m;
  if (!std::regex_search(unit, m, std::regex("\nExecStart=([^\n]*)\n"))) return {};
  std::istringstream words(m[1].str());
  std::vector<std::string> argv;
  for (std::string w; words >> w;) argv.push_back(w);
  return argv;
}

class ProviderJoin : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_EQ(::geteuid(), 0u) << "this test creates a user: run it as root, as CI does";
    grid_ = std::make_unique<Grid>("provider-join");
    ASSERT_TRUE(grid_->StartCoordinator({"--heartbeat-interval-ms", "500"}).ok());
    // A fresh user each run, made without subordinate ids (what join must notice).
    RunCommand({"userdel", "-r", "-f", kUser});
    auto add = RunCommand({"useradd", "-m", "-s", "/bin/sh", "-K", "SUB_UID_COUNT=0", "-K", "SUB_GID_COUNT=0", kUser});
    ASSERT_EQ(add.exit_code, 0) << add.err;
    struct passwd* pw = ::getpwnam(kUser);
    ASSERT_NE(pw, nullptr);
    uid_ = pw->pw_uid;
    gid_ = pw->pw_gid;
    home_ = pw->pw_dir;
    xdg_runtime_ = "/tmp/igtest-xdg-" + std::to_string(uid_);
    ASSERT_TRUE(MakeDirs(xdg_runtime_, 0700).ok());
    ASSERT_EQ(::chown(xdg_runtime_.c_str(), uid_, gid_), 0);
  }

  void TearDown() override {
    if (agent_) agent_->Signal(SIGTERM), agent_->Wait();
    grid_.reset();
    if (uid_ != 0) RunCommand(AsUser({"podman", "system", "reset", "--force"}));
    RunCommand({"userdel", "-r", "-f", kUser});
  }

  // argv run as the joining user, with the environment a login gives it.
  std::vector<std::string> AsUser(std::vector<std::string> argv) const {
    std::vector<std::string> out = {"setpriv",
                                    "--reuid=" + std::to_string(uid_),
                                    "--regid=" + std::to_string(gid_),
                                    "--init-groups",
                                    "env",
                                    "-i",
                                    "HOME=" + home_,
                                    "USER=" + std::string(kUser),
                                    "XDG_RUNTIME_DIR=" + xdg_runtime_,
                                    "PATH=/usr/local/bin:/usr/bin:/bin"};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
  }

  CmdResult Join() {
    return RunCommand(
        AsUser({grid_->binary(), "agent", "join", "https://" + grid_->grpc_addr, "--token", join_token_, "--ca-hash",
                grid_->ca_hash, "--api-token", api_token_, "--name", "joiner", "--cpus", "2"}));
  }

  // Starts the unit's command line as the user; the node id it reports.
  std::string StartFromUnit(const std::vector<std::string>& exec_start) {
    agent_ = Process::Start(AsUser(exec_start), grid_->root + "/joined-agent.err");
    if (!agent_) return "";
    return ValueAfter(agent_->WaitForLine("ready ", 120000), "node");
  }

  std::unique_ptr<Grid> grid_;
  std::unique_ptr<Process> agent_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  std::string home_, xdg_runtime_, join_token_, api_token_;
};

TEST_F(ProviderJoin, FreshUserJoinsAndKeepsItsIdentityAcrossARestart) {
  ASSERT_EQ(grid_->Cli({"account", "create", "lender", "--role", "provider"}).exit_code, 0);
  auto jt = grid_->Cli({"join-token", "create", "--provider", "lender"});
  ASSERT_EQ(jt.exit_code, 0) << jt.err;
  join_token_ = Trim(jt.out);
  auto tok = grid_->Cli({"token", "create", "--account", "lender", "--scope", "read"});
  ASSERT_EQ(tok.exit_code, 0) << tok.err;
  api_token_ = Trim(tok.out);

  // No subordinate ids: join refuses, names the fix, writes nothing.
  CmdResult refused = Join();
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  std::smatch fix;
  ASSERT_TRUE(
      std::regex_search(refused.out, fix, std::regex("sudo (usermod --add-subuids [0-9-]+) " + std::string(kUser))))
      << refused.out;
  EXPECT_NE(refused.out.find("--add-subgids"), std::string::npos) << refused.out;
  EXPECT_FALSE(PathExists(home_ + "/.config/idlegrid")) << "a refused join writes nothing";

  // Apply exactly the fixes it printed.
  for (const char* flag : {"--add-subuids", "--add-subgids"}) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(refused.out, m, std::regex(std::string("usermod ") + flag + " ([0-9-]+) ")));
    auto r = RunCommand({"usermod", flag, m[1].str(), kUser});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  auto migrate = RunCommand(AsUser({"podman", "system", "migrate"}));
  ASSERT_EQ(migrate.exit_code, 0) << migrate.err;

  CmdResult joined = Join();
  ASSERT_EQ(joined.exit_code, 0) << joined.out << joined.err;
  std::smatch node_match;
  ASSERT_TRUE(std::regex_search(joined.out, node_match, std::regex("as node (\\S+);"))) << joined.out;
  const std::string node_id = node_match[1].str();
  if (!PathExists("/run/systemd/system")) {
    EXPECT_NE(joined.out.find("no systemd here"), std::string::npos) << joined.out;
    EXPECT_NE(joined.out.find("agent --config " + home_ + "/.config/idlegrid/agent.yaml"), std::string::npos);
  }

  // The files, the user's own and private.
  const std::string config = home_ + "/.config/idlegrid/agent.yaml";
  const std::string data = home_ + "/.local/share/idlegrid/agent";
  const std::string unit_path = home_ + "/.config/systemd/user/idlegrid-agent.service";
  for (const std::string& path :
       {config, data + "/credentials", data + "/coordinator-ca.crt", home_ + "/.config/idlegrid/config.yaml"}) {
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0) << path;
    EXPECT_EQ(st.st_uid, uid_) << path;
    EXPECT_EQ(st.st_mode & 077, 0u) << path << " is readable by others";
  }
  auto config_text = ReadFile(config);
  ASSERT_TRUE(config_text.ok());
  EXPECT_NE(config_text->find(grid_->grpc_addr), std::string::npos) << *config_text;
  EXPECT_EQ(config_text->find(join_token_), std::string::npos) << "the join token is not kept";
  auto unit = ReadFile(unit_path);
  ASSERT_TRUE(unit.ok());
  auto verify = RunCommand(AsUser({"systemd-analyze", "--user", "verify", "--man=no", unit_path}));
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  std::vector<std::string> exec_start = ExecStartOf(*unit);
  ASSERT_GE(exec_start.size(), 4u) << *unit;
  EXPECT_EQ(exec_start[0], grid_->binary());

  // Boot: the unit's command. Then a reboot: stop, start again.
  EXPECT_EQ(StartFromUnit(exec_start), node_id);
  auto status = RunCommand(AsUser({grid_->binary(), "agent", "status"}));
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;
  EXPECT_NE(status.out.find(node_id + " (joiner)"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("provider     lender"), std::string::npos) << status.out;
  agent_->Signal(SIGTERM);
  EXPECT_EQ(agent_->Wait(), 0);
  agent_.reset();
  EXPECT_EQ(StartFromUnit(exec_start), node_id) << "a restart keeps the node's identity";

  auto nodes = grid_->Cli({"nodes", "--json"});
  ASSERT_EQ(nodes.exit_code, 0) << nodes.err;
  auto list = ParseJson<v1::ListNodesResponse>(nodes.out);
  ASSERT_EQ(list.nodes_size(), 1) << "the restart registered no second node: " << nodes.out;
  EXPECT_EQ(list.nodes(0).id(), node_id);
  EXPECT_EQ(list.nodes(0).provider(), "lender");

  // And it picks up work after the restart.
  auto submitted = grid_->Cli({"submit", grid_->Manifest("after-reboot", {"write", "after-reboot"})});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string job_id = submitted.out.substr(0, submitted.out.find('\n'));
  auto done = grid_->WaitJob(
      job_id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 180000);
  ASSERT_TRUE(done.ok()) << done.status().message();
  EXPECT_EQ(done->state(), v1::SUCCEEDED) << done->DebugString();
  ASSERT_GT(done->tasks(0).attempts_size(), 0);
  EXPECT_EQ(done->tasks(0).attempts(0).node_id(), node_id);
}

}  // namespace
}  // namespace idlegrid::testing
