#pragma once
// The CUDA driver's view of the GPUs, read through libcuda.so.1 opened at run
// time. NVML is the primary source (nvml_loader.h); CUDA fills the fields NVML
// could not give and cross-checks the ones both know. A host without
// libcuda.so.1 is normal and not an error for discovery.
//
// Thread-safe: no shared state; each call opens and closes the library.
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::discovery {

inline constexpr char kDefaultCudaPath[] = "libcuda.so.1";

struct CudaDevice {
  int ordinal = 0;                  // CUDA's numbering, which need not be NVML's
  std::string uuid;                 // "GPU-xxxxxxxx-...", NVML's spelling; empty if unknown
  std::string compute_capability;   // "9.0"; empty if unknown
  uint64_t memory_total_bytes = 0;  // 0 if unknown
};

struct CudaDriverInfo {
  std::string driver_version;  // "12.4"; empty if unknown
  std::vector<CudaDevice> devices;
};

// Opens the CUDA driver at `path`, calls cuInit(0) and reads each device.
// Fails with NotFound ("library absent: ...") when the library cannot be
// loaded, and Unavailable ("driver error: ...") when a required symbol is
// missing or cuInit/cuDeviceGetCount fail. A device attribute that cannot be
// read is left empty rather than failing the whole query.
Result<CudaDriverInfo> QueryCudaDriver(const std::string& path = kDefaultCudaPath);

// CUDA's integer version to "major.minor": 12040 -> "12.4", 11080 -> "11.8".
std::string FormatCudaVersion(int version);

// The 16 bytes of a CUuuid in NVML's form "GPU-00112233-4455-6677-8899-aabbccddeeff".
std::string FormatGpuUuid(const unsigned char bytes[16]);

// Pure. Completes `discovery` (NVML's result) with what CUDA knows. Devices are
// matched by UUID, never by position, since CUDA orders them fastest-first and
// CUDA_VISIBLE_DEVICES may hide some. For a matched device: an empty
// compute_capability or cuda_driver_version, or a zero memory_total_bytes, is
// taken from CUDA; when both sources know a value and disagree, NVML's is kept
// and the disagreement is added to query_errors. Unmatched devices only get
// the driver-wide cuda_driver_version.
void MergeCudaInfo(const CudaDriverInfo& cuda, v1::GpuDiscovery* discovery);

}  // namespace idlegrid::discovery
