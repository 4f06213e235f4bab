// The per-GPU line of `idlegrid receipt` (cli/gpu_usage_format.h).
#include "cli/gpu_usage_format.h"

#include <gtest/gtest.h>

namespace idlegrid::cli {
namespace {

TEST(FormatGpuUsage, EveryFigureAndTheThrottleBitsWhenSet) {
  v1::GpuUsage u;
  u.set_uuid("GPU-aa");
  u.set_samples(13);
  u.set_utilization_pct_mean(71);
  u.set_utilization_pct_max(99);
  u.set_memory_used_bytes_max(80ull << 30);
  u.set_temperature_c_max(78);
  u.set_power_mw_mean(512000);
  u.set_power_mw_max(698040);
  u.set_throttle_reasons(0x44);
  EXPECT_EQ(FormatGpuUsage(u),
            "GPU-aa: 13 samples; busy 71% mean, 99% max; device memory used 80.0 GiB max; 78 C max; power 512.0 W "
            "mean, 698.0 W max; throttled 0x44");
  u.set_throttle_reasons(0);
  u.set_samples(1);
  EXPECT_EQ(FormatGpuUsage(u).find("throttled"), std::string::npos);
  EXPECT_NE(FormatGpuUsage(u).find(": 1 sample;"), std::string::npos) << FormatGpuUsage(u);
}

TEST(FormatGpuUsage, NoSamplesSaysSo) {
  v1::GpuUsage u;
  u.set_uuid("GPU-bb");
  EXPECT_EQ(FormatGpuUsage(u), "GPU-bb: no samples (NVML could not be read)");
}

}  // namespace
}  // namespace idlegrid::cli
