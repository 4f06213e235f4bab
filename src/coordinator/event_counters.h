#pragma once
// What this coordinator counted since it started, for Metrics(): attempts
// ended (by failure class) and how long they ran, how long tasks waited,
// dispatch and commit latency, artifact bytes, heartbeats received,
// failure-detector transitions. Thread-safe; counting never blocks on
// anything but a leaf lock.
#include <atomic>
#include <cstdint>
#include <map>
#include <string>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "jobs/attempt_events.h"
#include "metrics/exposition.h"

namespace idlegrid::coordinator {

class EventCounters {
 public:
  // Counts an attempt that ended (SUCCEEDED, or by its failure reason);
  // unchanged or non-terminal outcomes count nothing.
  void CountOutcome(const jobs::AttemptOutcome& outcome) IG_EXCLUDES(mu_);
  // Run time: from the report that made a task's attempt RUNNING to the one
  // that ended it (a task runs one attempt at a time). Starts seen before a
  // restart are not known; those runs are not observed.
  void TrackRun(const std::string& job_id, uint32_t index, const jobs::AttemptOutcome& outcome, int64_t now_ms)
      IG_EXCLUDES(mu_);
  void QueueWait(double seconds) IG_EXCLUDES(mu_);
  void Dispatched(double plan_seconds, double commit_seconds) IG_EXCLUDES(mu_);
  void ArtifactBytes(bool received, uint64_t bytes) {
    (received ? artifact_bytes_in_ : artifact_bytes_out_).fetch_add(bytes, std::memory_order_relaxed);
  }
  void HeartbeatReceived() { heartbeats_received_.fetch_add(1, std::memory_order_relaxed); }
  void NodeSuspected() { nodes_suspected_.fetch_add(1, std::memory_order_relaxed); }
  void NodeLost() { nodes_lost_.fetch_add(1, std::memory_order_relaxed); }

  struct Snapshot {
    uint64_t attempts_succeeded = 0;
    std::map<v1::FailureReason, uint64_t> attempt_failures;
    uint64_t heartbeats_received = 0;
    uint64_t nodes_suspected = 0;
    uint64_t nodes_lost = 0;
    uint64_t artifact_bytes_in = 0;
    uint64_t artifact_bytes_out = 0;
    metrics::Histogram queue_wait{metrics::DurationBuckets()};
    metrics::Histogram run_time{metrics::DurationBuckets()};
    metrics::Histogram dispatch{metrics::LatencyBuckets()};
    metrics::Histogram commit{metrics::LatencyBuckets()};
  };
  // The counts now (each counter read on its own: not one instant).
  Snapshot Read() IG_EXCLUDES(mu_);

 private:
  std::atomic<uint64_t> heartbeats_received_{0};
  std::atomic<uint64_t> nodes_suspected_{0};
  std::atomic<uint64_t> nodes_lost_{0};
  std::atomic<uint64_t> artifact_bytes_in_{0};
  std::atomic<uint64_t> artifact_bytes_out_{0};
  Mutex mu_;
  uint64_t attempts_succeeded_ IG_GUARDED_BY(mu_) = 0;
  std::map<v1::FailureReason, uint64_t> attempt_failures_ IG_GUARDED_BY(mu_);
  std::map<std::string, int64_t> running_since_ IG_GUARDED_BY(mu_);  // "job/index" -> ms
  metrics::Histogram queue_wait_ IG_GUARDED_BY(mu_) = metrics::Histogram(metrics::DurationBuckets());
  metrics::Histogram run_time_ IG_GUARDED_BY(mu_) = metrics::Histogram(metrics::DurationBuckets());
  metrics::Histogram dispatch_ IG_GUARDED_BY(mu_) = metrics::Histogram(metrics::LatencyBuckets());
  metrics::Histogram commit_ IG_GUARDED_BY(mu_) = metrics::Histogram(metrics::LatencyBuckets());
};

}  // namespace idlegrid::coordinator
