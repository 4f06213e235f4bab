#pragma once
// The containers a driver is running right now, so that Kill() on another
// thread can interrupt the Run() that waits on one. Both drivers (runc,
// podman) keep one.
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/status.h"
#include "common/unique_fd.h"

namespace idlegrid::runtime {

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

   private:
    friend class ActiveRuns;
    Entry(ActiveRuns* owner, std::string name, UniqueFd wake)
        : owner_(owner), name_(std::move(name)), wake_(std::move(wake)) {}
    ActiveRuns* const owner_;
    const std::string name_;
    const UniqueFd wake_;
    bool kill_requested_ = false;  // guarded by owner_->mu_
  };

  // AlreadyExists if `name` is being run already; Internal if no eventfd.
  Result<std::unique_ptr<Entry>> Register(const std::string& name);
  // Marks `name` to be stopped and wakes its Run; false if it is not running here.
  bool RequestKill(const std::string& name);

 private:
  mutable std::mutex mu_;
  std::map<std::string, Entry*> runs_;  // guarded by mu_
};

}  // namespace idlegrid::runtime
