#pragma once
// One line per GPU of an attempt's metering (Metering.gpus; docs/receipts.md),
// as `idlegrid receipt` prints it. Pure.
#include <string>

#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::cli {

// "GPU-...: 13 samples; busy 71% mean, 99% max; device memory used 80.0 GiB
// max; 78 C max; power 512.0 W mean, 698.0 W max; throttled 0x5", or
// "GPU-...: no samples (NVML could not be read)". Throttle bits only when set.
std::string FormatGpuUsage(const v1::GpuUsage& usage);

}  // namespace idlegrid::cli
