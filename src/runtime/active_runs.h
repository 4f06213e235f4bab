#pragma once
// The containers a driver is running right now, so that Kill() on another
// thread can interrupt the Run() that waits on one. Both drivers (runc,
// podman) keep one.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <mutex>
#include <string>

#include "common/status.h"
#include "common/unique_fd.h"

namespace idlegrid::runtime {

// How a Run in progress is stopped, and how long it has spent frozen: the
// owner's pauses (ContainerRuntime::Freeze) do not count against the job's
// run timeout, or a game in the evening would kill a night's training.
struct RunControl {
  using Clock = std::chrono::steady_clock;
  int wake_fd = -1;
  std::function<bool()> kill_requested;
  std::function<std::chrono::milliseconds()> paused_for;  // null: never frozen

  // When a run that began at `start` with `timeout` (<= 0: none) is out of
  // time, as far as is known now; it moves later while the run is frozen.
  Clock::time_point Deadline(Clock::time_point start, std::chrono::milliseconds timeout) const {
    if (timeout.count() <= 0) return Clock::time_point::max();
    return start + timeout + (paused_for ? paused_for() : std::chrono::milliseconds(0));
  }
};

class ActiveRuns {
 public:
  // One Run in progress; unregistered when destroyed (owned by Run's frame).
  class Entry {
   public:
    ~Entry();
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;
    // The eventfd RequestKill writes: Supervise wakes on it.
    int wake_fd() const { return wake_.get(); }
    bool kill_requested() const;
    // Time spent frozen so far, the current freeze included.
    std::chrono::milliseconds paused_for() const;
    // For Supervise and the pilot pool; valid while this entry lives.
    RunControl Control() const;

   private:
    friend class ActiveRuns;
    Entry(ActiveRuns* owner, std::string name, UniqueFd wake)
        : owner_(owner), name_(std::move(name)), wake_(std::move(wake)) {}
    ActiveRuns* const owner_;
    const std::string name_;
    const UniqueFd wake_;
    bool kill_requested_ = false;                                // guarded by owner_->mu_
    std::optional<RunControl::Clock::time_point> frozen_since_;  // guarded by owner_->mu_
    std::chrono::milliseconds paused_total_{0};                  // guarded by owner_->mu_; ended freezes
  };

  // AlreadyExists if `name` is being run already; Internal if no eventfd.
  Result<std::unique_ptr<Entry>> Register(const std::string& name);
  // Marks `name` to be stopped and wakes its Run; false if it is not running here.
  bool RequestKill(const std::string& name);
  // Records that `name`'s processes were frozen (true) or thawed (false);
  // idempotent, and a no-op when it is not running here.
  void MarkFrozen(const std::string& name, bool frozen);

 private:
  mutable std::mutex mu_;
  std::map<std::string, Entry*> runs_;  // guarded by mu_
};

}  // namespace idlegrid::runtime
