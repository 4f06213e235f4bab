#pragma once
// The text of the GPU benchmark's result.txt, apart from gpu_bench.cu so
// that host-only tests can check it against ParseGpuBenchResult
// (gpu_readiness.h) without CUDA or a GPU. Header-only, standard C++ only.
#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "readiness/gpu_kernel.h"

namespace idlegrid::readiness {

// What one run of gpu_bench measured, as it formats it.
struct GpuBenchReport {
  uint64_t checksum = 0;
  uint64_t rounds = 0;
  double kernel_seconds = 0;
  double bandwidth_gbps = 0;
  std::string device_name;  // as the driver gave it; FormatGpuBenchReport cleans it
  uint64_t memory_bytes = 0;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
};

// The longest device name result.txt carries (cudaDeviceProp.name is 256
// bytes including its NUL).
inline constexpr size_t kMaxGpuDeviceNameSize = 255;

// `name` cut at its first NUL and at kMaxGpuDeviceNameSize characters, with
// anything but printable ASCII replaced by '?', so that it stays one line.
inline std::string PrintableGpuDeviceName(const char* name, size_t capacity) {
  std::string out;
  for (size_t i = 0; i < capacity && i < kMaxGpuDeviceNameSize && name[i] != '\0'; ++i) {
    out += (name[i] >= 0x20 && name[i] <= 0x7e) ? name[i] : '?';
  }
  return out;
}

// result.txt: the eight key=value lines ParseGpuBenchResult reads, in a fixed
// order, each ended by "\n"; threads is always IG_GPU_THREADS.
inline std::string FormatGpuBenchReport(const GpuBenchReport& report) {
  const std::string name =
      PrintableGpuDeviceName(report.device_name.c_str(), report.device_name.size());
  char text[1024];
  std::snprintf(text, sizeof(text),
                "checksum=%016" PRIx64 "\nrounds=%" PRIu64
                "\nthreads=%u\nkernel_seconds=%.9f\nbandwidth_gbps=%.3f\ndevice_name=%s\n"
                "memory_bytes=%" PRIu64 "\ncompute_capability=%d.%d\n",
                report.checksum, report.rounds, IG_GPU_THREADS, report.kernel_seconds,
                report.bandwidth_gbps, name.c_str(), report.memory_bytes,
                report.compute_capability_major, report.compute_capability_minor);
  return text;
}

}  // namespace idlegrid::readiness
