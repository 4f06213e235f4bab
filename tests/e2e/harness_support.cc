#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/grpc_status.h"
#include "common/fs.h"
#include "e2e/harness.h"

extern char** environ;

namespace idlegrid::testing {

namespace {

std::vector<char*> Argv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const auto& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

int DecodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

bool IsRoot() { return ::geteuid() == 0; }

}  // namespace

std::string ValueAfter(const std::string& line, const std::string& key) {
  auto pos = line.find(key + "=");
  if (pos == std::string::npos) return "";
  auto start = pos + key.size() + 1;
  auto end = line.find(' ', start);
  return line.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

CmdResult RunCommand(const std::vector<std::string>& argv, int timeout_s) {
  int out_pipe[2], err_pipe[2];
  CmdResult r;
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) return r;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  // Children often run as an agent's unprivileged user, who may not enter
  // our working directory (a clone in /root, mode 0700): every path we pass
  // is absolute, so "/" serves all.
  posix_spawn_file_actions_addchdir_np(&fa, "/");
  pid_t pid;
  auto args = Argv(argv);
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    r.err = std::string("spawn failed: ") + std::strerror(rc);
    return r;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[8192];
  while (open_fds > 0) {
    int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
    if (left <= 0) {
      ::kill(pid, SIGKILL);
      r.err += "\n[harness: timed out after " + std::to_string(timeout_s) + " s]";
      break;
    }
    if (::poll(fds, 2, left) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof(buf));
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) ::close(f.fd);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = DecodeStatus(status);
  return r;
}

// --- Process ------------------------------------------------------------------

std::unique_ptr<Process> Process::Start(const std::vector<std::string>& argv, const std::string& stderr_path) {
  int out_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return nullptr;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addchdir_np(&fa, "/");  // as in RunCommand
  std::unique_ptr<Process> p(new Process());
  auto args = Argv(argv);
  int rc = posix_spawnp(&p->pid_, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    return nullptr;
  }
  int fd = out_pipe[0];
  p->reader_ = std::thread([raw = p.get(), fd] {
    std::string partial;
    char buf[4096];
    while (true) {
      ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n <= 0) break;
      partial.append(buf, static_cast<size_t>(n));
      size_t nl;
      while ((nl = partial.find('\n')) != std::string::npos) {
        std::lock_guard<std::mutex> lock(raw->mu_);
        raw->lines_.push_back(partial.substr(0, nl));
        partial.erase(0, nl + 1);
        raw->cv_.notify_all();
      }
    }
    ::close(fd);
    std::lock_guard<std::mutex> lock(raw->mu_);
    raw->eof_ = true;
    raw->cv_.notify_all();
  });
  return p;
}

Process::~Process() {
  if (running()) {
    Signal(SIGKILL);
  }
  Wait();
  if (reader_.joinable()) reader_.join();
}

std::string Process::WaitForLine(const std::string& prefix, int timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  std::string found;
  cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] {
    for (const auto& l : lines_) {
      if (l.rfind(prefix, 0) == 0) {
        found = l;
        return true;
      }
    }
    return eof_;
  });
  return found;
}

void Process::Signal(int sig) {
  if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
}

int Process::Wait() {
  if (!reaped_ && pid_ > 0) {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    status_ = DecodeStatus(status);
    reaped_ = true;
  }
  return status_;
}

bool Process::WaitExit(int timeout_ms) {
  if (reaped_ || pid_ <= 0) return true;
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
  if (fd < 0) return false;
  struct pollfd p = {fd, POLLIN, 0};
  const int ready = ::poll(&p, 1, timeout_ms);
  ::close(fd);
  if (ready <= 0) return false;
  Wait();
  return true;
}

bool Process::running() {
  if (reaped_ || pid_ <= 0) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    status_ = DecodeStatus(status);
    reaped_ = true;
    return false;
  }
  return true;
}

// --- Grid ---------------------------------------------------------------------

Grid::Grid(const std::string& name) {
  std::string tmpl = "/tmp/igtest-" + name + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  root = ::mkdtemp(buf.data());
  ::chmod(root.c_str(), 0755);  // agents run as other users and must reach their binary
  coordinator_dir = root + "/coordinator";
  bin_ = root + "/idlegrid";
  RunCommand({"install", "-m", "755", IDLEGRID_BINARY, bin_});
  // The coordinator builds its readiness benchmark image from the program beside it.
  std::string bench = std::string(IDLEGRID_BINARY);
  bench = bench.substr(0, bench.rfind('/')) + "/idlegrid-bench";
  RunCommand({"install", "-m", "755", bench, root + "/idlegrid-bench"});
  std::string gpu_bench = bench.substr(0, bench.rfind('/')) + "/idlegrid-gpu-bench";
  if (PathExists(gpu_bench)) RunCommand({"install", "-m", "755", gpu_bench, root + "/idlegrid-gpu-bench"});
  agents.resize(4);
}

void Grid::SetFailpointGate(bool open) {
  if (open) {
    std::ofstream(FailpointGate()) << "open\n";
  } else {
    ::unlink(FailpointGate().c_str());
  }
}

void Grid::UseBinary(const std::string& path) { RunCommand({"install", "-m", "755", path, bin_}); }

Grid::~Grid() {
  for (auto& a : agents) {
    if (a) a->Signal(SIGTERM);
  }
  for (auto& a : agents) a.reset();
  if (coordinator) coordinator->Signal(SIGTERM);
  coordinator.reset();
  if (std::getenv("IDLEGRID_KEEP_TEST_DIRS") == nullptr) (void)RemoveTree(root);
}

Status Grid::StartCoordinator(const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {bin_,
                                   "coordinator",
                                   "--data-dir",
                                   coordinator_dir,
                                   "--listen",
                                   listen_host + ":" + std::to_string(listen_port),
                                   "--http-listen",
                                   "127.0.0.1:0"};
  if (!shared_dir.empty()) {
    argv.push_back("--shared-dir");
    argv.push_back(shared_dir);
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  if (!coordinator_failpoints.empty()) {
    argv.insert(argv.begin(), {"env", "IDLEGRID_FAILPOINTS=" + coordinator_failpoints,
                               "IDLEGRID_FAILPOINTS_GATE=" + FailpointGate()});
  }
  if (!coordinator_env.empty()) {
    argv.insert(argv.begin(), coordinator_env.begin(), coordinator_env.end());
    argv.insert(argv.begin(), "env");
  }
  coordinator = Process::Start(argv, root + "/coordinator.err");
  if (!coordinator) return Status::Internal("cannot start coordinator");
  std::string ready = coordinator->WaitForLine("ready ", 30000);
  if (ready.empty()) {
    auto err = ReadFile(root + "/coordinator.err");
    return Status::Internal("coordinator did not become ready: " + (err.ok() ? *err : ""));
  }
  grpc_addr = ValueAfter(ready, "grpc");
  http_addr = ValueAfter(ready, "http");
  ca_hash = ValueAfter(ready, "ca");
  const std::string secrets = shared_dir.empty() ? coordinator_dir : shared_dir;
  auto join = ReadFile(secrets + "/join.token");
  auto admin = ReadFile(secrets + "/admin.token");
  if (!join.ok() || !admin.ok()) return Status::Internal("coordinator wrote no tokens");
  join_token = join->substr(0, join->find('\n'));
  admin_token = admin->substr(0, admin->find('\n'));
  client_yaml = coordinator_dir + "/client.yaml";
  client_.reset();
  return Status::Ok();
}

void Grid::StopCoordinator(int sig) {
  if (!coordinator) return;
  coordinator->Signal(sig);
  coordinator->Wait();
  coordinator.reset();
}

std::string Grid::AgentUser(int n) const { return IsRoot() ? "igtest-agent" + std::to_string(n) : ""; }
std::string Grid::AgentDataDir(int n) const { return root + "/agent" + std::to_string(n); }

Status Grid::WriteOwnerPolicy(int n, const std::string& yaml) const {
  const std::string path = AgentDataDir(n) + "/state/policy.yaml";
  return WriteFileAtomic(path, yaml, 0644).WithContext(path);
}

std::vector<std::string> AsAgentUser(const Grid& grid, int n, std::vector<std::string> argv) {
  std::string user = grid.AgentUser(n);
  if (user.empty()) return argv;
  struct passwd* pw = ::getpwnam(user.c_str());
  std::string uid = pw ? std::to_string(pw->pw_uid) : "0";
  std::string gid = pw ? std::to_string(pw->pw_gid) : "0";
  // setpriv execs in place (runuser would fork and keep a root parent), so the
  // pid we hold is the agent itself: signals reach it and kill -9 kills it.
  std::vector<std::string> out = {"setpriv",
                                  "--reuid=" + uid,
                                  "--regid=" + gid,
                                  "--init-groups",
                                  "env",
                                  "HOME=" + std::string(pw ? pw->pw_dir : "/"),
                                  "XDG_RUNTIME_DIR=/tmp/igtest-xdg-" + uid,
                                  "PATH=/usr/local/bin:/usr/bin:/bin"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::string PodmanMissing() {
  auto probe = RunCommand({"podman", "--version"});
  return probe.exit_code == 0 ? "" : "podman is not installed: " + probe.err;
}

Result<std::vector<std::string>> AgentContainers(const Grid& grid, int n) {
  std::vector<std::string> names;
  auto split = [&](const std::string& out) {
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
      if (!Trim(line).empty()) names.push_back(Trim(line));
    }
  };
  auto ps = RunCommand(
      AsAgentUser(grid, n, {"podman", "ps", "-a", "--format", "{{.Names}}", "--filter", "label=idlegrid=1"}));
  if (ps.exit_code != 0) return Status::Internal("podman ps failed: " + ps.err);
  split(ps.out);
  const std::string runc = ::access("/usr/sbin/runc", X_OK) == 0 ? "/usr/sbin/runc" : "runc";
  const std::string state = grid.AgentDataDir(n) + "/state/runc";
  if (::access(state.c_str(), F_OK) == 0) {
    auto list = RunCommand(AsAgentUser(grid, n, {runc, "--root", state, "list", "-q"}));
    if (list.exit_code != 0) return Status::Internal("runc list failed: " + list.err);
    split(list.out);
  }
  return names;
}

Result<bool> AgentRunsContainerOf(const Grid& grid, int n, const std::string& attempt_id) {
  IG_ASSIGN_OR_RETURN(std::vector<std::string> names, AgentContainers(grid, n));
  for (const auto& name : names) {
    if (name.find(attempt_id) != std::string::npos) return true;
  }
  return false;
}

Status Grid::StartAgent(int n, const std::vector<std::string>& extra) {
  std::string user = AgentUser(n);
  std::string dir = AgentDataDir(n);
  IG_RETURN_IF_ERROR(MakeDirs(dir, 0700));
  if (!user.empty()) {
    if (::getpwnam(user.c_str()) == nullptr) {
      auto r = RunCommand({"useradd", "-m", "-s", "/usr/sbin/nologin", user});
      if (r.exit_code != 0) return Status::Internal("useradd " + user + ": " + r.err);
    }
    // Rootless podman needs a subordinate id range for the user.
    for (const char* file : {"/etc/subuid", "/etc/subgid"}) {
      auto content = ReadFile(file);
      if (!content.ok() || content->find(user + ":") == std::string::npos) {
        std::ofstream(file, std::ios::app) << user << ":" << (400000 + n * 65536) << ":65536\n";
      }
    }
    struct passwd* pw = ::getpwnam(user.c_str());
    std::string xdg = "/tmp/igtest-xdg-" + std::to_string(pw->pw_uid);
    IG_RETURN_IF_ERROR(MakeDirs(xdg, 0700));
    if (::chown(xdg.c_str(), pw->pw_uid, pw->pw_gid) != 0 || ::chown(dir.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
      return Status::Internal("cannot chown agent directories");
    }
  }
  std::vector<std::string> argv =
      AsAgentUser(*this, n,
                  {bin_, "agent", "--coordinator", grpc_addr, "--join-token",
                   agent_join_tokens.count(n) ? agent_join_tokens.at(n) : join_token, "--ca-hash", ca_hash,
                   "--data-dir", dir + "/state", "--name", "agent" + std::to_string(n), "--cpus", "2"});
  argv.insert(argv.end(), extra.begin(), extra.end());
  if (auto fp = agent_failpoints.find(n); fp != agent_failpoints.end() && !fp->second.empty()) {
    // After AsAgentUser's own env, so it reaches the agent under its user.
    auto bin = std::find(argv.begin(), argv.end(), bin_);
    argv.insert(bin, {"env", "IDLEGRID_FAILPOINTS=" + fp->second, "IDLEGRID_FAILPOINTS_GATE=" + FailpointGate()});
  }
  if (auto env = agent_env.find(n); env != agent_env.end() && !env->second.empty()) {
    auto bin = std::find(argv.begin(), argv.end(), bin_);
    bin = argv.insert(bin, env->second.begin(), env->second.end());
    argv.insert(bin, "env");
  }
  if (!agent_netns.empty()) argv.insert(argv.begin(), {"ip", "netns", "exec", agent_netns});
  auto& slot = agents[static_cast<size_t>(n - 1)];
  slot = Process::Start(argv, root + "/agent" + std::to_string(n) + ".err");
  if (!slot) return Status::Internal("cannot start agent");
  std::string ready = slot->WaitForLine("ready ", 60000);
  if (ready.empty()) {
    auto err = ReadFile(root + "/agent" + std::to_string(n) + ".err");
    return Status::Internal("agent did not become ready: " + (err.ok() ? *err : ""));
  }
  if (node_ids.size() < static_cast<size_t>(n)) node_ids.resize(static_cast<size_t>(n));
  node_ids[static_cast<size_t>(n - 1)] = ValueAfter(ready, "node");
  return Status::Ok();
}

void Grid::StopAgent(int n, int sig) {
  auto& slot = agents[static_cast<size_t>(n - 1)];
  if (!slot) return;
  slot->Signal(sig);
  slot->Wait();
  slot.reset();
}

CmdResult Grid::Cli(std::vector<std::string> args, bool with_config) {
  std::vector<std::string> argv = {bin_};
  argv.insert(argv.end(), args.begin(), args.end());
  if (with_config) {
    argv.push_back("--config");
    argv.push_back(client_yaml);
  }
  return RunCommand(argv);
}

std::string Grid::TestImageArchive() {
  static std::string archive;  // built once per test binary
  if (archive.empty()) {
    std::string out = "/tmp/igtest-image-" + std::to_string(::getpid()) + ".tar";
    auto build = [&] {
      return RunCommand({std::string(IDLEGRID_SOURCE_DIR) + "/scripts/build-image.sh",
                         std::string(IDLEGRID_SOURCE_DIR) + "/tests/e2e/testprog.c",
                         "localhost/igtest-prog:" + std::to_string(::getpid()), out});
    };
    auto r = build();
    if (r.exit_code != 0) {
      // Building is set-up, not the behaviour under test: one logged retry for
      // a transient podman storage lock.
      std::fprintf(stderr, "[harness] building the test image failed (%d), retrying: %s%s\n", r.exit_code,
                   r.out.c_str(), r.err.c_str());
      r = build();
    }
    if (r.exit_code != 0) {
      std::fprintf(stderr, "[harness] building the test image failed (%d): %s%s\n", r.exit_code, r.out.c_str(),
                   r.err.c_str());
      return "";
    }
    archive = out;
  }
  return archive;
}

std::string Grid::PushTestImage() {
  const std::string archive = TestImageArchive();
  if (archive.empty()) return "";
  auto r = Cli({"image", "push", archive});
  if (r.exit_code != 0) {
    std::fprintf(stderr, "[harness] image push failed (%d): %s%s\n", r.exit_code, r.out.c_str(), r.err.c_str());
    return "";
  }
  std::string digest = r.out;
  while (!digest.empty() && digest.back() == '\n') digest.pop_back();
  return digest;
}

CmdResult Grid::Curl(const std::string& path, const std::vector<std::string>& extra, const std::string& token) const {
  std::vector<std::string> argv = {"curl",
                                   "-sS",
                                   "--fail-with-body",
                                   "--cacert",
                                   (shared_dir.empty() ? coordinator_dir : shared_dir) + "/pki/ca.crt",
                                   "-H",
                                   "Authorization: Bearer " + (token.empty() ? admin_token : token)};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("https://" + http_addr + path);
  return RunCommand(argv);
}

std::string Grid::WriteFile(const std::string& name, const std::string& content) {
  std::string path = root + "/" + name;
  std::ofstream(path) << content;
  return path;
}

std::string Grid::Manifest(const std::string& name, const std::vector<std::string>& args, const std::string& extra) {
  std::string image = PushTestImage();
  std::ostringstream y;
  y << "apiVersion: idlegrid/v1\nname: " << name << "\nimage: igtest@" << image << "\ncommand: [\"/sim\"]\nargs: [";
  for (size_t i = 0; i < args.size(); ++i) y << (i ? ", " : "") << "\"" << args[i] << "\"";
  y << "]\nresources:\n  cpu: 1\n  memory: 256Mi\n  pids: 64\noutput: /out\n" << extra;
  return WriteFile(name + ".yaml", y.str());
}

cli::Client* Grid::client() {
  if (!client_) {
    auto c = cli::Client::Connect(
        {grpc_addr, (shared_dir.empty() ? coordinator_dir : shared_dir) + "/pki/ca.crt", admin_token});
    if (c.ok()) client_ = std::move(c).value();
  }
  return client_.get();
}

namespace {

// Reads a server stream until pred holds (then cancels it) or the stream ends.
template <typename Message, typename Reader>
Result<Message> ReadUntil(grpc::ClientContext* ctx, Reader reader, const std::function<bool(const Message&)>& pred) {
  Message msg;
  Message last;
  while (reader->Read(&msg)) {
    last = msg;
    if (pred(msg)) {
      ctx->TryCancel();
      reader->Finish();
      return last;
    }
  }
  Status st = FromGrpc(reader->Finish());
  if (!st.ok()) return st;
  return last;
}

}  // namespace

bool Grid::WaitForLog(const std::string& job_id, const std::string& text, int timeout_ms) {
  v1::StreamLogsRequest req;
  req.set_job_id(job_id);
  req.set_follow(true);
  auto ctx = client()->Context(timeout_ms);
  auto reader = client()->stub()->StreamLogs(ctx.get(), req);
  v1::LogChunk chunk;
  std::string seen;
  while (seen.find(text) == std::string::npos && reader->Read(&chunk)) seen += chunk.data();
  ctx->TryCancel();
  reader->Finish();
  return seen.find(text) != std::string::npos;
}

Result<v1::ListNodesResponse> Grid::WaitNodes(const std::function<bool(const v1::ListNodesResponse&)>& pred,
                                              int timeout_ms) {
  auto ctx = client()->Context(timeout_ms);
  return ReadUntil<v1::ListNodesResponse>(ctx.get(), client()->stub()->WatchNodes(ctx.get(), v1::ListNodesRequest()),
                                          pred);
}

Result<v1::Job> Grid::WaitJob(const std::string& job_id, const std::function<bool(const v1::Job&)>& pred,
                              int timeout_ms) {
  v1::GetJobRequest req;
  req.set_job_id(job_id);
  auto ctx = client()->Context(timeout_ms);
  return ReadUntil<v1::Job>(ctx.get(), client()->stub()->WatchJob(ctx.get(), req), pred);
}

}  // namespace idlegrid::testing
