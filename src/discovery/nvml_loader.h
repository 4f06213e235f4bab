#pragma once
// NVIDIA GPU discovery through NVML (libnvidia-ml.so.1), opened at run time so
// idlegrid builds and runs without the driver. Never parses nvidia-smi output.
//
// Thread-safe: no shared state; each call opens, initialises, shuts down and
// closes the library (NVML reference-counts nvmlInit/nvmlShutdown).
#include <cstdint>
#include <string>
#include <vector>

#include "discovery/cuda_loader.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::discovery {

inline constexpr char kDefaultNvmlPath[] = "libnvidia-ml.so.1";

// Lists the GPUs NVML sees, completed by the CUDA driver at `cuda_path` where
// that library is present (see MergeCudaInfo). Never fails as a call: a host
// without GPUs is an answer, given as available=false and a reason:
//   "library absent: <nvml_path> (<dlerror>)"  NVML cannot be loaded;
//   "driver error: symbol <name> missing"       a required NVML function is absent
//                                               (init, count, handle, name, uuid, memory);
//   "driver error: nvmlInit_v2 returned N (...)" or "...nvmlDeviceGetCount_v2 returned N";
//   "no device"                                 NVML works but counts zero GPUs.
// Otherwise available=true and every device NVML counts is listed, in NVML's
// index order, even when some of its queries fail: each field that could not
// be read stays zero/empty and gets a "field: reason" entry in query_errors
// (e.g. "memory: nvmlDeviceGetMemoryInfo returned 999 (Unknown Error)").
// MIG mode reads "unsupported" when NVML says the device has none.
v1::GpuDiscovery DiscoverNvidiaGpus(const std::string& nvml_path = kDefaultNvmlPath,
                                    const std::string& cuda_path = kDefaultCudaPath);

// A process NVML says runs on a device (compute or graphics), by host pid.
struct GpuProcess {
  uint32_t pid = 0;
  uint64_t used_memory_bytes = 0;
};

// One device as it is now, for the owner-first pause watcher.
struct GpuLoad {
  // index, uuid, name, temperature, power draw and limit, utilisation and
  // throttle reasons, as DiscoverNvidiaGpus reads them (query_errors too).
  v1::GpuDevice device;
  // Whether `processes` is NVML's answer; when not, processes_error says why
  // ("symbol nvmlDeviceGetComputeRunningProcesses_v3 missing", an error code).
  bool processes_known = false;
  std::string processes_error;
  std::vector<GpuProcess> processes;  // compute and graphics, each pid once
};

struct GpuLoadReading {
  bool available = false;
  std::string reason;  // why not available, as DiscoverNvidiaGpus says it
  std::vector<GpuLoad> devices;
};

// Reads every device's live state and the processes using it. Never fails
// as a call (like DiscoverNvidiaGpus); does not touch CUDA, so it is cheap
// enough to poll every second. Thread-safe.
GpuLoadReading ReadGpuLoad(const std::string& nvml_path = kDefaultNvmlPath);

}  // namespace idlegrid::discovery
