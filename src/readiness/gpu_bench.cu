// The GPU readiness benchmark: a CUDA program the coordinator wraps in an
// image and runs on a GPU node, through the same path as a real job, before
// the node's GPUs get work.
//
// Usage: gpu_bench ROUNDS SEED OUTDIR [DEVICE_INDEX]   (all numbers decimal;
//        DEVICE_INDEX defaults to 0, the first device the job can see)
//
// 1. Runs IG_GPU_THREADS (65536) device threads, thread t computing
//    ig_gpu_thread_result(SEED, t, ROUNDS) (readiness/gpu_kernel.h: the
//    kernel of kernel.h from seed SEED + t * an odd constant), times the
//    kernel with CUDA events, and XORs the results into one checksum.
// 2. Times device-to-device cudaMemcpy of a buffer of min(1 GiB, free/4)
//    bytes, best of 5, and reports it as memory traffic: every copied byte is
//    read once and written once, so bandwidth_gbps = 2 * bytes / seconds / 1e9
//    (the convention of CUDA's bandwidthTest sample), which an honest device
//    brings to roughly 75-90% of its spec-sheet memory bandwidth.
// 3. Writes OUTDIR/result.txt (also printed to stdout; formatted by
//    readiness/gpu_bench_format.h), which readiness::ParseGpuBenchResult
//    reads:
//      checksum=<16 lowercase hex digits>
//      rounds=<decimal>
//      threads=65536
//      kernel_seconds=<decimal, 9 fraction digits>
//      bandwidth_gbps=<decimal, 3 fraction digits>
//      device_name=<cudaDeviceProp.name, non-printable bytes as '?'>
//      memory_bytes=<cudaDeviceProp.totalGlobalMem>
//      compute_capability=<major>.<minor>
//
// Exit status: 0 on success; 1 if the result cannot be written; 2 on a usage
// error; 3 on any CUDA error (no device, driver too old for this runtime, out
// of memory, ...) or too little free device memory for a meaningful
// bandwidth test, printed to stderr, and then no result file is written.
//
// Built with `nvcc -O2 -cudart static`: at run time it needs the host
// driver's libcuda.so.1 (which the static runtime loads itself) and glibc.
#include <cuda_runtime.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>

#include "readiness/gpu_bench_format.h"
#include "readiness/gpu_kernel.h"

namespace {

using idlegrid::readiness::FormatGpuBenchReport;
using idlegrid::readiness::GpuBenchReport;

constexpr int kExitWriteFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitCuda = 3;

constexpr unsigned kThreadsPerBlock = 256;
constexpr size_t kMaxCopyBytes = size_t{1} << 30;
// Below this the copy could run out of the L2 cache (50 MiB on an H100, more
// on newer parts) and overstate the bandwidth.
constexpr size_t kMinCopyBytes = size_t{256} << 20;
constexpr size_t kCopyAlignment = size_t{1} << 20;
constexpr int kCopyRepeats = 5;

// Prints the failed step and CUDA's error, then exits: the process owns no
// state worth unwinding, and the driver frees device memory at exit.
void CheckCuda(cudaError_t error, const char* step) {
  if (error == cudaSuccess) return;
  fprintf(stderr, "gpu_bench: %s: CUDA error %s: %s\n", step, cudaGetErrorName(error),
          cudaGetErrorString(error));
  exit(kExitCuda);
}

// Strict decimal: digits only (no sign, space or prefix), no overflow.
bool ParseDecimal(const char* text, uint64_t* out) {
  if (text[0] < '0' || text[0] > '9') return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long value = strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = static_cast<uint64_t>(value);
  return true;
}

__global__ void ReadinessKernel(uint64_t seed, uint64_t rounds, uint64_t* results) {
  uint32_t thread_index = blockIdx.x * blockDim.x + threadIdx.x;
  if (thread_index < IG_GPU_THREADS) {
    results[thread_index] = ig_gpu_thread_result(seed, thread_index, rounds);
  }
}

// Milliseconds between two recorded events, after the second completes.
float ElapsedMs(cudaEvent_t start, cudaEvent_t stop, const char* step) {
  CheckCuda(cudaEventSynchronize(stop), step);
  float ms = 0;
  CheckCuda(cudaEventElapsedTime(&ms, start, stop), step);
  return ms;
}

struct KernelRun {
  uint64_t checksum = 0;
  double seconds = 0;
};

KernelRun RunKernel(uint64_t seed, uint64_t rounds, cudaEvent_t start, cudaEvent_t stop) {
  uint64_t* device_results = nullptr;
  CheckCuda(cudaMalloc(&device_results, IG_GPU_THREADS * sizeof(uint64_t)),
            "allocating kernel results");
  constexpr unsigned kBlocks = (IG_GPU_THREADS + kThreadsPerBlock - 1) / kThreadsPerBlock;
  // The first launch also loads the module (lazily, since CUDA 12), which
  // is not the device's speed: time the second.
  ReadinessKernel<<<kBlocks, kThreadsPerBlock>>>(seed, rounds, device_results);
  CheckCuda(cudaGetLastError(), "launching the warm-up kernel");
  CheckCuda(cudaDeviceSynchronize(), "running the warm-up kernel");
  CheckCuda(cudaEventRecord(start), "recording the kernel start");
  ReadinessKernel<<<kBlocks, kThreadsPerBlock>>>(seed, rounds, device_results);
  CheckCuda(cudaGetLastError(), "launching the kernel");
  CheckCuda(cudaEventRecord(stop), "recording the kernel end");
  KernelRun run;
  run.seconds = ElapsedMs(start, stop, "timing the kernel") / 1e3;

  static uint64_t results[IG_GPU_THREADS];
  CheckCuda(cudaMemcpy(results, device_results, sizeof(results), cudaMemcpyDeviceToHost),
            "copying kernel results to the host");
  CheckCuda(cudaFree(device_results), "freeing kernel results");
  for (uint64_t result : results) run.checksum ^= result;
  return run;
}

// Best-of-kCopyRepeats device-to-device copy, as memory traffic in GB/s.
double MeasureBandwidthGbps(cudaEvent_t start, cudaEvent_t stop) {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  CheckCuda(cudaMemGetInfo(&free_bytes, &total_bytes), "reading free device memory");
  size_t bytes = free_bytes / 4 < kMaxCopyBytes ? free_bytes / 4 : kMaxCopyBytes;
  bytes -= bytes % kCopyAlignment;
  if (bytes < kMinCopyBytes) {
    fprintf(stderr,
            "gpu_bench: only %zu of %zu bytes of device memory are free; the bandwidth test "
            "needs two buffers of at least %zu bytes within a quarter of it each\n",
            free_bytes, total_bytes, kMinCopyBytes);
    exit(kExitCuda);
  }
  void* source = nullptr;
  void* destination = nullptr;
  CheckCuda(cudaMalloc(&source, bytes), "allocating the copy source");
  CheckCuda(cudaMalloc(&destination, bytes), "allocating the copy destination");
  // Touch both buffers once so that no timed copy pays for first use.
  CheckCuda(cudaMemset(source, 0x5a, bytes), "filling the copy source");
  CheckCuda(cudaMemcpy(destination, source, bytes, cudaMemcpyDeviceToDevice), "warm-up copy");
  float best_ms = 0;
  for (int i = 0; i < kCopyRepeats; ++i) {
    CheckCuda(cudaEventRecord(start), "recording a copy start");
    CheckCuda(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDeviceToDevice),
              "copying device to device");
    CheckCuda(cudaEventRecord(stop), "recording a copy end");
    float ms = ElapsedMs(start, stop, "timing a copy");
    if (i == 0 || ms < best_ms) best_ms = ms;
  }
  CheckCuda(cudaFree(destination), "freeing the copy destination");
  CheckCuda(cudaFree(source), "freeing the copy source");
  if (!(best_ms > 0)) return 0;  // the coordinator rejects a zero bandwidth
  return 2.0 * static_cast<double>(bytes) / (best_ms / 1e3) / 1e9;
}

bool WriteResult(const char* out_dir, const std::string& text) {
  char path[4096];
  int n = snprintf(path, sizeof(path), "%s/result.txt", out_dir);
  if (n < 0 || static_cast<size_t>(n) >= sizeof(path)) {
    fprintf(stderr, "gpu_bench: output directory path is too long\n");
    return false;
  }
  FILE* file = fopen(path, "w");
  if (file == nullptr) {
    fprintf(stderr, "gpu_bench: cannot create %s: %s\n", path, strerror(errno));
    return false;
  }
  bool ok = fwrite(text.data(), 1, text.size(), file) == text.size();
  ok = (fclose(file) == 0) && ok;
  if (!ok) fprintf(stderr, "gpu_bench: cannot write %s: %s\n", path, strerror(errno));
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t rounds = 0;
  uint64_t seed = 0;
  uint64_t device_index = 0;
  if ((argc != 4 && argc != 5) || !ParseDecimal(argv[1], &rounds) ||
      !ParseDecimal(argv[2], &seed) ||
      (argc == 5 && (!ParseDecimal(argv[4], &device_index) || device_index > INT_MAX))) {
    fprintf(stderr,
            "usage: %s ROUNDS SEED OUTDIR [DEVICE_INDEX]  (ROUNDS, SEED and DEVICE_INDEX in "
            "decimal)\n",
            argc > 0 ? argv[0] : "gpu_bench");
    return kExitUsage;
  }
  int device_count = 0;
  CheckCuda(cudaGetDeviceCount(&device_count), "counting devices");
  if (device_index >= static_cast<uint64_t>(device_count)) {
    fprintf(stderr, "gpu_bench: device %" PRIu64 " requested, but only %d visible\n", device_index,
            device_count);
    return kExitCuda;
  }
  const int device = static_cast<int>(device_index);
  CheckCuda(cudaSetDevice(device), "selecting the device");
  cudaDeviceProp properties;
  CheckCuda(cudaGetDeviceProperties(&properties, device), "reading device properties");

  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  CheckCuda(cudaEventCreate(&start), "creating an event");
  CheckCuda(cudaEventCreate(&stop), "creating an event");
  KernelRun kernel = RunKernel(seed, rounds, start, stop);
  double bandwidth_gbps = MeasureBandwidthGbps(start, stop);
  CheckCuda(cudaEventDestroy(stop), "destroying an event");
  CheckCuda(cudaEventDestroy(start), "destroying an event");

  GpuBenchReport report;
  report.checksum = kernel.checksum;
  report.rounds = rounds;
  report.kernel_seconds = kernel.seconds;
  report.bandwidth_gbps = bandwidth_gbps;
  report.device_name.assign(properties.name, strnlen(properties.name, sizeof(properties.name)));
  report.memory_bytes = properties.totalGlobalMem;
  report.compute_capability_major = properties.major;
  report.compute_capability_minor = properties.minor;
  const std::string text = FormatGpuBenchReport(report);
  fputs(text.c_str(), stdout);
  fflush(stdout);
  return WriteResult(argv[3], text) ? 0 : kExitWriteFailed;
}
