#include "cli/gpu_usage_format.h"

#include <cstdio>

namespace idlegrid::cli {

std::string FormatGpuUsage(const v1::GpuUsage& u) {
  if (u.samples() == 0) return u.uuid() + ": no samples (NVML could not be read)";
  char buf[256];
  std::snprintf(buf, sizeof buf,
                ": %u sample%s; busy %u%% mean, %u%% max; device memory used %.1f GiB max; %u C max; power %.1f W "
                "mean, %.1f W max",
                u.samples(), u.samples() == 1 ? "" : "s", u.utilization_pct_mean(), u.utilization_pct_max(),
                static_cast<double>(u.memory_used_bytes_max()) / (1ull << 30), u.temperature_c_max(),
                u.power_mw_mean() / 1000.0, u.power_mw_max() / 1000.0);
  std::string line = u.uuid() + buf;
  if (u.throttle_reasons() != 0) {
    std::snprintf(buf, sizeof buf, "; throttled 0x%llx", static_cast<unsigned long long>(u.throttle_reasons()));
    line += buf;
  }
  return line;
}

}  // namespace idlegrid::cli
