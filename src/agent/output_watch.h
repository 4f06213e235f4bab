#pragma once
// The shell around output_cap.h: measures an attempt's writable directories
// (common/disk_usage.h) while its container runs, and stops the container
// once their total passes the cap, so a job cannot fill the node's disk
// before it ends. RLIMIT_FSIZE caps one file; this caps them all.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/output_cap.h"
#include "common/mutex.h"
#include "common/status.h"

namespace idlegrid::agent {

// What the directories in `dirs` hold together (MeasureTree each); a
// directory that does not exist holds nothing. The first error otherwise.
Result<uint64_t> MeasureWritableDirs(const std::vector<std::string>& dirs);

// Measures every `interval` (longer when a walk is slow: a round waits at
// least four times what the last walk took, so the walks cost the node at
// most a fifth of a core) from construction until Stop().
class OutputWatch {
 public:
  struct Options {
    std::vector<std::string> dirs;  // the attempt's writable directories
    // Where else the container writes now (ContainerRuntime::LiveWritableDirs), asked each round.
    std::function<std::vector<std::string>()> live_dirs;
    OutputCap cap;
    std::chrono::milliseconds interval{250};
    // Stops the container, given why: called at most once, on the watch's own thread.
    std::function<void(const std::string& why)> kill;
    // A tree the agent cannot read stops the container once it has stayed
    // unreadable this long: a job that hides a directory (chmod 0) as it
    // exits is judged by the check at collect, after its files are taken
    // back, not killed for the moment between its chmod and its end; one
    // that keeps it hidden while it runs is stopped all the same.
    std::chrono::milliseconds unreadable_grace{2000};
  };

  explicit OutputWatch(Options options);
  ~OutputWatch() { Stop(); }
  OutputWatch(const OutputWatch&) = delete;
  OutputWatch& operator=(const OutputWatch&) = delete;

  // Ends the watch; returns once no walk or kill of it runs. Idempotent.
  void Stop();
  // Why it stopped the container (OutputCapBreach's message), or nullopt
  // when it did not. Final once Stop() returned.
  std::optional<std::string> Breach();

 private:
  void Loop();

  const Options options_;
  Mutex mu_;
  CondVar wake_;
  bool stopping_ IG_GUARDED_BY(mu_) = false;
  std::optional<std::string> breach_ IG_GUARDED_BY(mu_);
  std::thread thread_;  // started last: it reads the members above
};

}  // namespace idlegrid::agent
