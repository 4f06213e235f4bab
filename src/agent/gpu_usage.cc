#include "agent/gpu_usage.h"

#include <algorithm>
#include <string_view>

namespace idlegrid::agent {
namespace {

// Whether NVML failed to read `field` of `device` (nvml_loader.cc records
// each failure as "field: why").
bool Failed(const v1::GpuDevice& device, std::string_view field) {
  for (const std::string& error : device.query_errors()) {
    if (error.size() > field.size() && error.compare(0, field.size(), field) == 0 && error[field.size()] == ':') {
      return true;
    }
  }
  return false;
}

uint32_t MeanRounded(uint64_t sum, uint32_t n) { return n == 0 ? 0 : static_cast<uint32_t>((sum + n / 2) / n); }

}  // namespace

std::vector<GpuSample> SamplesOf(const discovery::GpuLoadReading& reading, const std::vector<std::string>& uuids) {
  std::vector<GpuSample> samples;
  if (!reading.available) return samples;
  for (const std::string& uuid : uuids) {
    for (const discovery::GpuLoad& load : reading.devices) {
      const v1::GpuDevice& d = load.device;
      if (d.uuid() != uuid) continue;
      GpuSample s;
      s.uuid = uuid;
      if (!Failed(d, "utilization")) s.utilization_pct = d.utilization_gpu_pct();
      if (!Failed(d, "memory")) s.memory_used_bytes = d.memory_used_bytes();
      if (!Failed(d, "temperature_c")) s.temperature_c = d.temperature_c();
      if (!Failed(d, "power_draw_mw")) s.power_mw = d.power_draw_mw();
      if (!Failed(d, "throttle_reasons")) s.throttle_reasons = d.throttle_reasons();
      samples.push_back(std::move(s));
      break;
    }
  }
  return samples;
}

GpuUsageAccumulator::GpuUsageAccumulator(std::vector<std::string> uuids)
    : uuids_(std::move(uuids)), sums_(uuids_.size()) {}

void GpuUsageAccumulator::Add(const GpuSample& sample) {
  auto it = std::find(uuids_.begin(), uuids_.end(), sample.uuid);
  if (it == uuids_.end()) return;
  Sums& s = sums_[it - uuids_.begin()];
  ++s.samples;
  if (sample.utilization_pct) {
    ++s.utilization_n;
    s.utilization_sum += *sample.utilization_pct;
    s.utilization_max = std::max(s.utilization_max, *sample.utilization_pct);
  }
  if (sample.memory_used_bytes) s.memory_used_max = std::max(s.memory_used_max, *sample.memory_used_bytes);
  if (sample.temperature_c) s.temperature_max = std::max(s.temperature_max, *sample.temperature_c);
  if (sample.power_mw) {
    ++s.power_n;
    s.power_sum += *sample.power_mw;
    s.power_max = std::max(s.power_max, *sample.power_mw);
  }
  if (sample.throttle_reasons) s.throttle_reasons |= *sample.throttle_reasons;
}

std::vector<v1::GpuUsage> GpuUsageAccumulator::Usage() const {
  std::vector<v1::GpuUsage> out;
  for (size_t i = 0; i < uuids_.size(); ++i) {
    const Sums& s = sums_[i];
    v1::GpuUsage u;
    u.set_uuid(uuids_[i]);
    u.set_samples(s.samples);
    u.set_utilization_pct_mean(MeanRounded(s.utilization_sum, s.utilization_n));
    u.set_utilization_pct_max(s.utilization_max);
    u.set_memory_used_bytes_max(s.memory_used_max);
    u.set_temperature_c_max(s.temperature_max);
    u.set_power_mw_mean(MeanRounded(s.power_sum, s.power_n));
    u.set_power_mw_max(s.power_max);
    u.set_throttle_reasons(s.throttle_reasons);
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace idlegrid::agent
