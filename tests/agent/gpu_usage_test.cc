// GPU telemetry folded per device (agent/gpu_usage.h), on plain values.
#include "agent/gpu_usage.h"

#include <gtest/gtest.h>

namespace idlegrid::agent {
namespace {

GpuSample Sample(const std::string& uuid, uint32_t util, uint64_t mem, uint32_t temp, uint32_t power_mw,
                 uint64_t throttle) {
  GpuSample s;
  s.uuid = uuid;
  s.utilization_pct = util;
  s.memory_used_bytes = mem;
  s.temperature_c = temp;
  s.power_mw = power_mw;
  s.throttle_reasons = throttle;
  return s;
}

TEST(GpuUsageAccumulator, NoSamplesGiveEachDeviceZeroSamplesAndZeroFigures) {
  GpuUsageAccumulator acc({"GPU-a", "GPU-b"});
  const auto usage = acc.Usage();
  ASSERT_EQ(usage.size(), 2u);
  EXPECT_EQ(usage[0].uuid(), "GPU-a");
  EXPECT_EQ(usage[1].uuid(), "GPU-b");
  for (const auto& u : usage) {
    EXPECT_EQ(u.samples(), 0u);
    EXPECT_EQ(u.utilization_pct_mean(), 0u);
    EXPECT_EQ(u.utilization_pct_max(), 0u);
    EXPECT_EQ(u.memory_used_bytes_max(), 0u);
    EXPECT_EQ(u.temperature_c_max(), 0u);
    EXPECT_EQ(u.power_mw_mean(), 0u);
    EXPECT_EQ(u.power_mw_max(), 0u);
    EXPECT_EQ(u.throttle_reasons(), 0u);
  }
  EXPECT_TRUE(GpuUsageAccumulator({}).Usage().empty());
}

TEST(GpuUsageAccumulator, MeansMaxesAndTheOrOfThrottleBits) {
  GpuUsageAccumulator acc({"GPU-a"});
  acc.Add(Sample("GPU-a", 10, 1000, 40, 100'000, 0x1));
  acc.Add(Sample("GPU-a", 95, 5000, 71, 300'000, 0x4));
  acc.Add(Sample("GPU-a", 60, 3000, 65, 250'001, 0x0));
  const v1::GpuUsage u = acc.Usage().at(0);
  EXPECT_EQ(u.samples(), 3u);
  EXPECT_EQ(u.utilization_pct_mean(), 55u);  // 165 / 3
  EXPECT_EQ(u.utilization_pct_max(), 95u);
  EXPECT_EQ(u.memory_used_bytes_max(), 5000u);
  EXPECT_EQ(u.temperature_c_max(), 71u);
  EXPECT_EQ(u.power_mw_mean(), 216'667u);  // 650001 / 3 = 216667.0, rounded to nearest
  EXPECT_EQ(u.power_mw_max(), 300'000u);
  EXPECT_EQ(u.throttle_reasons(), 0x5u);
}

TEST(GpuUsageAccumulator, MeansRoundToNearest) {
  GpuUsageAccumulator acc({"GPU-a"});
  acc.Add(Sample("GPU-a", 1, 0, 0, 1, 0));
  acc.Add(Sample("GPU-a", 2, 0, 0, 2, 0));
  EXPECT_EQ(acc.Usage().at(0).utilization_pct_mean(), 2u);  // 1.5 -> 2
  acc.Add(Sample("GPU-a", 0, 0, 0, 0, 0));
  EXPECT_EQ(acc.Usage().at(0).utilization_pct_mean(), 1u);  // 1.0
}

TEST(GpuUsageAccumulator, ADeviceThatStopsReportingKeepsWhatItGave) {
  GpuUsageAccumulator acc({"GPU-a", "GPU-b"});
  acc.Add(Sample("GPU-a", 50, 10, 50, 1000, 0));
  acc.Add(Sample("GPU-b", 20, 20, 30, 2000, 0x8));
  // GPU-b falls off the bus: only GPU-a is read from here on.
  acc.Add(Sample("GPU-a", 70, 30, 55, 3000, 0));
  acc.Add(Sample("GPU-a", 90, 20, 60, 5000, 0));
  const auto usage = acc.Usage();
  EXPECT_EQ(usage[0].samples(), 3u);
  EXPECT_EQ(usage[0].utilization_pct_mean(), 70u);
  EXPECT_EQ(usage[0].power_mw_mean(), 3000u);
  EXPECT_EQ(usage[1].samples(), 1u);
  EXPECT_EQ(usage[1].utilization_pct_mean(), 20u);
  EXPECT_EQ(usage[1].memory_used_bytes_max(), 20u);
  EXPECT_EQ(usage[1].throttle_reasons(), 0x8u);
}

TEST(GpuUsageAccumulator, AFieldNotReadIsLeftOutOfItsMeanNotCountedAsZero) {
  GpuUsageAccumulator acc({"GPU-a"});
  acc.Add(Sample("GPU-a", 80, 100, 50, 200'000, 0));
  GpuSample partial;  // NVML read the device, but none of its figures
  partial.uuid = "GPU-a";
  acc.Add(partial);
  const v1::GpuUsage u = acc.Usage().at(0);
  EXPECT_EQ(u.samples(), 2u);
  EXPECT_EQ(u.utilization_pct_mean(), 80u);
  EXPECT_EQ(u.power_mw_mean(), 200'000u);
  EXPECT_EQ(u.memory_used_bytes_max(), 100u);
}

TEST(GpuUsageAccumulator, AnUnknownDeviceIsNeverReported) {
  GpuUsageAccumulator acc({"GPU-a"});
  acc.Add(Sample("GPU-sim", 99, 99, 99, 99, 0xff));
  const auto usage = acc.Usage();
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0].uuid(), "GPU-a");
  EXPECT_EQ(usage[0].samples(), 0u);
}

v1::GpuDevice Device(const std::string& uuid, std::vector<std::string> errors = {}) {
  v1::GpuDevice d;
  d.set_uuid(uuid);
  d.set_utilization_gpu_pct(42);
  d.set_memory_used_bytes(1 << 20);
  d.set_temperature_c(61);
  d.set_power_draw_mw(123'000);
  d.set_throttle_reasons(0x4);
  for (auto& e : errors) d.add_query_errors(e);
  return d;
}

TEST(SamplesOf, TakesTheAskedDevicesInTheirOrderWithFailedFieldsUnset) {
  discovery::GpuLoadReading reading;
  reading.available = true;
  reading.devices.push_back({Device("GPU-x"), true, "", {}});
  reading.devices.push_back({Device("GPU-b", {"power_draw_mw: nvmlDeviceGetPowerUsage returned 3 (Not Supported)",
                                              "utilization: symbol nvmlDeviceGetUtilizationRates missing",
                                              "memory_clock_mhz: nvmlDeviceGetClockInfo returned 999 (Unknown Error)"}),
                             true,
                             "",
                             {}});
  reading.devices.push_back({Device("GPU-a"), true, "", {}});
  const auto samples = SamplesOf(reading, {"GPU-a", "GPU-b", "GPU-gone"});
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].uuid, "GPU-a");
  EXPECT_EQ(samples[0].utilization_pct, 42u);
  EXPECT_EQ(samples[0].memory_used_bytes, uint64_t{1} << 20);
  EXPECT_EQ(samples[0].temperature_c, 61u);
  EXPECT_EQ(samples[0].power_mw, 123'000u);
  EXPECT_EQ(samples[0].throttle_reasons, 0x4u);
  EXPECT_EQ(samples[1].uuid, "GPU-b");
  EXPECT_FALSE(samples[1].power_mw.has_value());
  EXPECT_FALSE(samples[1].utilization_pct.has_value());
  EXPECT_EQ(samples[1].temperature_c, 61u);
  EXPECT_EQ(samples[1].memory_used_bytes, uint64_t{1} << 20) << "memory_clock_mhz failing is not memory failing";
}

TEST(SamplesOf, AnUnavailableReadingHasNoSamples) {
  discovery::GpuLoadReading reading;
  reading.reason = "driver error: nvmlInit_v2 returned 9 (Driver Not Loaded)";
  reading.devices.push_back({Device("GPU-a"), true, "", {}});  // never trusted when not available
  EXPECT_TRUE(SamplesOf(reading, {"GPU-a"}).empty());
}

}  // namespace
}  // namespace idlegrid::agent
