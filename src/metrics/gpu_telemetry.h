#pragma once
// The per-device GPU gauges of /metrics (docs/metrics.md): what each node's
// latest advertisement read of its GPUs through NVML. Pure: the coordinator
// passes its node table (NodeTable::List) and its clock.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "idlegrid/v1/idlegrid.pb.h"
#include "metrics/exposition.h"

namespace idlegrid::metrics {

// NVML's clocks-throttle reasons (nvmlClocksThrottleReason*, "clocks event
// reasons" since NVML 12.2), as the `reason` label names them; a set bit
// outside these is reason "other".
const std::vector<std::pair<uint64_t, std::string>>& ThrottleReasonNames();

// One family per reading, each device a series labelled node, gpu (its NVML
// index), uuid, model and simulated ("true" for a device that exists only in
// the advertisement, whose figures are made up):
//   idlegrid_gpu_utilization_ratio        SM busy, 0..1
//   idlegrid_gpu_memory_used_bytes        used on the whole device
//   idlegrid_gpu_memory_total_bytes
//   idlegrid_gpu_temperature_celsius
//   idlegrid_gpu_power_watts              draw
//   idlegrid_gpu_power_limit_watts        enforced limit
//   idlegrid_gpu_throttle_reason          1 or 0 per reason (label `reason`)
// plus idlegrid_node_advertisement_age_seconds per node (now_ms less the
// advertisement's created_at_ms, the agent's clock; 0 if that is ahead).
// A figure the agent's NVML could not read (listed in the device's
// query_errors) is left out, not shown as 0. Offline nodes are left out:
// their last readings say nothing of now.
std::vector<Family> GpuTelemetryFamilies(const google::protobuf::RepeatedPtrField<v1::Node>& nodes, int64_t now_ms);

}  // namespace idlegrid::metrics
