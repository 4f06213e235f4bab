#pragma once
/* The text of the GPU benchmark's result.txt, apart from gpu_bench.c so that
 * host-only tests can check it against ParseGpuBenchResult (gpu_readiness.h)
 * without a GPU. Header-only; plain C that also compiles as C++. */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "readiness/gpu_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The longest device name result.txt carries (the driver's name buffer is
 * 256 bytes including its NUL). */
#define IG_MAX_GPU_DEVICE_NAME 255

/* What one run of gpu_bench measured, as it formats it. */
struct IgGpuBenchReport {
  uint64_t checksum;
  uint64_t rounds;
  double kernel_seconds;
  double fp32_gflops;
  double bandwidth_gbps; /* device-to-device copy traffic, read + write */
  double h2d_gbps;
  double d2h_gbps;
  char device_name[IG_MAX_GPU_DEVICE_NAME + 1]; /* as the driver gave it */
  uint64_t memory_bytes;
  uint64_t allocatable_bytes;
  int compute_capability_major;
  int compute_capability_minor;
};

/* `name` (at most `capacity` bytes) cut at its first NUL and at
 * IG_MAX_GPU_DEVICE_NAME characters, with anything but printable ASCII
 * replaced by '?', into `out` (IG_MAX_GPU_DEVICE_NAME + 1 bytes), so that it
 * stays one line. */
static inline void IgPrintableGpuDeviceName(const char* name, size_t capacity, char* out) {
  size_t i = 0;
  for (; i < capacity && i < IG_MAX_GPU_DEVICE_NAME && name[i] != '\0'; ++i) {
    out[i] = (name[i] >= 0x20 && name[i] <= 0x7e) ? name[i] : '?';
  }
  out[i] = '\0';
}

/* result.txt into `text` (`size` bytes; 2048 always suffice): the twelve
 * key=value lines ParseGpuBenchResult reads, in a fixed order, each ended by
 * "\n"; threads is always IG_GPU_THREADS. */
static inline void IgFormatGpuBenchReport(const struct IgGpuBenchReport* r, char* text, size_t size) {
  char name[IG_MAX_GPU_DEVICE_NAME + 1];
  IgPrintableGpuDeviceName(r->device_name, sizeof(r->device_name), name);
  snprintf(text, size,
           "checksum=%016" PRIx64 "\nrounds=%" PRIu64
           "\nthreads=%u\nkernel_seconds=%.9f\nfp32_gflops=%.3f\nbandwidth_gbps=%.3f\n"
           "h2d_gbps=%.3f\nd2h_gbps=%.3f\ndevice_name=%s\nmemory_bytes=%" PRIu64 "\nallocatable_bytes=%" PRIu64
           "\ncompute_capability=%d.%d\n",
           r->checksum, r->rounds, IG_GPU_THREADS, r->kernel_seconds, r->fp32_gflops, r->bandwidth_gbps, r->h2d_gbps,
           r->d2h_gbps, name, r->memory_bytes, r->allocatable_bytes, r->compute_capability_major,
           r->compute_capability_minor);
}

#ifdef __cplusplus
} /* extern "C" */
#endif
