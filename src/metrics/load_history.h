#pragma once
// The fleet's load over time for the dashboard's chart (GET /v1/history):
// a fixed-size ring of samples the coordinator takes every few seconds, and
// the sample and its JSON computed from plain values. Pure: the coordinator
// reads the clock and the store and holds the lock; nothing here does I/O.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::metrics {

// One sample of the fleet's load at `at_ms`.
struct LoadSample {
  int64_t at_ms = 0;
  uint64_t queued_tasks = 0;    // waiting for a node
  uint64_t running_tasks = 0;   // assigned or running
  uint32_t gpus_allocated = 0;  // devices with memory held by attempts
  uint32_t gpus_total = 0;      // devices the online nodes advertise
  // The market's price then: per device class, the lowest ask per hour in
  // micro-credits (what the next placement pays under pay-as-ask).
  std::map<std::string, int64_t> lowest_ask_micros;
  bool operator==(const LoadSample&) const = default;
};

// The newest `capacity` samples; older ones fall out. Not thread-safe: the
// owner holds its own lock.
class LoadHistory {
 public:
  // `capacity` > 0 (a zero capacity is taken as 1).
  explicit LoadHistory(size_t capacity);
  void Add(const LoadSample& sample);
  // Whether a sample taken at `now_ms` is due: none yet, or `period_ms` or
  // more since the newest (a clock that stepped back also makes one due, so
  // the ring never stalls).
  bool Due(int64_t now_ms, int64_t period_ms) const;
  // Oldest first.
  std::vector<LoadSample> Samples() const;
  size_t size() const { return size_; }
  size_t capacity() const { return ring_.size(); }

 private:
  std::vector<LoadSample> ring_;
  size_t next_ = 0;  // where the next sample goes
  size_t size_ = 0;
};

// The sample the job list and node list describe (without prices): task counts from each
// job's task_counts; GPUs of online nodes only, allocated when some of their
// usable memory (total less the owner's reserve) is held.
LoadSample LoadSampleOf(int64_t at_ms, const v1::ListJobsResponse& jobs, const v1::ListNodesResponse& nodes);

// {"periodMs": P, "samples": [{"atMs": ..., "queuedTasks": ..., "runningTasks": ...,
//  "gpusAllocated": ..., "gpusTotal": ..., "lowestAskMicros": {"CLASS": ...}}, ...]}
// (numbers as JSON numbers: all fit a double exactly).
std::string LoadHistoryJson(const std::vector<LoadSample>& samples, int64_t period_ms);

}  // namespace idlegrid::metrics
