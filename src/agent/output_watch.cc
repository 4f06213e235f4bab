#include "agent/output_watch.h"

#include <algorithm>
#include <optional>

#include "common/disk_usage.h"

namespace idlegrid::agent {

Result<uint64_t> MeasureWritableDirs(const std::vector<std::string>& dirs) {
  uint64_t total = 0;
  for (const std::string& dir : dirs) {
    Result<uint64_t> bytes = MeasureTree(dir);
    if (!bytes.ok() && bytes.status().code() == Code::kNotFound) continue;
    if (!bytes.ok()) return bytes.status();
    total += *bytes;
  }
  return total;
}

OutputWatch::OutputWatch(Options options) : options_(std::move(options)) {
  thread_ = std::thread([this] { Loop(); });
}

void OutputWatch::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

std::optional<std::string> OutputWatch::Breach() {
  MutexLock lock(&mu_);
  return breach_;
}

void OutputWatch::Loop() {
  using Clock = std::chrono::steady_clock;
  std::chrono::milliseconds wait = options_.interval;
  std::optional<Clock::time_point> unreadable_since;
  while (true) {
    {
      MutexLock lock(&mu_);
      if (wake_.WaitFor(&mu_, wait, [this]() IG_REQUIRES(mu_) { return stopping_; })) return;
    }
    // The attempt's own directories first: a pilot moves a task's files
    // from its directories back to these when the task ends, so walking
    // them in this order never counts a file twice.
    std::vector<std::string> dirs = options_.dirs;
    if (options_.live_dirs) {
      std::vector<std::string> live = options_.live_dirs();
      dirs.insert(dirs.end(), live.begin(), live.end());
    }
    const Clock::time_point start = Clock::now();
    const Result<uint64_t> used = MeasureWritableDirs(dirs);
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    wait = std::max(options_.interval, 4 * took);
    if (used.ok()) {
      unreadable_since.reset();
    } else {
      if (!unreadable_since) unreadable_since = start;
      if (Clock::now() - *unreadable_since < options_.unreadable_grace) continue;
    }
    std::optional<std::string> breach = OutputCapBreach(used, options_.cap, OutputCheck::kWhileRunning);
    if (!breach) continue;
    {
      MutexLock lock(&mu_);
      if (stopping_) return;  // the run ended meanwhile: the check at collect judges it
      breach_ = breach;
    }
    options_.kill(*breach);
    return;
  }
}

}  // namespace idlegrid::agent
