#pragma once
// What this coordinator counted since it started, for Metrics(): attempts
// ended (by failure class), heartbeats received, failure-detector
// transitions. Thread-safe; counting never blocks on anything but a leaf lock.
#include <atomic>
#include <cstdint>
#include <map>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "jobs/attempt_events.h"

namespace idlegrid::coordinator {

class EventCounters {
 public:
  // Counts an attempt that ended (SUCCEEDED, or by its failure reason);
  // unchanged or non-terminal outcomes count nothing.
  void CountOutcome(const jobs::AttemptOutcome& outcome) IG_EXCLUDES(mu_);
  void HeartbeatReceived() { heartbeats_received_.fetch_add(1, std::memory_order_relaxed); }
  void NodeSuspected() { nodes_suspected_.fetch_add(1, std::memory_order_relaxed); }
  void NodeLost() { nodes_lost_.fetch_add(1, std::memory_order_relaxed); }

  struct Snapshot {
    uint64_t attempts_succeeded = 0;
    std::map<v1::FailureReason, uint64_t> attempt_failures;
    uint64_t heartbeats_received = 0;
    uint64_t nodes_suspected = 0;
    uint64_t nodes_lost = 0;
  };
  // The counts now (each counter read on its own: not one instant).
  Snapshot Read() IG_EXCLUDES(mu_);

 private:
  std::atomic<uint64_t> heartbeats_received_{0};
  std::atomic<uint64_t> nodes_suspected_{0};
  std::atomic<uint64_t> nodes_lost_{0};
  Mutex mu_;
  uint64_t attempts_succeeded_ IG_GUARDED_BY(mu_) = 0;
  std::map<v1::FailureReason, uint64_t> attempt_failures_ IG_GUARDED_BY(mu_);
};

}  // namespace idlegrid::coordinator
