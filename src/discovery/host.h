#pragma once
// The host's inventory: CPU, memory, disks, kernel and GPUs, read from the
// kernel's own interfaces (/proc, statvfs, uname) and the GPU libraries, never
// from tool output.
//
// The parsers are pure and take file content; the Read* functions do the I/O.
// All are thread-safe.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "discovery/cuda_loader.h"
#include "discovery/nvml_loader.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::discovery {

// The CPU flags worth advertising, in the order CpuInfo.flags lists them.
// x86 names as /proc/cpuinfo spells them, then Arm's ("asimd" is NEON).
inline constexpr std::string_view kCpuFlagsOfInterest[] = {
    "sse4_2",   "avx",      "avx2",     "fma",         "f16c",        "avx512f",     "avx512dq",
    "avx512cd", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile",
    "amx_bf16", "amx_int8", "aes",      "sha_ni",      "asimd",       "sve",         "sve2",
};

struct MemoryInfo {
  uint64_t total_bytes = 0;
  uint64_t available_bytes = 0;
};

// Parses /proc/cpuinfo. logical_cores counts "processor" entries;
// physical_cores counts distinct (physical id, core id) pairs, or equals
// logical_cores where the kernel gives no topology (some VMs, Arm). The model
// is x86's "model name" (or Arm's "Model"/"Hardware" when present). Flags are
// those of the first processor ("flags", or Arm's "Features") that appear in
// kCpuFlagsOfInterest, in that order. InvalidArgument when no processor is
// listed.
Result<v1::CpuInfo> ParseCpuInfo(std::string_view cpuinfo);

// Parses /proc/meminfo (values in KiB). Available is MemAvailable, or
// MemFree + Buffers + Cached on kernels before 3.14. InvalidArgument when
// MemTotal is absent or a value is not a number.
Result<MemoryInfo> ParseMemInfo(std::string_view meminfo);

// I/O shells around the parsers.
Result<v1::CpuInfo> ReadCpuInfo(const std::string& path = "/proc/cpuinfo");
Result<MemoryInfo> ReadMemInfo(const std::string& path = "/proc/meminfo");
// Size and space available to unprivileged users of the filesystem holding
// `path`. NotFound/Internal with errno's text when statvfs fails.
Result<v1::DiskInfo> ReadDisk(const std::string& path);
// The running kernel's release, as uname(2) gives it ("6.1.0-18-amd64").
Result<std::string> ReadKernelRelease();

// Everything at once. A part that cannot be read is left zero/empty (a disk
// whose path fails is listed with zero bytes, so nothing is placed on it); call
// the Read* functions to learn why. GPUs come from DiscoverNvidiaGpus.
v1::HostInventory DiscoverHost(const std::vector<std::string>& disk_paths,
                               const std::string& nvml_path = kDefaultNvmlPath,
                               const std::string& cuda_path = kDefaultCudaPath);

}  // namespace idlegrid::discovery
