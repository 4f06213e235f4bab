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

void EventCounters::TrackRun(const std::string& job_id, uint32_t index, const jobs::AttemptOutcome& outcome,
                             int64_t now_ms) {
  if (!outcome.changed) return;
  const std::string key = job_id + "/" + std::to_string(index);
  MutexLock lock(&mu_);
  if (outcome.attempt_state == v1::RUNNING) {
    running_since_[key] = now_ms;
  } else if (jobs::IsTerminal(outcome.attempt_state)) {
    auto it = running_since_.find(key);
    if (it == running_since_.end()) return;
    // A lost node's attempt did not end when it was declared lost.
    if (outcome.reason != v1::NODE_LOST) run_time_.Observe(static_cast<double>(now_ms - it->second) / 1000.0);
    running_since_.erase(it);
  }
}

void EventCounters::QueueWait(double seconds) {
  MutexLock lock(&mu_);
  queue_wait_.Observe(seconds);
}

void EventCounters::Dispatched(double plan_seconds, double commit_seconds) {
  MutexLock lock(&mu_);
  dispatch_.Observe(plan_seconds);
  commit_.Observe(commit_seconds);
}

EventCounters::Snapshot EventCounters::Read() {
  Snapshot out;
  out.heartbeats_received = heartbeats_received_.load(std::memory_order_relaxed);
  out.nodes_suspected = nodes_suspected_.load(std::memory_order_relaxed);
  out.nodes_lost = nodes_lost_.load(std::memory_order_relaxed);
  out.artifact_bytes_in = artifact_bytes_in_.load(std::memory_order_relaxed);
  out.artifact_bytes_out = artifact_bytes_out_.load(std::memory_order_relaxed);
  MutexLock lock(&mu_);
  out.attempts_succeeded = attempts_succeeded_;
  out.attempt_failures = attempt_failures_;
  out.queue_wait = queue_wait_;
  out.run_time = run_time_;
  out.dispatch = dispatch_;
  out.commit = commit_;
  return out;
}

}  // namespace idlegrid::coordinator
