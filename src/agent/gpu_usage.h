#pragma once
// GPU telemetry over one attempt (Metering.gpus; docs/receipts.md): the
// readings of each device the attempt held, folded into one GpuUsage per
// device. Pure: gpu_sampler.h reads NVML and feeds the accumulator.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "discovery/nvml_loader.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::agent {

// One reading of one device. A field NVML could not read this time is
// nullopt: it is left out of that field's mean and max, not counted as 0.
struct GpuSample {
  std::string uuid;
  std::optional<uint32_t> utilization_pct;    // SM busy, 0..100
  std::optional<uint64_t> memory_used_bytes;  // the whole device's, not the job's alone
  std::optional<uint32_t> temperature_c;
  std::optional<uint32_t> power_mw;          // draw
  std::optional<uint64_t> throttle_reasons;  // NVML clocks-throttle bits
};

// The sample of each of `uuids` found in `reading`, in `uuids` order. A
// device the reading lacks (NVML unavailable, the device gone from its count,
// its uuid unreadable) gives no sample; a field listed in the device's
// query_errors ("utilization: ...", "memory: ...") is nullopt.
std::vector<GpuSample> SamplesOf(const discovery::GpuLoadReading& reading, const std::vector<std::string>& uuids);

// Folds samples into one GpuUsage per device. Thread-compatible.
class GpuUsageAccumulator {
 public:
  // The devices to report, in the order Usage lists them (real ones only:
  // simulated devices are never measured).
  explicit GpuUsageAccumulator(std::vector<std::string> uuids);

  // Counts one reading of a device; a uuid not given at construction is
  // ignored (never reported).
  void Add(const GpuSample& sample);

  // One GpuUsage per device given, in that order: samples = readings added;
  // each mean (rounded to nearest) and max over the readings that had that
  // field; throttle_reasons the OR of every reading's bits. A device never
  // read has samples 0 and every figure 0.
  std::vector<v1::GpuUsage> Usage() const;

 private:
  struct Sums {
    uint32_t samples = 0;
    uint32_t utilization_n = 0;
    uint64_t utilization_sum = 0;
    uint32_t utilization_max = 0;
    uint64_t memory_used_max = 0;
    uint32_t temperature_max = 0;
    uint32_t power_n = 0;
    uint64_t power_sum = 0;
    uint32_t power_max = 0;
    uint64_t throttle_reasons = 0;
  };
  std::vector<std::string> uuids_;
  std::vector<Sums> sums_;  // one per uuids_ entry
};

}  // namespace idlegrid::agent
