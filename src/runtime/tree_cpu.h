#pragma once
// CPU time of a container's process tree read from /proc, for a driver that
// cannot wait for the tree itself: podman's conmon, not the agent, is the
// parent of a podman container, so the rusage the runc driver reads is not
// there, and rootless podman on cgroup v1 has no cgroup to read either.
//
// A process's utime + stime + cutime + cstime counts its own CPU and that of
// every descendant it has waited for, so summing it over the live tree under
// the container's first process counts each process at most once, exited
// ones included when their parent (or the container's init, for orphans)
// waited for them; a child reaped with SIGCHLD ignored is not counted.
// Sampled: what the tree uses after the last sample before it exits is not
// counted either, so the figure is a lower bound (cpu_source "proc").
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace idlegrid::runtime {

// The fields of a /proc/PID/stat line the sampler reads, in clock ticks.
struct ProcCpu {
  int ppid = 0;
  uint64_t own_ticks = 0;       // utime + stime
  uint64_t children_ticks = 0;  // cutime + cstime (descendants waited for)
  uint64_t start_ticks = 0;     // starttime: tells a reused pid apart
};

// Parses "pid (comm) state ppid ... utime stime cutime cstime ... starttime
// ...". nullopt when malformed. Pure.
std::optional<ProcCpu> ParseProcStat(std::string_view line);

class TreeCpuSampler {
 public:
  explicit TreeCpuSampler(int root) : root_(root) {}
  // Reads the tree under the root once. False once the root is gone, or its
  // pid now names another process (the figure then stays as it was).
  bool Sample();
  // The most CPU the tree was seen to have used, in microseconds.
  uint64_t usec() const { return usec_; }
  // Whether any sample read the tree.
  bool measured() const { return samples_ > 0; }

 private:
  const int root_;
  std::optional<uint64_t> root_start_;
  uint64_t usec_ = 0;
  int samples_ = 0;
};

// Samples, on its own thread, the tree of the process whose pid `pidfile`
// names once the container runtime writes it (podman run --pidfile), until
// Stop(), which samples once more. Read usec() and measured() after Stop().
// `pidfile` must be in a directory only the caller writes, fresh for the
// run: a file already there is taken as the run's.
class TreeCpuWatch {
 public:
  explicit TreeCpuWatch(std::string pidfile, std::chrono::milliseconds interval = std::chrono::milliseconds(500));
  ~TreeCpuWatch() { Stop(); }
  TreeCpuWatch(const TreeCpuWatch&) = delete;
  TreeCpuWatch& operator=(const TreeCpuWatch&) = delete;

  void Stop();
  bool measured() const { return sampler_ && sampler_->measured(); }
  uint64_t usec() const { return sampler_ ? sampler_->usec() : 0; }

 private:
  void Loop();
  void SampleOnce();  // the thread's, then Stop()'s

  const std::string pidfile_;
  const std::chrono::milliseconds interval_;
  std::optional<TreeCpuSampler> sampler_;  // the thread's until Stop()
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool gone_ = false;  // with sampler_
  std::thread thread_;
};

}  // namespace idlegrid::runtime
