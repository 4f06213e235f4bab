#pragma once
// Decoding of stored values both store backends share (header-only: the
// backends are separate libraries).
#include <string>
#include <string_view>
#include <vector>

#include "capacity/node_capacity.h"
#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::store {

// "a,b," -> {"a", "b"} (device and excluded-node lists are stored so); the
// one parser of such lists is capacity's.
inline std::vector<std::string> SplitCommaList(std::string_view s) {
  std::vector<std::string> out;
  capacity::SplitDeviceList(s, &out);
  return out;
}

// A stored JobSpec blob; DataLoss if it does not parse.
inline Result<v1::JobSpec> ParseSpec(const std::string& blob) {
  v1::JobSpec spec;
  if (!spec.ParseFromString(blob)) return Status::DataLoss("stored job spec does not parse");
  return spec;
}

// What each backend copies from a job's spec into its row at insert (the
// spec blob stays the source of truth): the reservation its attempts take and
// its queue timeout, so placement guards and timeouts are read in SQL without
// parsing specs.
struct JobColumns {
  double cpu = 0;
  int64_t memory = 0;
  int64_t gpus = 0;
  int64_t gpu_memory = 0;
  std::string runtime;
  int64_t queue_timeout_ms = 0;  // 0: none
  int64_t retention_ms = 0;      // 0: the coordinator's default (set at submit)
};

inline JobColumns JobColumnsOf(const v1::JobSpec& spec) {
  return {spec.resources().cpu(),
          static_cast<int64_t>(spec.resources().memory_bytes()),
          int64_t{spec.resources().gpus()},
          static_cast<int64_t>(spec.resources().gpu_memory_bytes()),
          spec.runtime(),
          int64_t{spec.queue_timeout_seconds()} * 1000,
          int64_t{spec.retention_seconds()} * 1000};
}

}  // namespace idlegrid::store
