#include "coordinator/event_counters.h"

#include "jobs/task_state.h"

namespace idlegrid::coordinator {

void EventCounters::CountOutcome(const jobs::AttemptOutcome& outcome) {
  if (!outcome.changed || !jobs::IsTerminal(outcome.attempt_state)) return;
  MutexLock lock(&mu_);
  if (outcome.attempt_state == v1::SUCCEEDED) {
    ++attempts_succeeded_;
  } else {
    ++attempt_failures_[outcome.reason];
  }
}

EventCounters::Snapshot EventCounters::Read() {
  Snapshot out;
  out.heartbeats_received = heartbeats_received_.load(std::memory_order_relaxed);
  out.nodes_suspected = nodes_suspected_.load(std::memory_order_relaxed);
  out.nodes_lost = nodes_lost_.load(std::memory_order_relaxed);
  MutexLock lock(&mu_);
  out.attempts_succeeded = attempts_succeeded_;
  out.attempt_failures = attempt_failures_;
  return out;
}

}  // namespace idlegrid::coordinator
