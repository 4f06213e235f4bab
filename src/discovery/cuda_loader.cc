#include "discovery/cuda_loader.h"

#include <cstdio>
#include <type_traits>

#include "discovery/dynamic_library.h"

namespace idlegrid::discovery {
namespace {

// The CUDA driver API as declared by cuda.h; declared here so building needs
// no CUDA toolkit.
using CuResult = int;
using CuDevice = int;
struct CuUuid {
  unsigned char bytes[16];
};
constexpr CuResult kCudaSuccess = 0;
constexpr int kAttributeComputeCapabilityMajor = 75;
constexpr int kAttributeComputeCapabilityMinor = 76;

struct CudaApi {
  CuResult (*init)(unsigned int flags) = nullptr;
  CuResult (*driver_get_version)(int* version) = nullptr;
  CuResult (*device_get_count)(int* count) = nullptr;
  CuResult (*device_get)(CuDevice* device, int ordinal) = nullptr;
  CuResult (*device_get_attribute)(int* value, int attribute, CuDevice device) = nullptr;
  // Optional:
  CuResult (*device_total_mem)(size_t* bytes, CuDevice device) = nullptr;
  CuResult (*device_get_uuid)(CuUuid* uuid, CuDevice device) = nullptr;
};

// Binds the API; returns the first missing required symbol's name, or "".
std::string BindCudaApi(const DynamicLibrary& lib, CudaApi* api) {
  std::string missing;
  auto require = [&](const char* name, auto* slot) {
    *slot = lib.Function<std::remove_reference_t<decltype(*slot)>>(name);
    if (*slot == nullptr && missing.empty()) missing = name;
  };
  require("cuInit", &api->init);
  require("cuDriverGetVersion", &api->driver_get_version);
  require("cuDeviceGetCount", &api->device_get_count);
  require("cuDeviceGet", &api->device_get);
  require("cuDeviceGetAttribute", &api->device_get_attribute);
  api->device_total_mem = lib.Function<decltype(api->device_total_mem)>("cuDeviceTotalMem_v2");
  api->device_get_uuid = lib.Function<decltype(api->device_get_uuid)>("cuDeviceGetUuid");
  return missing;
}

CudaDevice ReadDevice(const CudaApi& api, int ordinal) {
  CudaDevice device;
  device.ordinal = ordinal;
  CuDevice handle = 0;
  if (api.device_get(&handle, ordinal) != kCudaSuccess) return device;
  int major = 0;
  int minor = 0;
  if (api.device_get_attribute(&major, kAttributeComputeCapabilityMajor, handle) == kCudaSuccess &&
      api.device_get_attribute(&minor, kAttributeComputeCapabilityMinor, handle) == kCudaSuccess) {
    device.compute_capability = std::to_string(major) + "." + std::to_string(minor);
  }
  size_t bytes = 0;
  if (api.device_total_mem != nullptr && api.device_total_mem(&bytes, handle) == kCudaSuccess) {
    device.memory_total_bytes = bytes;
  }
  CuUuid uuid{};
  if (api.device_get_uuid != nullptr && api.device_get_uuid(&uuid, handle) == kCudaSuccess) {
    device.uuid = FormatGpuUuid(uuid.bytes);
  }
  return device;
}

void NoteMismatch(const std::string& field, const std::string& nvml, const std::string& cuda, v1::GpuDevice* device) {
  device->add_query_errors(field + ": NVML reports " + nvml + ", CUDA reports " + cuda);
}

const CudaDevice* FindByUuid(const CudaDriverInfo& cuda, const std::string& uuid) {
  if (uuid.empty()) return nullptr;
  for (const CudaDevice& device : cuda.devices) {
    if (device.uuid == uuid) return &device;
  }
  return nullptr;
}

}  // namespace

std::string FormatCudaVersion(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string FormatGpuUuid(const unsigned char bytes[16]) {
  char text[64];
  std::snprintf(text, sizeof(text), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
                bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]);
  return text;
}

Result<CudaDriverInfo> QueryCudaDriver(const std::string& path) {
  Result<DynamicLibrary> lib = DynamicLibrary::Open(path);
  if (!lib.ok()) {
    return Status::NotFound("library absent: " + path + " (" + lib.status().message() + ")");
  }
  CudaApi api;
  if (std::string missing = BindCudaApi(*lib, &api); !missing.empty()) {
    return Status::Unavailable("driver error: symbol " + missing + " missing");
  }
  CudaDriverInfo info;
  int version = 0;
  if (api.driver_get_version(&version) == kCudaSuccess && version > 0) {
    info.driver_version = FormatCudaVersion(version);
  }
  if (CuResult rc = api.init(0); rc != kCudaSuccess) {
    return Status::Unavailable("driver error: cuInit returned " + std::to_string(rc));
  }
  int count = 0;
  if (CuResult rc = api.device_get_count(&count); rc != kCudaSuccess) {
    return Status::Unavailable("driver error: cuDeviceGetCount returned " + std::to_string(rc));
  }
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    info.devices.push_back(ReadDevice(api, ordinal));
  }
  return info;
}

void MergeCudaInfo(const CudaDriverInfo& cuda, v1::GpuDiscovery* discovery) {
  for (v1::GpuDevice& device : *discovery->mutable_devices()) {
    if (!cuda.driver_version.empty()) {
      if (device.cuda_driver_version().empty()) {
        device.set_cuda_driver_version(cuda.driver_version);
      } else if (device.cuda_driver_version() != cuda.driver_version) {
        NoteMismatch("cuda_driver_version", device.cuda_driver_version(), cuda.driver_version, &device);
      }
    }
    const CudaDevice* match = FindByUuid(cuda, device.uuid());
    if (match == nullptr) continue;
    if (!match->compute_capability.empty()) {
      if (device.compute_capability().empty()) {
        device.set_compute_capability(match->compute_capability);
      } else if (device.compute_capability() != match->compute_capability) {
        NoteMismatch("compute_capability", device.compute_capability(), match->compute_capability, &device);
      }
    }
    if (device.memory_total_bytes() == 0 && match->memory_total_bytes > 0) {
      // Free and used stay zero: CUDA's total says nothing about current use.
      device.set_memory_total_bytes(match->memory_total_bytes);
    }
  }
}

}  // namespace idlegrid::discovery
