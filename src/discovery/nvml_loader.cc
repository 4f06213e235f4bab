#include "discovery/nvml_loader.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include "discovery/dynamic_library.h"

namespace idlegrid::discovery {
namespace {

// The parts of nvml.h we use, declared here so building needs no NVIDIA
// headers. Values and layouts are NVML's ABI and must not change.
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct NvmlUtilization {
  unsigned int gpu;
  unsigned int memory;
};
// nvmlProcessInfo_v2_t, the layout of the _v2 and _v3 process queries.
struct NvmlProcessInfo {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlErrorInsufficientSize = 7;
constexpr NvmlReturn kNvmlErrorNotSupported = 3;
constexpr unsigned int kNvmlDeviceNameBufferSize = 96;
constexpr unsigned int kNvmlDeviceUuidBufferSize = 80;
constexpr unsigned int kNvmlSystemDriverVersionBufferSize = 80;
constexpr int kNvmlTemperatureGpu = 0;
constexpr int kNvmlClockSm = 1;
constexpr int kNvmlClockMem = 2;
constexpr int kNvmlMemoryErrorCorrected = 0;
constexpr int kNvmlMemoryErrorUncorrected = 1;
constexpr int kNvmlAggregateEcc = 1;
constexpr unsigned int kNvmlMigEnabled = 1;

struct NvmlApi {
  // Required: discovery reports "symbol missing" without them.
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*device_get_count)(unsigned int*) = nullptr;
  NvmlReturn (*device_get_handle_by_index)(unsigned int, NvmlDevice*) = nullptr;
  NvmlReturn (*device_get_name)(NvmlDevice, char*, unsigned int) = nullptr;
  NvmlReturn (*device_get_uuid)(NvmlDevice, char*, unsigned int) = nullptr;
  NvmlReturn (*device_get_memory_info)(NvmlDevice, NvmlMemory*) = nullptr;
  // Optional: a missing one leaves its field empty with a query error.
  const char* (*error_string)(NvmlReturn) = nullptr;
  NvmlReturn (*system_get_driver_version)(char*, unsigned int) = nullptr;
  NvmlReturn (*system_get_cuda_driver_version)(int*) = nullptr;
  NvmlReturn (*device_get_compute_capability)(NvmlDevice, int*, int*) = nullptr;
  NvmlReturn (*device_get_pcie_generation)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*device_get_pcie_width)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*device_get_power_limit)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*device_get_power_usage)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*device_get_temperature)(NvmlDevice, int, unsigned int*) = nullptr;
  NvmlReturn (*device_get_clock_info)(NvmlDevice, int, unsigned int*) = nullptr;
  NvmlReturn (*device_get_throttle_reasons)(NvmlDevice, unsigned long long*) = nullptr;
  NvmlReturn (*device_get_utilization)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlReturn (*device_get_total_ecc_errors)(NvmlDevice, int, int, unsigned long long*) = nullptr;
  NvmlReturn (*device_get_mig_mode)(NvmlDevice, unsigned int*, unsigned int*) = nullptr;
  NvmlReturn (*device_get_compute_processes)(NvmlDevice, unsigned int*, NvmlProcessInfo*) = nullptr;
  NvmlReturn (*device_get_graphics_processes)(NvmlDevice, unsigned int*, NvmlProcessInfo*) = nullptr;
};

template <typename Fn>
void BindFirst(const DynamicLibrary& lib, Fn* slot, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if ((*slot = lib.Function<Fn>(name)) != nullptr) return;
  }
}

// Binds the API; returns the first missing required symbol's name, or "".
std::string BindNvmlApi(const DynamicLibrary& lib, NvmlApi* api) {
  std::string missing;
  auto require = [&](const char* name, auto* slot) {
    *slot = lib.Function<std::remove_reference_t<decltype(*slot)>>(name);
    if (*slot == nullptr && missing.empty()) missing = name;
  };
  require("nvmlInit_v2", &api->init);
  require("nvmlShutdown", &api->shutdown);
  require("nvmlDeviceGetCount_v2", &api->device_get_count);
  require("nvmlDeviceGetHandleByIndex_v2", &api->device_get_handle_by_index);
  require("nvmlDeviceGetName", &api->device_get_name);
  require("nvmlDeviceGetUUID", &api->device_get_uuid);
  require("nvmlDeviceGetMemoryInfo", &api->device_get_memory_info);

  BindFirst(lib, &api->error_string, {"nvmlErrorString"});
  BindFirst(lib, &api->system_get_driver_version, {"nvmlSystemGetDriverVersion"});
  BindFirst(lib, &api->system_get_cuda_driver_version,
            {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"});
  BindFirst(lib, &api->device_get_compute_capability, {"nvmlDeviceGetCudaComputeCapability"});
  BindFirst(lib, &api->device_get_pcie_generation, {"nvmlDeviceGetCurrPcieLinkGeneration"});
  BindFirst(lib, &api->device_get_pcie_width, {"nvmlDeviceGetCurrPcieLinkWidth"});
  BindFirst(lib, &api->device_get_power_limit, {"nvmlDeviceGetEnforcedPowerLimit"});
  BindFirst(lib, &api->device_get_power_usage, {"nvmlDeviceGetPowerUsage"});
  BindFirst(lib, &api->device_get_temperature, {"nvmlDeviceGetTemperature"});
  BindFirst(lib, &api->device_get_clock_info, {"nvmlDeviceGetClockInfo"});
  // Renamed "clocks event reasons" in NVML 12.2; newer drivers may drop the old name.
  BindFirst(lib, &api->device_get_throttle_reasons,
            {"nvmlDeviceGetCurrentClocksThrottleReasons", "nvmlDeviceGetCurrentClocksEventReasons"});
  BindFirst(lib, &api->device_get_utilization, {"nvmlDeviceGetUtilizationRates"});
  BindFirst(lib, &api->device_get_total_ecc_errors, {"nvmlDeviceGetTotalEccErrors"});
  BindFirst(lib, &api->device_get_mig_mode, {"nvmlDeviceGetMigMode"});
  // The unversioned (v1) names fill a smaller struct: not bound.
  BindFirst(lib, &api->device_get_compute_processes,
            {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"});
  BindFirst(lib, &api->device_get_graphics_processes,
            {"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2"});
  return missing;
}

// "nvmlDeviceGetMemoryInfo returned 999 (Unknown Error)"
std::string DescribeError(const NvmlApi& api, const char* function, NvmlReturn rc) {
  std::string text = std::string(function) + " returned " + std::to_string(rc);
  const char* meaning = api.error_string != nullptr ? api.error_string(rc) : nullptr;
  if (meaning != nullptr && *meaning != '\0') text += std::string(" (") + meaning + ")";
  return text;
}

// Calls an NVML query for one field of `device`. Returns true when it succeeded;
// otherwise records "field: why" in the device's query_errors.
template <typename Fn, typename... Args>
bool Query(const NvmlApi& api, v1::GpuDevice* device, const char* field, const char* function, Fn fn, Args... args) {
  if (fn == nullptr) {
    device->add_query_errors(std::string(field) + ": symbol " + function + " missing");
    return false;
  }
  NvmlReturn rc = fn(args...);
  if (rc != kNvmlSuccess) {
    device->add_query_errors(std::string(field) + ": " + DescribeError(api, function, rc));
    return false;
  }
  return true;
}

// NVML may fill a text buffer to the brim; never trust it to be terminated.
std::string FromBuffer(char* buffer, unsigned int size) {
  buffer[size - 1] = '\0';
  return buffer;
}

// Driver-wide facts copied into every device.
struct SystemInfo {
  std::string driver_version;
  std::string cuda_driver_version;
  std::vector<std::string> errors;
};

SystemInfo ReadSystemInfo(const NvmlApi& api) {
  SystemInfo info;
  v1::GpuDevice errors;  // collects query errors to copy into each device
  char version[kNvmlSystemDriverVersionBufferSize] = {};
  if (Query(api, &errors, "driver_version", "nvmlSystemGetDriverVersion", api.system_get_driver_version, version,
            kNvmlSystemDriverVersionBufferSize)) {
    info.driver_version = FromBuffer(version, sizeof(version));
  }
  int cuda_version = 0;
  if (Query(api, &errors, "cuda_driver_version", "nvmlSystemGetCudaDriverVersion_v2",
            api.system_get_cuda_driver_version, &cuda_version)) {
    info.cuda_driver_version = FormatCudaVersion(cuda_version);
  }
  info.errors.assign(errors.query_errors().begin(), errors.query_errors().end());
  return info;
}

void ReadIdentity(const NvmlApi& api, NvmlDevice handle, v1::GpuDevice* device) {
  char name[kNvmlDeviceNameBufferSize] = {};
  if (Query(api, device, "name", "nvmlDeviceGetName", api.device_get_name, handle, name, kNvmlDeviceNameBufferSize)) {
    device->set_name(FromBuffer(name, sizeof(name)));
  }
  char uuid[kNvmlDeviceUuidBufferSize] = {};
  if (Query(api, device, "uuid", "nvmlDeviceGetUUID", api.device_get_uuid, handle, uuid, kNvmlDeviceUuidBufferSize)) {
    device->set_uuid(FromBuffer(uuid, sizeof(uuid)));
  }
  NvmlMemory memory{};
  if (Query(api, device, "memory", "nvmlDeviceGetMemoryInfo", api.device_get_memory_info, handle, &memory)) {
    device->set_memory_total_bytes(memory.total);
    device->set_memory_free_bytes(memory.free);
    device->set_memory_used_bytes(memory.used);
  }
  int major = 0;
  int minor = 0;
  if (Query(api, device, "compute_capability", "nvmlDeviceGetCudaComputeCapability", api.device_get_compute_capability,
            handle, &major, &minor)) {
    device->set_compute_capability(std::to_string(major) + "." + std::to_string(minor));
  }
}

void ReadLinkAndPower(const NvmlApi& api, NvmlDevice handle, v1::GpuDevice* device) {
  unsigned int value = 0;
  if (Query(api, device, "pcie_generation", "nvmlDeviceGetCurrPcieLinkGeneration", api.device_get_pcie_generation,
            handle, &value)) {
    device->set_pcie_generation(value);
  }
  if (Query(api, device, "pcie_width", "nvmlDeviceGetCurrPcieLinkWidth", api.device_get_pcie_width, handle, &value)) {
    device->set_pcie_width(value);
  }
  if (Query(api, device, "power_limit_mw", "nvmlDeviceGetEnforcedPowerLimit", api.device_get_power_limit, handle,
            &value)) {
    device->set_power_limit_mw(value);
  }
  if (Query(api, device, "power_draw_mw", "nvmlDeviceGetPowerUsage", api.device_get_power_usage, handle, &value)) {
    device->set_power_draw_mw(value);
  }
  if (Query(api, device, "temperature_c", "nvmlDeviceGetTemperature", api.device_get_temperature, handle,
            kNvmlTemperatureGpu, &value)) {
    device->set_temperature_c(value);
  }
  if (Query(api, device, "sm_clock_mhz", "nvmlDeviceGetClockInfo", api.device_get_clock_info, handle, kNvmlClockSm,
            &value)) {
    device->set_sm_clock_mhz(value);
  }
  if (Query(api, device, "memory_clock_mhz", "nvmlDeviceGetClockInfo", api.device_get_clock_info, handle, kNvmlClockMem,
            &value)) {
    device->set_memory_clock_mhz(value);
  }
}

void ReadLoadAndHealth(const NvmlApi& api, NvmlDevice handle, v1::GpuDevice* device) {
  unsigned long long reasons = 0;
  if (Query(api, device, "throttle_reasons", "nvmlDeviceGetCurrentClocksThrottleReasons",
            api.device_get_throttle_reasons, handle, &reasons)) {
    device->set_throttle_reasons(reasons);
  }
  NvmlUtilization utilization{};
  if (Query(api, device, "utilization", "nvmlDeviceGetUtilizationRates", api.device_get_utilization, handle,
            &utilization)) {
    device->set_utilization_gpu_pct(utilization.gpu);
    device->set_utilization_memory_pct(utilization.memory);
  }
  unsigned long long count = 0;
  if (Query(api, device, "ecc_errors_corrected", "nvmlDeviceGetTotalEccErrors", api.device_get_total_ecc_errors, handle,
            kNvmlMemoryErrorCorrected, kNvmlAggregateEcc, &count)) {
    device->set_ecc_errors_corrected(count);
  }
  if (Query(api, device, "ecc_errors_uncorrected", "nvmlDeviceGetTotalEccErrors", api.device_get_total_ecc_errors,
            handle, kNvmlMemoryErrorUncorrected, kNvmlAggregateEcc, &count)) {
    device->set_ecc_errors_uncorrected(count);
  }
}

void ReadMigMode(const NvmlApi& api, NvmlDevice handle, v1::GpuDevice* device) {
  unsigned int current = 0;
  unsigned int pending = 0;
  NvmlReturn rc =
      api.device_get_mig_mode != nullptr ? api.device_get_mig_mode(handle, &current, &pending) : kNvmlErrorNotSupported;
  if (rc == kNvmlErrorNotSupported) {
    // Also what a driver too old to know MIG means.
    device->set_mig_mode("unsupported");
  } else if (rc != kNvmlSuccess) {
    device->add_query_errors("mig_mode: " + DescribeError(api, "nvmlDeviceGetMigMode", rc));
  } else {
    device->set_mig_mode(current == kNvmlMigEnabled ? "enabled" : "disabled");
  }
}

v1::GpuDevice ReadDevice(const NvmlApi& api, const SystemInfo& system, unsigned int index) {
  v1::GpuDevice device;
  device.set_index(index);
  device.set_driver_version(system.driver_version);
  device.set_cuda_driver_version(system.cuda_driver_version);
  for (const std::string& error : system.errors) device.add_query_errors(error);
  NvmlDevice handle = nullptr;
  if (!Query(api, &device, "handle", "nvmlDeviceGetHandleByIndex_v2", api.device_get_handle_by_index, index, &handle)) {
    return device;
  }
  ReadIdentity(api, handle, &device);
  ReadLinkAndPower(api, handle, &device);
  ReadLoadAndHealth(api, handle, &device);
  ReadMigMode(api, handle, &device);
  return device;
}

v1::GpuDiscovery Unavailable(std::string reason) {
  v1::GpuDiscovery discovery;
  discovery.set_available(false);
  discovery.set_reason(std::move(reason));
  return discovery;
}

// Balances a successful nvmlInit_v2 with nvmlShutdown on every path.
class NvmlSession {
 public:
  explicit NvmlSession(const NvmlApi& api) : api_(api) {}
  NvmlSession(const NvmlSession&) = delete;
  NvmlSession& operator=(const NvmlSession&) = delete;
  ~NvmlSession() { api_.shutdown(); }

 private:
  const NvmlApi& api_;
};

// Appends the pids one process query lists to `load` (each pid once);
// Ok, or why it could not.
std::string AppendProcesses(const NvmlApi& api, const char* function,
                            NvmlReturn (*fn)(NvmlDevice, unsigned int*, NvmlProcessInfo*), NvmlDevice handle,
                            GpuLoad* load) {
  if (fn == nullptr) return std::string("symbol ") + function + " missing";
  std::vector<NvmlProcessInfo> infos(64);
  unsigned int count = static_cast<unsigned int>(infos.size());
  NvmlReturn rc = fn(handle, &count, infos.data());
  if (rc == kNvmlErrorInsufficientSize) {
    // More started between the calls: ask again with room to spare.
    infos.resize(count + 16);
    count = static_cast<unsigned int>(infos.size());
    rc = fn(handle, &count, infos.data());
  }
  if (rc != kNvmlSuccess) return DescribeError(api, function, rc);
  for (unsigned int i = 0; i < count && i < infos.size(); ++i) {
    bool seen = false;
    for (const auto& p : load->processes) seen = seen || p.pid == infos[i].pid;
    if (!seen) load->processes.push_back({infos[i].pid, infos[i].used_gpu_memory});
  }
  return "";
}

}  // namespace

GpuLoadReading ReadGpuLoad(const std::string& nvml_path) {
  GpuLoadReading out;
  Result<DynamicLibrary> lib = DynamicLibrary::Open(nvml_path);
  if (!lib.ok()) {
    out.reason = "library absent: " + nvml_path + " (" + lib.status().message() + ")";
    return out;
  }
  NvmlApi api;
  if (std::string missing = BindNvmlApi(*lib, &api); !missing.empty()) {
    out.reason = "driver error: symbol " + missing + " missing";
    return out;
  }
  if (NvmlReturn rc = api.init(); rc != kNvmlSuccess) {
    out.reason = "driver error: " + DescribeError(api, "nvmlInit_v2", rc);
    return out;
  }
  NvmlSession session(api);
  unsigned int count = 0;
  if (NvmlReturn rc = api.device_get_count(&count); rc != kNvmlSuccess) {
    out.reason = "driver error: " + DescribeError(api, "nvmlDeviceGetCount_v2", rc);
    return out;
  }
  if (count == 0) {
    out.reason = "no device";
    return out;
  }
  const SystemInfo system = ReadSystemInfo(api);
  for (unsigned int index = 0; index < count; ++index) {
    GpuLoad load;
    load.device = ReadDevice(api, system, index);
    NvmlDevice handle = nullptr;
    if (api.device_get_handle_by_index(index, &handle) != kNvmlSuccess) {
      load.processes_error = "no handle for device " + std::to_string(index);
    } else {
      std::string error = AppendProcesses(api, "nvmlDeviceGetComputeRunningProcesses_v3",
                                          api.device_get_compute_processes, handle, &load);
      if (error.empty()) {
        error = AppendProcesses(api, "nvmlDeviceGetGraphicsRunningProcesses_v3", api.device_get_graphics_processes,
                                handle, &load);
      }
      load.processes_known = error.empty();
      load.processes_error = error;
      if (!load.processes_known) load.processes.clear();
    }
    out.devices.push_back(std::move(load));
  }
  out.available = true;
  return out;
}

v1::GpuDiscovery DiscoverNvidiaGpus(const std::string& nvml_path, const std::string& cuda_path) {
  Result<DynamicLibrary> lib = DynamicLibrary::Open(nvml_path);
  if (!lib.ok()) {
    return Unavailable("library absent: " + nvml_path + " (" + lib.status().message() +
                       "); install the NVIDIA driver, or point --nvml-library at libnvidia-ml.so.1");
  }
  NvmlApi api;
  if (std::string missing = BindNvmlApi(*lib, &api); !missing.empty()) {
    return Unavailable("driver error: symbol " + missing + " missing");
  }
  if (NvmlReturn rc = api.init(); rc != kNvmlSuccess) {
    return Unavailable("driver error: " + DescribeError(api, "nvmlInit_v2", rc));
  }
  v1::GpuDiscovery discovery;
  {
    NvmlSession session(api);
    unsigned int count = 0;
    if (NvmlReturn rc = api.device_get_count(&count); rc != kNvmlSuccess) {
      return Unavailable("driver error: " + DescribeError(api, "nvmlDeviceGetCount_v2", rc));
    }
    if (count == 0) return Unavailable("no device");
    const SystemInfo system = ReadSystemInfo(api);
    for (unsigned int index = 0; index < count; ++index) {
      *discovery.add_devices() = ReadDevice(api, system, index);
    }
  }
  discovery.set_available(true);
  // CUDA is optional: without it NVML's answer stands as it is.
  if (Result<CudaDriverInfo> cuda = QueryCudaDriver(cuda_path); cuda.ok()) {
    MergeCudaInfo(*cuda, &discovery);
  }
  return discovery;
}

}  // namespace idlegrid::discovery
