#include "metrics/load_history.h"

#include <algorithm>

#include "capacity/node_capacity.h"
#include "common/json_writer.h"

namespace idlegrid::metrics {

LoadHistory::LoadHistory(size_t capacity) : ring_(std::max<size_t>(capacity, 1)) {}

void LoadHistory::Add(const LoadSample& sample) {
  ring_[next_] = sample;
  next_ = (next_ + 1) % ring_.size();
  size_ = std::min(size_ + 1, ring_.size());
}

bool LoadHistory::Due(int64_t now_ms, int64_t period_ms) const {
  if (size_ == 0) return true;
  const int64_t newest = ring_[(next_ + ring_.size() - 1) % ring_.size()].at_ms;
  return now_ms < newest || now_ms - newest >= period_ms;
}

std::vector<LoadSample> LoadHistory::Samples() const {
  std::vector<LoadSample> out;
  out.reserve(size_);
  const size_t oldest = (next_ + ring_.size() - size_) % ring_.size();
  for (size_t i = 0; i < size_; ++i) out.push_back(ring_[(oldest + i) % ring_.size()]);
  return out;
}

LoadSample LoadSampleOf(int64_t at_ms, const v1::ListJobsResponse& jobs, const v1::ListNodesResponse& nodes) {
  LoadSample s;
  s.at_ms = at_ms;
  for (const auto& job : jobs.jobs()) {
    for (const auto& [state, n] : job.task_counts()) {
      if (state == "queued") s.queued_tasks += n;
      if (state == "assigned" || state == "running") s.running_tasks += n;
    }
  }
  for (const auto& node : nodes.nodes()) {
    if (node.state() == "offline") continue;
    for (const auto& g : node.gpus()) {
      ++s.gpus_total;
      const uint64_t usable = capacity::UsableVram(g.memory_total_bytes(), g.reserved_memory_bytes());
      if (g.allocatable_memory_bytes() < usable) ++s.gpus_allocated;
    }
  }
  return s;
}

std::string LoadHistoryJson(const std::vector<LoadSample>& samples, int64_t period_ms) {
  JsonWriter w;
  w.BeginObject().Key("periodMs").SignedNumber(period_ms).Key("samples").BeginArray();
  for (const LoadSample& s : samples) {
    w.BeginObject()
        .Key("atMs")
        .SignedNumber(s.at_ms)
        .Key("queuedTasks")
        .Number(s.queued_tasks)
        .Key("runningTasks")
        .Number(s.running_tasks)
        .Key("gpusAllocated")
        .Number(s.gpus_allocated)
        .Key("gpusTotal")
        .Number(s.gpus_total)
        .Key("lowestAskMicros")
        .BeginObject();
    for (const auto& [device_class, micros] : s.lowest_ask_micros) w.Key(device_class).SignedNumber(micros);
    w.EndObject().EndObject();
  }
  w.EndArray().EndObject();
  return w.Take() + "\n";
}

}  // namespace idlegrid::metrics
