#include "runtime/job_files.h"
#include "runtime/pilot_pool.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "common/fs.h"
#include "runtime/oci_config.h"
#include "runtime/pilot_protocol.h"
#include "runtime/runc_host.h"
#include "runtime/runc_runtime.h"
#include "runtime/subprocess.h"

namespace idlegrid::runtime {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

namespace {

// A graceful retirement (end of file on the request pipe) takes the pilot a
// few milliseconds; past this it is destroyed instead.
constexpr milliseconds kRetireWait{5'000};
// After `runc kill`, `runc run` should return at once; past this it is
// SIGKILLed itself.
constexpr milliseconds kDestroyWait{15'000};

bool SameFilesystem(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev;
}

// Moves every entry of directory `from` into directory `to` (same filesystem).
Status MoveEntries(const std::string& from, const std::string& to) {
  DIR* dir = ::opendir(from.c_str());
  if (dir == nullptr) return Status::Internal("cannot read " + from + ": " + std::strerror(errno));
  Status st = Status::Ok();
  for (dirent* e; st.ok() && (e = ::readdir(dir)) != nullptr;) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (::renameat(dirfd(dir), name.c_str(), AT_FDCWD, (to + "/" + name).c_str()) != 0) {
      st = Status::Internal("cannot move " + from + "/" + name + " to " + to + ": " + std::strerror(errno));
    }
  }
  ::closedir(dir);
  return st;
}

// Reads what the task pipes hold without blocking, up to a bound per call so
// a flood cannot starve the timeout checks.
void DrainPipe(int fd, const std::string& stream,
               const std::function<void(const std::string&, std::string_view)>& sink) {
  char buf[64 * 1024];
  for (int i = 0; i < 16; ++i) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    sink(stream, std::string_view(buf, static_cast<size_t>(n)));
  }
}

bool WriteAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

struct PilotPool::Pilot {
  std::string name, key, bundle, hostname;
  std::vector<std::string> rw_dirs;   // per mount of the key's specs: the pilot's directory, "" for read-only ones
  std::optional<Subprocess> runc;     // `runc run` of the pilot container
  UniqueFd request, reply;            // our ends of the pilot's fds 3 and 4
  UniqueFd task_stdout, task_stderr;  // our (non-blocking) ends of its fds 5 and 6
  Clock::time_point idle_since;
  bool replied_once = false;
};

namespace {

void DrainTaskOutput(PilotPool::Pilot& pilot, const std::function<void(const std::string&, std::string_view)>& sink) {
  DrainPipe(pilot.task_stdout.get(), "stdout", sink);
  DrainPipe(pilot.task_stderr.get(), "stderr", sink);
}

// The pilot's reply once `reader` has all of it, or why it cannot come;
// nullopt while it is incomplete (or nothing could be read now).
std::optional<Result<PilotReply>> ReadReply(PilotPool::Pilot& pilot, PilotReplyReader& reader) {
  char buf[512];
  const ssize_t n = ::read(pilot.reply.get(), buf, sizeof buf);
  if (n > 0) return reader.Feed(std::string_view(buf, static_cast<size_t>(n)));
  if (n == 0) return Result<PilotReply>(Status::DataLoss("the pilot closed its reply pipe"));
  return std::nullopt;
}

// The task's ExitInfo as the pilot's reply that it ended tells it.
void RecordReply(const PilotReply& r, ExitInfo& info) {
  if (r.kind == PilotReply::Kind::kExecFailed) {
    info.error = "the task could not be started: " + r.text;
    return;
  }
  info.exit_code = r.exit_code;
  info.oom = r.exit_code == 137;  // SIGKILL that neither Kill nor the timeout sent
  if (r.cpu_usec) {
    info.cpu_usec = *r.cpu_usec;
    info.cpu_source = "rusage";  // the pilot's, over the task's waited-for processes
  }
}

// What runc logged as errors for the pilot; "" when nothing (or no log).
std::string RuncErrorsOf(const PilotPool::Pilot& pilot) {
  Result<std::string> log = ReadFile(pilot.bundle + "/runc.log");
  return log.ok() ? RuncLogErrors(*log) : std::string();
}

// Before the task runs: the entries of the attempt's writable mounts (its
// outputs so far) move into the pilot's directories for them.
Status MoveOutputsIntoPilot(const RunSpec& spec, const PilotPool::Pilot& pilot) {
  Status moved = Status::Ok();
  for (size_t i = 0; i < pilot.rw_dirs.size() && moved.ok(); ++i) {
    if (!pilot.rw_dirs[i].empty()) moved = MoveEntries(spec.mounts[i].host_path, pilot.rw_dirs[i]);
  }
  return moved;
}

// After the task: what is in the pilot's writable directories moves back to
// the attempt's (the mounts' host paths).
Status MoveOutputsBack(const RunSpec& spec, const PilotPool::Pilot& pilot) {
  Status st = Status::Ok();
  for (size_t i = 0; i < pilot.rw_dirs.size(); ++i) {
    if (pilot.rw_dirs[i].empty() || !st.ok()) continue;
    // A task running as the agent's uid (no job user on this host) may
    // have locked the directory; the next task gets it as the first did.
    ::chmod(pilot.rw_dirs[i].c_str(), 0777);
    // What the job user made there is the agent's again before it moves
    // (a directory moves only with write access to itself).
    st = ReclaimJobFiles({pilot.rw_dirs[i]});
    if (st.ok()) st = MoveEntries(pilot.rw_dirs[i], spec.mounts[i].host_path);
  }
  return st;
}

// The RunSpec of a pilot container for tasks like `spec`: the pilot program
// instead of the task, its mounts' host paths in `bundle`. Fills the pilot's
// rw_dirs.
RunSpec PilotConfig(const RunSpec& spec, const std::string& bundle, const std::string& program_dir,
                    PilotPool::Pilot& pilot) {
  RunSpec config = spec;
  config.container_name = pilot.name;
  config.sandbox_group.clear();
  config.command = {kPilotProgram};
  config.command.insert(config.command.end(), kPilotClearedDirs.begin(), kPilotClearedDirs.end());
  config.args.clear();
  config.env.clear();
  // The pilot is a process of the container too.
  if (config.resources.pids() > 0) config.resources.set_pids(config.resources.pids() + 1);
  config.command.push_back("--give-back");
  for (size_t i = 0; i < config.mounts.size(); ++i) {
    Mount& m = config.mounts[i];
    m.host_path = bundle + (m.read_only ? "/ro" : "/rw") + std::to_string(i);
    pilot.rw_dirs.push_back(m.read_only ? "" : m.host_path);
    if (!m.read_only) config.command.push_back(m.container_path);
  }
  config.mounts.push_back({program_dir, kPilotMountDir, true, ""});
  return config;
}

// Fills the host paths of the pilot's mounts (`config`'s, as PilotConfig
// made them) for those of `spec`: inputs linked, output directories made.
Status FillPilotMounts(const RunSpec& spec, const RunSpec& config) {
  for (size_t i = 0; i < spec.mounts.size(); ++i) {
    const std::string& path = config.mounts[i].host_path;
    if (spec.mounts[i].read_only) {
      // Linked, so the pilot outlives the attempt's scratch; a directory
      // input (its files read-only) as a tree of links.
      struct stat st {};
      const std::string& from = spec.mounts[i].host_path;
      if (::stat(from.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
        if (Status linked = LinkTree(from, path); !linked.ok()) {
          return Status::FailedPrecondition("cannot link " + from + " into the pilot: " + linked.message());
        }
      } else if (::link(from.c_str(), path.c_str()) != 0) {
        return Status::FailedPrecondition("cannot link " + from + " into the pilot: " + std::strerror(errno));
      }
    } else if (Status made = MakeDirs(path, 0700); !made.ok()) {
      return made;
    } else if (Status open = OpenForJob({path}); !open.ok()) {
      return open;
    }
  }
  return Status::Ok();
}

// Makes the pipes that are the pilot's fds 3 to 6 (our ends in `pilot`) and
// starts `runc run` of its bundle with them.
Status SpawnPilot(const PilotPoolHooks& hooks, PilotPool::Pilot& pilot) {
  int request[2], reply[2];
  if (::pipe2(request, O_CLOEXEC) != 0) return Status::Internal("pipe failed");
  UniqueFd request_read(request[0]);
  pilot.request = UniqueFd(request[1]);
  if (::pipe2(reply, O_CLOEXEC) != 0) return Status::Internal("pipe failed");
  pilot.reply = UniqueFd(reply[0]);
  UniqueFd reply_write(reply[1]);
  ::fcntl(pilot.reply.get(), F_SETFL, O_NONBLOCK);
  int task_out[2], task_err[2];
  if (::pipe2(task_out, O_CLOEXEC | O_NONBLOCK) != 0) return Status::Internal("pipe failed");
  pilot.task_stdout = UniqueFd(task_out[0]);
  UniqueFd task_out_write(task_out[1]);
  if (::pipe2(task_err, O_CLOEXEC | O_NONBLOCK) != 0) return Status::Internal("pipe failed");
  pilot.task_stderr = UniqueFd(task_err[0]);
  UniqueFd task_err_write(task_err[1]);
  // The pilot's side must block: a task writing faster than we read waits.
  ::fcntl(task_out_write.get(), F_SETFL, 0);
  ::fcntl(task_err_write.get(), F_SETFL, 0);
  Result<Subprocess> child =
      Subprocess::Spawn({hooks.runc, "--root", hooks.state_dir, "--log", pilot.bundle + "/runc.log", "--log-format",
                         "json", "run", "--preserve-fds", "4", "--bundle", pilot.bundle, pilot.name},
                        {request_read.get(), reply_write.get(), task_out_write.get(), task_err_write.get()});
  if (!child.ok()) return child.status();
  pilot.runc.emplace(std::move(*child));
  return Status::Ok();
}

}  // namespace

struct PilotPool::State {
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;                                    // guarded by mu
  std::multimap<std::string, std::unique_ptr<Pilot>> idle;  // by key; guarded by mu
  std::set<std::string> names;                              // every live pilot; guarded by mu
  // Container name -> its pilot's writable directories, while its task runs; guarded by mu.
  std::map<std::string, std::vector<std::string>> live_dirs;
  // Container name -> the pilot its task runs in, while it runs; guarded by mu.
  std::map<std::string, std::string> running_in;
  uint64_t next_id = 0;  // guarded by mu
  std::thread reaper;

  // Registers, while a task runs in a pilot, its container's entries in
  // live_dirs and running_in (Set) and removes them (Clear, at the latest
  // when destroyed). Each takes mu itself: call them without it.
  struct LiveWhileRunning {
    State& state;
    const std::string& name;
    void Set(const std::vector<std::string>& rw_dirs, const std::string& pilot_name) {
      std::vector<std::string> dirs;
      for (const std::string& d : rw_dirs) {
        if (!d.empty()) dirs.push_back(d);
      }
      std::lock_guard<std::mutex> lock(state.mu);
      state.live_dirs[name] = std::move(dirs);
      state.running_in[name] = pilot_name;
    }
    void Clear() {
      std::lock_guard<std::mutex> lock(state.mu);
      state.live_dirs.erase(name);
      state.running_in.erase(name);
    }
    ~LiveWhileRunning() { Clear(); }
  };
};

struct PilotPool::Task {
  const RunSpec& spec;
  const image::ImageConfig& image;
  std::vector<std::string> argv;  // ContainerArgv
  std::string cwd;                // the image's working directory, or /
  std::string key;                // PilotKey
  OutputSink forward;             // to Run's sink, if it has one
  milliseconds timeout;
  const RunControl& stop;
  const std::function<void()>& on_started;
};

struct PilotPool::TaskEnd {
  ExitInfo info;                            // killed or timed_out, when that ended it
  std::optional<Result<PilotReply>> reply;  // the pilot's reply, or why none could be read
  bool ended = false;                       // `runc run` returned: the pilot sandbox is gone
};

struct PilotPool::Outcome {
  // Another try, in a fresh pilot: this one was gone before it took the task
  // or cannot clear its sandbox after it.
  static Outcome Retry() { return {true, std::nullopt}; }
  static Outcome Done(std::optional<Result<ExitInfo>> result) { return {false, std::move(result)}; }
  bool retry;
  std::optional<Result<ExitInfo>> result;  // Run's, unless retry
};

PilotPool::PilotPool(PilotPoolHooks hooks, milliseconds linger)
    : hooks_(std::move(hooks)), linger_(linger), state_(std::make_unique<State>()) {
  // The reaper must never take a signal meant for the process (the agent
  // waits for SIGTERM on a thread of its own; a thread that did not block
  // it would get the default action: death, without draining).
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  state_->reaper = std::thread([this] { ReaperLoop(); });
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

PilotPool::~PilotPool() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stopping = true;
  }
  state_->cv.notify_all();
  state_->reaper.join();
  std::multimap<std::string, std::unique_ptr<Pilot>> idle;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    idle.swap(state_->idle);
  }
  for (auto& [key, pilot] : idle) Retire(std::move(pilot), true);
}

std::set<std::string> PilotPool::Names() {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->names;
}

std::string PilotPool::PilotOf(const std::string& container_name) {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto it = state_->running_in.find(container_name);
  return it == state_->running_in.end() ? "" : it->second;
}

std::vector<std::string> PilotPool::LiveWritableDirs(const std::string& container_name) {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto it = state_->live_dirs.find(container_name);
  return it == state_->live_dirs.end() ? std::vector<std::string>{} : it->second;
}

void PilotPool::ReaperLoop() {
  std::unique_lock<std::mutex> lock(state_->mu);
  while (!state_->stopping) {
    state_->cv.wait_for(lock, linger_ / 2);
    const Clock::time_point now = Clock::now();
    std::vector<std::unique_ptr<Pilot>> expired;
    for (auto it = state_->idle.begin(); it != state_->idle.end();) {
      if (now - it->second->idle_since >= linger_) {
        expired.push_back(std::move(it->second));
        it = state_->idle.erase(it);
      } else {
        ++it;
      }
    }
    if (expired.empty()) continue;
    lock.unlock();
    for (auto& pilot : expired) Retire(std::move(pilot), true);
    lock.lock();
  }
}

std::unique_ptr<PilotPool::Pilot> PilotPool::TakeIdle(const std::string& key) {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto it = state_->idle.find(key);
  if (it == state_->idle.end()) return nullptr;
  std::unique_ptr<Pilot> pilot = std::move(it->second);
  state_->idle.erase(it);
  return pilot;
}

Result<std::unique_ptr<PilotPool::Pilot>> PilotPool::Start(const RunSpec& spec, const image::ImageConfig& image) {
  auto pilot = std::make_unique<Pilot>();
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    pilot->name = std::string(kRuncContainerPrefix) + "pilot-" + std::to_string(::getpid()) + "-" +
                  std::to_string(++state_->next_id);
    state_->names.insert(pilot->name);
  }
  pilot->key = PilotKey(spec);
  pilot->hostname = ContainerHostname(pilot->name);
  const std::string bundle = hooks_.bundles_dir + "/containers/" + pilot->name;
  const RunSpec config = PilotConfig(spec, bundle, hooks_.program_dir, *pilot);

  auto fail = [&](const Status& st) {
    if (Status removed = RemoveTree(bundle); !removed.ok())
      spdlog::warn("pilot {}: {}", pilot->name, removed.message());
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->names.erase(pilot->name);
    return st;
  };
  Result<std::string> written = hooks_.write_bundle(config, image);
  if (!written.ok()) return fail(written.status());
  pilot->bundle = *written;
  if (Status filled = FillPilotMounts(spec, config); !filled.ok()) return fail(filled);
  if (Status spawned = SpawnPilot(hooks_, *pilot); !spawned.ok()) return fail(spawned);
  return pilot;
}

void PilotPool::Retire(std::unique_ptr<Pilot> pilot, bool gracefully,
                       const std::function<void(Pilot&)>& before_removal) {
  Subprocess& runc = *pilot->runc;
  pilot->request.Reset();  // end of file: the pilot exits
  const auto drop = [](const std::string&, std::string_view) {};
  auto wait_exit = [&](milliseconds limit) {
    const Clock::time_point until = Clock::now() + limit;
    while (!runc.Pump(std::chrono::ceil<milliseconds>(until - std::min(until, Clock::now())), -1, drop)) {
      if (Clock::now() >= until) return false;
    }
    return true;
  };
  bool gone = gracefully && wait_exit(kRetireWait);
  if (!gone) {
    hooks_.destroy(pilot->name);
    if (!wait_exit(kDestroyWait)) {
      runc.Kill();
      wait_exit(kDestroyWait);
    }
  }
  // `runc run` removes the container when it returns; after a failure or a
  // kill, make sure.
  if (!gone || !WIFEXITED(runc.wait_status()) || WEXITSTATUS(runc.wait_status()) != 0) hooks_.destroy(pilot->name);
  if (before_removal) before_removal(*pilot);
  if (Status st = RemoveTree(pilot->bundle); !st.ok()) spdlog::warn("pilot {}: {}", pilot->name, st.message());
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->names.erase(pilot->name);
}

std::optional<Result<ExitInfo>> PilotPool::Run(const RunSpec& spec, const image::ImageConfig& image,
                                               const OutputSink& sink, milliseconds timeout,
                                               const std::function<void()>& on_started, const RunControl& stop) {
  // Outputs are moved and inputs linked, never copied.
  for (const Mount& m : spec.mounts) {
    if (!SameFilesystem(m.host_path, hooks_.bundles_dir)) return std::nullopt;
  }
  std::vector<std::string> argv = ContainerArgv(spec, image);
  if (argv.empty()) return std::nullopt;  // the container path words the error
  const Task task{
      .spec = spec,
      .image = image,
      .argv = std::move(argv),
      .cwd = image.working_dir.empty() ? "/" : image.working_dir,
      .key = PilotKey(spec),
      .forward =
          [&sink](const std::string& stream, std::string_view data) {
            if (sink) sink(stream, data);
          },
      .timeout = timeout,
      .stop = stop,
      .on_started = on_started,
  };
  bool started = false;
  for (int round = 0; round < 2; ++round) {
    bool fresh = false;
    Result<std::unique_ptr<Pilot>> pilot = Acquire(task, fresh);
    if (!pilot.ok()) {
      if (!started) return std::nullopt;
      return Result<ExitInfo>(pilot.status());
    }
    Outcome outcome = TryIn(std::move(*pilot), fresh, task, started);
    if (!outcome.retry) return std::move(outcome.result);
  }
  return Result<ExitInfo>(Status::Internal("no pilot could run " + spec.container_name));
}

Result<std::unique_ptr<PilotPool::Pilot>> PilotPool::Acquire(const Task& task, bool& fresh) {
  std::unique_ptr<Pilot> pilot = TakeIdle(task.key);
  fresh = pilot == nullptr;
  if (!fresh) return pilot;
  Result<std::unique_ptr<Pilot>> made = Start(task.spec, task.image);
  if (!made.ok()) spdlog::warn("no pilot for {}: {}", task.spec.container_name, made.status().message());
  return made;
}

PilotPool::Outcome PilotPool::TryIn(std::unique_ptr<Pilot> pilot, bool fresh, const Task& task, bool& started) {
  Result<std::string> request =
      EncodePilotRequest(task.cwd, task.argv, ContainerEnv(task.spec, task.image, pilot->hostname));
  if (!request.ok()) {
    Retire(std::move(pilot), true);
    return Outcome::Done(Result<ExitInfo>(request.status()));
  }
  const Status moved = MoveOutputsIntoPilot(task.spec, *pilot);
  // From now until the task ends, what it writes is in the pilot's
  // directories: the attempt's disk watcher must look there too
  // (LiveWritableDirs). Only once the entries are in: the watcher walks the
  // attempt's own directories first, so entries moving from those to the
  // pilot's while both are listed could count twice (the other way never).
  State::LiveWhileRunning live{*state_, task.spec.container_name};
  if (moved.ok()) live.Set(pilot->rw_dirs, pilot->name);
  if (!moved.ok() || !WriteAll(pilot->request.get(), *request)) {
    const Status back = RetireKeepingOutputs(std::move(pilot), task.spec);
    if (!moved.ok() || !back.ok()) return Outcome::Done(Result<ExitInfo>(moved.ok() ? back : moved));
    return Outcome::Retry();  // the pilot was gone: a fresh one
  }
  if (!started && task.on_started) task.on_started();
  started = true;

  const TaskEnd end = AwaitEnd(*pilot, task);
  // The task is over: what it wrote goes back to the attempt's directories.
  live.Clear();
  if (end.reply && end.reply->ok() && (*end.reply)->kind == PilotReply::Kind::kUnclean) {
    spdlog::warn("pilot {} cannot clear its sandbox ({}); the task goes to a fresh one", pilot->name,
                 (*end.reply)->text);
    const Status back = RetireKeepingOutputs(std::move(pilot), task.spec);
    if (!back.ok()) return Outcome::Done(Result<ExitInfo>(back));
    return Outcome::Retry();
  }
  if (end.reply && end.reply->ok()) return Outcome::Done(FinishReplied(std::move(pilot), task, end));
  return Outcome::Done(FinishFailed(std::move(pilot), task, fresh, end));
}

PilotPool::TaskEnd PilotPool::AwaitEnd(Pilot& pilot, const Task& task) {
  const RunControl& stop = task.stop;
  TaskEnd end;
  PilotReplyReader reader;
  const Clock::time_point task_start = Clock::now();
  Clock::time_point deadline = stop.Deadline(task_start, task.timeout);
  milliseconds wait = std::chrono::ceil<milliseconds>(deadline - std::min(deadline, Clock::now()));
  while (true) {
    const bool exited = pilot.runc->Pump(
        wait, {pilot.reply.get(), stop.wake_fd, pilot.task_stdout.get(), pilot.task_stderr.get()}, task.forward);
    DrainTaskOutput(pilot, task.forward);
    if (exited) {
      end.ended = true;
      return end;
    }
    end.reply = ReadReply(pilot, reader);
    if (end.reply) return end;
    if (stop.wake_fd >= 0) ResetEventFd(stop.wake_fd);
    if (stop.kill_requested && stop.kill_requested()) {
      end.info.killed = true;
      return end;
    }
    deadline = stop.Deadline(task_start, task.timeout);  // later while the task was frozen
    if (Clock::now() >= deadline) {
      end.info.timed_out = true;
      return end;
    }
    wait = std::chrono::ceil<milliseconds>(deadline - std::min(deadline, Clock::now()));
  }
}

Result<ExitInfo> PilotPool::FinishReplied(std::unique_ptr<Pilot> pilot, const Task& task, const TaskEnd& end) {
  // Every writer of the task pipes but the pilot is dead: what is in
  // them now is all the task wrote.
  DrainTaskOutput(*pilot, task.forward);
  pilot->runc->Pump(milliseconds(0), -1, task.forward);
  ExitInfo info = end.info;
  RecordReply(end.reply->value(), info);
  Status out = MoveOutputsBack(task.spec, *pilot);
  if (!out.ok()) {
    Retire(std::move(pilot), false);
    return Result<ExitInfo>(out);
  }
  pilot->replied_once = true;
  Park(std::move(pilot), task.key);
  return Result<ExitInfo>(info);
}

void PilotPool::Park(std::unique_ptr<Pilot> pilot, const std::string& key) {
  pilot->idle_since = Clock::now();
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->idle.emplace(key, std::move(pilot));
  }
  state_->cv.notify_all();
}

std::optional<Result<ExitInfo>> PilotPool::FinishFailed(std::unique_ptr<Pilot> pilot, const Task& task, bool fresh,
                                                        const TaskEnd& end) {
  // Killed, timed out, or the pilot misbehaved or ended: the sandbox and
  // whatever still runs in it go.
  const std::string runc_errors = RuncErrorsOf(*pilot);
  const bool never_ran = fresh && end.ended && !runc_errors.empty();
  ExitInfo info = end.info;
  if (end.ended) {
    info.error = "the pilot sandbox ended unexpectedly" + (runc_errors.empty() ? "" : ": runc failed: " + runc_errors);
  } else if (end.reply) {
    info.error = "pilot " + pilot->name + ": " + end.reply->status().message();
  } else {
    info.exit_code = 137;
  }
  // What the task wrote before it was stopped is its output, as in a
  // container of its own.
  const Status back = RetireKeepingOutputs(std::move(pilot), task.spec);
  if (!info.error.empty()) spdlog::warn("{}: {}", task.spec.container_name, info.error);
  if (!back.ok()) return Result<ExitInfo>(back);
  if (never_ran) return std::nullopt;  // runc could not start it: the caller's own container says why
  return Result<ExitInfo>(info);
}

Status PilotPool::RetireKeepingOutputs(std::unique_ptr<Pilot> pilot, const RunSpec& spec) {
  Status back = Status::Ok();
  Retire(std::move(pilot), false, [&](Pilot& p) { back = MoveOutputsBack(spec, p); });
  return back;
}

}  // namespace idlegrid::runtime
