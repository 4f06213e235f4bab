#pragma once
// End-to-end harness: real processes (a coordinator, agents running as their
// own unprivileged users), real TLS on loopback, real podman. Readiness is
// awaited on the processes' "ready" lines and on the WatchJob stream, never
// on fixed sleeps.
#include <signal.h>
#include <sys/types.h>

#include <gtest/gtest.h>
#include <google/protobuf/util/json_util.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cli/client.h"
#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::testing {

struct CmdResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// The value of `key=value` in a space-separated line ("" if absent).
std::string ValueAfter(const std::string& line, const std::string& key);
// `s` without trailing newlines and spaces.
std::string Trim(std::string s);

// Runs argv to completion (no shell), capturing both streams.
CmdResult RunCommand(const std::vector<std::string>& argv, int timeout_s = 300);

// A child process whose stdout is read line by line on a thread.
class Process {
 public:
  static std::unique_ptr<Process> Start(const std::vector<std::string>& argv, const std::string& stderr_path);
  ~Process();
  // The first stdout line starting with `prefix`, waiting up to timeout_ms;
  // "" if the process exited or the time ran out first.
  std::string WaitForLine(const std::string& prefix, int timeout_ms);
  void Signal(int sig);
  int Wait();  // exit status (128+signal if killed)
  // Waits up to timeout_ms for the process to exit (a pidfd becomes readable);
  // true if it did (Wait() then returns at once).
  bool WaitExit(int timeout_ms);
  pid_t pid() const { return pid_; }
  bool running();

 private:
  Process() = default;
  pid_t pid_ = -1;
  int status_ = -1;
  bool reaped_ = false;
  std::thread reader_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> lines_;  // guarded by mu_
  bool eof_ = false;                // guarded by mu_
};

class Grid {
 public:
  explicit Grid(const std::string& name);
  ~Grid();

  Status StartCoordinator(const std::vector<std::string>& extra = {});
  void StopCoordinator(int sig = SIGTERM);
  // Agent n (1-based) runs as user "igtest-agent<n>", created on first use
  // with its own subordinate uid/gid range; when not root, as this user.
  Status StartAgent(int n, const std::vector<std::string>& extra = {});
  void StopAgent(int n, int sig = SIGTERM);
  std::string AgentUser(int n) const;
  std::string AgentDataDir(int n) const;
  // Replaces agent n's owner policy (DATA_DIR/state/policy.yaml) in one
  // rename, so the agent never reads half of it; it applies it within a
  // heartbeat. The error names the file.
  Status WriteOwnerPolicy(int n, const std::string& yaml) const;

  // `idlegrid ARGS --config client.yaml`.
  CmdResult Cli(std::vector<std::string> args, bool with_config = true);
  // curl of the HTTPS/JSON API at `path` ("/v1/jobs?..."), with `token`
  // (default: the admin's) and the coordinator's CA; `extra` curl arguments
  // go before the URL. --fail-with-body: a refusal exits non-zero with its body.
  CmdResult Curl(const std::string& path, const std::vector<std::string>& extra = {},
                 const std::string& token = "") const;
  // Builds (once per process) the test image and pushes it; returns its digest.
  std::string PushTestImage();
  // The test image's OCI archive, built once per process; "" if that failed.
  static std::string TestImageArchive();
  std::string WriteFile(const std::string& name, const std::string& content);
  // Manifest for the test image with `args`; extra YAML appended verbatim.
  std::string Manifest(const std::string& name, const std::vector<std::string>& args, const std::string& extra = "");

  // Streams the job until pred(job) holds or it ends; returns the last state seen.
  Result<v1::Job> WaitJob(const std::string& job_id, const std::function<bool(const v1::Job&)>& pred,
                          int timeout_ms = 120000);
  cli::Client* client();
  // Follows the job's log stream until `text` appears; false if it ended or timed out first.
  bool WaitForLog(const std::string& job_id, const std::string& text, int timeout_ms = 60000);
  // Streams the node list until pred holds; returns the last list seen.
  Result<v1::ListNodesResponse> WaitNodes(const std::function<bool(const v1::ListNodesResponse&)>& pred,
                                          int timeout_ms = 120000);

  std::string listen_host = "127.0.0.1";  // where the coordinator's gRPC API listens
  int listen_port = 0;                    // 0: any; set to restart a coordinator on the same address
  std::string agent_netns;                // when set, agents start inside this network namespace
  std::string shared_dir;                 // when set, the coordinator's --shared-dir (PKI, artifacts, secrets)
  // IDLEGRID_FAILPOINTS for the next coordinator or agent n started (common/failpoint.h;
  // only the binary UseBinary(IDLEGRID_FAULTS_BINARY) installs can be armed).
  std::string coordinator_failpoints;
  std::map<int, std::string> agent_failpoints;
  // More environment ("NAME=value") for the next coordinator or agent n
  // started, e.g. a clock offset (fault_env_support.h).
  std::vector<std::string> coordinator_env;
  std::map<int, std::vector<std::string>> agent_env;
  // Armed failpoints count hits only once the gate is open (IDLEGRID_FAILPOINTS_GATE).
  std::string FailpointGate() const { return root + "/failpoint-gate"; }
  void SetFailpointGate(bool open);
  // Runs `path` instead of the idlegrid binary from now on (coordinator, agents, CLI).
  void UseBinary(const std::string& path);
  // Agent n joins with agent_join_tokens[n] when set (e.g. a provider
  // account's token from `join-token create`), else with join_token.
  std::map<int, std::string> agent_join_tokens;
  std::string binary() const { return bin_; }
  std::string root, coordinator_dir, grpc_addr, http_addr, ca_hash, join_token, client_yaml, admin_token;
  std::unique_ptr<Process> coordinator;
  std::vector<std::unique_ptr<Process>> agents;  // index n-1
  std::vector<std::string> node_ids;             // index n-1: the node id agent n printed when ready

 private:
  std::string bin_;
  std::unique_ptr<cli::Client> client_;
};

// A runnable `podman` invocation as agent n's user (for checking its containers).
std::vector<std::string> AsAgentUser(const Grid& grid, int n, std::vector<std::string> argv);

// Why tests that run containers must skip here, or "" when podman works.
std::string PodmanMissing();

// Names of agent n's containers that exist (running or not) under either of
// its drivers: podman's (label idlegrid=1) and runc's (its state dir). A
// failed listing is an error, never an empty list.
Result<std::vector<std::string>> AgentContainers(const Grid& grid, int n);
// Whether one of agent n's containers belongs to `attempt_id`.
Result<bool> AgentRunsContainerOf(const Grid& grid, int n, const std::string& attempt_id);

// A CLI's --json output as `Message`; a parse failure fails the test.
template <typename Message>
Message ParseJson(const std::string& json) {
  Message m;
  auto st = google::protobuf::util::JsonStringToMessage(json, &m);
  EXPECT_TRUE(st.ok()) << st.message() << "\n" << json;
  return m;
}

}  // namespace idlegrid::testing
