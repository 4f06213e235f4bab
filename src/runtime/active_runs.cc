#include "runtime/active_runs.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

namespace idlegrid::runtime {

ActiveRuns::Entry::~Entry() {
  std::lock_guard<std::mutex> lock(owner_->mu_);
  owner_->runs_.erase(name_);
}

bool ActiveRuns::Entry::kill_requested() const {
  std::lock_guard<std::mutex> lock(owner_->mu_);
  return kill_requested_;
}

std::chrono::milliseconds ActiveRuns::Entry::paused_for() const {
  std::lock_guard<std::mutex> lock(owner_->mu_);
  std::chrono::milliseconds total = paused_total_;
  if (frozen_since_) {
    total += std::chrono::duration_cast<std::chrono::milliseconds>(RunControl::Clock::now() - *frozen_since_);
  }
  return total;
}

RunControl ActiveRuns::Entry::Control() const {
  return RunControl{wake_.get(), [this] { return kill_requested(); }, [this] { return paused_for(); }};
}

void ActiveRuns::MarkFrozen(const std::string& name, bool frozen) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = runs_.find(name);
  if (it == runs_.end()) return;
  Entry& e = *it->second;
  if (frozen && !e.frozen_since_) {
    e.frozen_since_ = RunControl::Clock::now();
  } else if (!frozen && e.frozen_since_) {
    e.paused_total_ +=
        std::chrono::duration_cast<std::chrono::milliseconds>(RunControl::Clock::now() - *e.frozen_since_);
    e.frozen_since_.reset();
  }
}

Result<std::unique_ptr<ActiveRuns::Entry>> ActiveRuns::Register(const std::string& name) {
  UniqueFd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (wake.get() < 0) return Status::Internal("eventfd failed");
  std::lock_guard<std::mutex> lock(mu_);
  if (runs_.count(name) != 0) {
    return Status::AlreadyExists("container " + name + " is already being run by this agent");
  }
  std::unique_ptr<Entry> entry(new Entry(this, name, std::move(wake)));
  runs_.emplace(name, entry.get());
  return entry;
}

bool ActiveRuns::RequestKill(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = runs_.find(name);
  if (it == runs_.end()) return false;
  it->second->kill_requested_ = true;
  const uint64_t one = 1;
  // Cannot fail short of a bug: the eventfd counter is far from overflowing.
  [[maybe_unused]] const ssize_t written = ::write(it->second->wake_.get(), &one, sizeof one);
  return true;
}

}  // namespace idlegrid::runtime
