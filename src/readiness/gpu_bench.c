/* The GPU readiness benchmark: a C program the coordinator wraps in an image
 * and runs on each real GPU of a node, through the same path as a real job,
 * before that GPU gets work.
 *
 * Usage: gpu_bench ROUNDS SEED OUTDIR [DEVICE_INDEX]   (all numbers decimal;
 *        DEVICE_INDEX defaults to 0, the first device the job can see)
 *
 * It needs no CUDA toolkit, to build or to run: it loads the driver
 * (libcuda.so.1, which CDI mounts into the container) with dlopen and hands
 * the driver's JIT the PTX text of gpu_kernels.ptx, built into this binary.
 *
 * 1. ig_readiness: 65536 device threads, thread t computing
 *    ig_gpu_thread_result(SEED, t, ROUNDS) (readiness/gpu_kernel.h); the XOR
 *    of their results is the checksum the coordinator recomputes. Timed with
 *    events (the second launch: the first also loads the module).
 * 2. ig_fp32: fused multiply-adds on every multiprocessor, iterations doubled
 *    until a launch takes 50 ms; fp32_gflops = 2 * FMAs / seconds / 1e9.
 * 3. Device-to-device copy of min(1 GiB, free/4) bytes, best of 5, reported
 *    as memory traffic (2 * bytes / seconds, CUDA's bandwidthTest convention).
 * 4. Pinned host-to-device and device-to-host copies of 64 MiB, best of 5.
 * 5. The device memory it can really allocate: 64 MiB blocks until the driver
 *    says out of memory, after everything above is freed.
 * 6. Writes OUTDIR/result.txt (also printed to stdout), which
 *    readiness::ParseGpuBenchResult reads: the keys of gpu_bench_format.h.
 *
 * Exit status: 0 on success; 1 if the result cannot be written; 2 on a usage
 * error; 3 when the driver cannot be loaded or a driver call fails (no
 * device, PTX the driver cannot compile, out of memory, ...). Then the
 * failing step and the driver's error name are printed to stderr and
 * written to OUTDIR/error.txt, which the coordinator quotes as the GPU's
 * reason, and no result.txt is written. */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "readiness/gpu_bench_format.h"
#include "readiness/gpu_kernel.h"

/* gpu_kernels.ptx, NUL-terminated (the driver reads PTX as a C string). */
__asm__(".section .rodata\n"
        ".global ig_gpu_kernels_ptx\n"
        "ig_gpu_kernels_ptx:\n"
        ".incbin \"" IDLEGRID_GPU_KERNELS_PTX "\"\n"
        ".byte 0\n"
        ".previous\n");
extern const char ig_gpu_kernels_ptx[];

enum { kExitWriteFailed = 1, kExitUsage = 2, kExitDriver = 3 };

/* The driver API as cuda.h declares it; declared here so that building
 * needs no CUDA toolkit. Only entry points every driver since CUDA 7 has. */
typedef int CUresult;
typedef int CUdevice;
typedef void* CUcontext;
typedef void* CUmodule;
typedef void* CUfunction;
typedef void* CUevent;
typedef unsigned long long CUdeviceptr;
enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

static struct {
  CUresult (*Init)(unsigned);
  CUresult (*DeviceGetCount)(int*);
  CUresult (*DeviceGet)(CUdevice*, int);
  CUresult (*DeviceGetName)(char*, int, CUdevice);
  CUresult (*DeviceTotalMem)(size_t*, CUdevice);
  CUresult (*DeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*PrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*CtxSynchronize)(void);
  CUresult (*ModuleLoadDataEx)(CUmodule*, const void*, unsigned, int*, void**);
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, void*, void**, void**);
  CUresult (*MemGetInfo)(size_t*, size_t*);
  CUresult (*MemAlloc)(CUdeviceptr*, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemAllocHost)(void**, size_t);
  CUresult (*MemFreeHost)(void*);
  CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*MemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*EventCreate)(CUevent*, unsigned);
  CUresult (*EventRecord)(CUevent, void*);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*EventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*GetErrorName)(CUresult, const char**);
} cu;

static const char* out_dir = ".";

/* Prints `message` to stderr and to OUTDIR/error.txt, then exits with
 * kExitDriver: the process owns no state worth unwinding, and the driver
 * frees device memory at exit. */
static void Fail(const char* format, ...) {
  char message[2048];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  fprintf(stderr, "gpu_bench: %s\n", message);
  char path[4096];
  if (snprintf(path, sizeof(path), "%s/error.txt", out_dir) < (int)sizeof(path)) {
    FILE* file = fopen(path, "w");
    if (file != NULL) {
      fprintf(file, "%s\n", message);
      fclose(file);
    }
  }
  exit(kExitDriver);
}

static void Check(CUresult rc, const char* step) {
  if (rc == CUDA_SUCCESS) return;
  const char* name = NULL;
  if (cu.GetErrorName == NULL || cu.GetErrorName(rc, &name) != CUDA_SUCCESS) name = NULL;
  Fail("%s: CUDA driver error %s (%d)", step, name != NULL ? name : "unknown", rc);
}

static void* Bind(void* lib, const char* symbol) {
  void* fn = dlsym(lib, symbol);
  if (fn == NULL) Fail("libcuda.so.1 has no %s: the NVIDIA driver is too old or not NVIDIA's", symbol);
  return fn;
}

static void LoadDriver(void) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    Fail("cannot load libcuda.so.1 (%s): no NVIDIA driver in this sandbox; the host needs the "
         "driver and a CDI spec (nvidia-ctk cdi generate)",
         dlerror());
  }
#define IG_BIND(field, symbol) *(void**)(&cu.field) = Bind(lib, symbol)
  IG_BIND(Init, "cuInit");
  IG_BIND(DeviceGetCount, "cuDeviceGetCount");
  IG_BIND(DeviceGet, "cuDeviceGet");
  IG_BIND(DeviceGetName, "cuDeviceGetName");
  IG_BIND(DeviceTotalMem, "cuDeviceTotalMem_v2");
  IG_BIND(DeviceGetAttribute, "cuDeviceGetAttribute");
  IG_BIND(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  IG_BIND(CtxSetCurrent, "cuCtxSetCurrent");
  IG_BIND(CtxSynchronize, "cuCtxSynchronize");
  IG_BIND(ModuleLoadDataEx, "cuModuleLoadDataEx");
  IG_BIND(ModuleGetFunction, "cuModuleGetFunction");
  IG_BIND(LaunchKernel, "cuLaunchKernel");
  IG_BIND(MemGetInfo, "cuMemGetInfo_v2");
  IG_BIND(MemAlloc, "cuMemAlloc_v2");
  IG_BIND(MemFree, "cuMemFree_v2");
  IG_BIND(MemAllocHost, "cuMemAllocHost_v2");
  IG_BIND(MemFreeHost, "cuMemFreeHost");
  IG_BIND(MemsetD8, "cuMemsetD8_v2");
  IG_BIND(MemcpyHtoD, "cuMemcpyHtoD_v2");
  IG_BIND(MemcpyDtoH, "cuMemcpyDtoH_v2");
  IG_BIND(MemcpyDtoD, "cuMemcpyDtoD_v2");
  IG_BIND(EventCreate, "cuEventCreate");
  IG_BIND(EventRecord, "cuEventRecord");
  IG_BIND(EventSynchronize, "cuEventSynchronize");
  IG_BIND(EventElapsedTime, "cuEventElapsedTime");
  *(void**)(&cu.GetErrorName) = dlsym(lib, "cuGetErrorName"); /* optional: names errors */
#undef IG_BIND
}

/* JIT-compiles the PTX; on failure quotes the JIT's own log. */
static CUmodule LoadKernels(void) {
  static char log[4096];
  int options[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[2] = {log, (void*)(uintptr_t)sizeof(log)};
  CUmodule module = NULL;
  CUresult rc = cu.ModuleLoadDataEx(&module, ig_gpu_kernels_ptx, 2, options, values);
  if (rc != CUDA_SUCCESS) {
    log[sizeof(log) - 1] = '\0';
    for (char* c = log; *c != '\0'; ++c) {
      if (*c == '\n') *c = ' ';
    }
    const char* name = NULL;
    if (cu.GetErrorName == NULL || cu.GetErrorName(rc, &name) != CUDA_SUCCESS) name = "unknown";
    Fail("JIT-compiling the benchmark's PTX: CUDA driver error %s (%d)%s%s", name, rc,
         log[0] != '\0' ? ": " : "", log);
  }
  return module;
}

struct Timer {
  CUevent start, stop;
};

static double ElapsedSeconds(struct Timer* t, const char* step) {
  Check(cu.EventSynchronize(t->stop), step);
  float ms = 0;
  Check(cu.EventElapsedTime(&ms, t->start, t->stop), step);
  return ms / 1e3;
}

static const unsigned kThreadsPerBlock = 256;

static double LaunchTimed(CUfunction fn, unsigned blocks, void** params, struct Timer* t, const char* step) {
  Check(cu.EventRecord(t->start, NULL), step);
  Check(cu.LaunchKernel(fn, blocks, 1, 1, kThreadsPerBlock, 1, 1, 0, NULL, params, NULL), step);
  Check(cu.EventRecord(t->stop, NULL), step);
  return ElapsedSeconds(t, step);
}

static uint64_t RunChecksum(CUmodule module, uint64_t seed, uint64_t rounds, struct Timer* t, double* seconds) {
  CUfunction fn = NULL;
  Check(cu.ModuleGetFunction(&fn, module, "ig_readiness"), "finding ig_readiness");
  CUdeviceptr results = 0;
  Check(cu.MemAlloc(&results, IG_GPU_THREADS * sizeof(uint64_t)), "allocating kernel results");
  void* params[] = {&seed, &rounds, &results};
  const unsigned blocks = IG_GPU_THREADS / kThreadsPerBlock;
  LaunchTimed(fn, blocks, params, t, "running the warm-up kernel");
  *seconds = LaunchTimed(fn, blocks, params, t, "running the checksum kernel");
  static uint64_t host[IG_GPU_THREADS];
  Check(cu.MemcpyDtoH(host, results, sizeof(host)), "copying kernel results to the host");
  Check(cu.MemFree(results), "freeing kernel results");
  uint64_t checksum = 0;
  for (uint32_t i = 0; i < IG_GPU_THREADS; ++i) checksum ^= host[i];
  return checksum;
}

static double MeasureFp32Gflops(CUmodule module, CUdevice device, struct Timer* t) {
  CUfunction fn = NULL;
  Check(cu.ModuleGetFunction(&fn, module, "ig_fp32"), "finding ig_fp32");
  int sms = 0;
  Check(cu.DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device), "reading the SM count");
  if (sms < 1) sms = 1;
  const unsigned blocks = (unsigned)sms * 8; /* 2048 threads per SM: full occupancy */
  CUdeviceptr out = 0;
  Check(cu.MemAlloc(&out, (size_t)blocks * kThreadsPerBlock * sizeof(float)), "allocating FP32 results");
  unsigned iterations = 64;
  double seconds = 0;
  for (;;) {
    void* params[] = {&out, &iterations};
    seconds = LaunchTimed(fn, blocks, params, t, "running the FP32 kernel");
    if (seconds >= 0.05 || iterations >= (1u << 24)) break;
    iterations *= 2;
  }
  Check(cu.MemFree(out), "freeing FP32 results");
  const double flop = 2.0 * 32.0 * iterations * (double)blocks * kThreadsPerBlock;
  return seconds > 0 ? flop / seconds / 1e9 : 0;
}

enum { kCopyRepeats = 5 };
static const size_t kMaxCopyBytes = (size_t)1 << 30;
/* Below this the copy could run out of the L2 cache and overstate bandwidth. */
static const size_t kMinCopyBytes = (size_t)256 << 20;
static const size_t kHostCopyBytes = (size_t)64 << 20;

static double MeasureDeviceBandwidth(struct Timer* t) {
  size_t free_bytes = 0, total_bytes = 0;
  Check(cu.MemGetInfo(&free_bytes, &total_bytes), "reading free device memory");
  size_t bytes = free_bytes / 4 < kMaxCopyBytes ? free_bytes / 4 : kMaxCopyBytes;
  bytes -= bytes % ((size_t)1 << 20);
  if (bytes < kMinCopyBytes) {
    Fail("only %zu of %zu bytes of device memory are free; the bandwidth test needs two buffers of at "
         "least %zu bytes within a quarter of it each",
         free_bytes, total_bytes, kMinCopyBytes);
  }
  CUdeviceptr src = 0, dst = 0;
  Check(cu.MemAlloc(&src, bytes), "allocating the copy source");
  Check(cu.MemAlloc(&dst, bytes), "allocating the copy destination");
  Check(cu.MemsetD8(src, 0x5a, bytes), "filling the copy source");
  Check(cu.MemcpyDtoD(dst, src, bytes), "warm-up copy");
  double best = 0;
  for (int i = 0; i < kCopyRepeats; ++i) {
    Check(cu.EventRecord(t->start, NULL), "timing a device copy");
    Check(cu.MemcpyDtoD(dst, src, bytes), "copying device to device");
    Check(cu.EventRecord(t->stop, NULL), "timing a device copy");
    double s = ElapsedSeconds(t, "timing a device copy");
    if (i == 0 || s < best) best = s;
  }
  Check(cu.MemFree(dst), "freeing the copy destination");
  Check(cu.MemFree(src), "freeing the copy source");
  return best > 0 ? 2.0 * (double)bytes / best / 1e9 : 0;
}

/* Pinned host memory both ways; *h2d and *d2h in GB/s (bytes moved / s). */
static void MeasureHostBandwidth(struct Timer* t, double* h2d, double* d2h) {
  void* host = NULL;
  Check(cu.MemAllocHost(&host, kHostCopyBytes), "allocating pinned host memory");
  memset(host, 0x5a, kHostCopyBytes);
  CUdeviceptr dev = 0;
  Check(cu.MemAlloc(&dev, kHostCopyBytes), "allocating the host copy buffer");
  double best_up = 0, best_down = 0;
  for (int i = -1; i < kCopyRepeats; ++i) { /* i == -1: warm-up, not counted */
    Check(cu.EventRecord(t->start, NULL), "timing a host-to-device copy");
    Check(cu.MemcpyHtoD(dev, host, kHostCopyBytes), "copying host to device");
    Check(cu.EventRecord(t->stop, NULL), "timing a host-to-device copy");
    double up = ElapsedSeconds(t, "timing a host-to-device copy");
    Check(cu.EventRecord(t->start, NULL), "timing a device-to-host copy");
    Check(cu.MemcpyDtoH(host, dev, kHostCopyBytes), "copying device to host");
    Check(cu.EventRecord(t->stop, NULL), "timing a device-to-host copy");
    double down = ElapsedSeconds(t, "timing a device-to-host copy");
    if (i == 0 || (i > 0 && up < best_up)) best_up = up;
    if (i == 0 || (i > 0 && down < best_down)) best_down = down;
  }
  Check(cu.MemFree(dev), "freeing the host copy buffer");
  Check(cu.MemFreeHost(host), "freeing pinned host memory");
  *h2d = best_up > 0 ? (double)kHostCopyBytes / best_up / 1e9 : 0;
  *d2h = best_down > 0 ? (double)kHostCopyBytes / best_down / 1e9 : 0;
}

/* What the driver really lets a job allocate, in 64 MiB blocks. */
static uint64_t MeasureAllocatable(size_t total) {
  static CUdeviceptr blocks[1 << 16];
  const size_t block = (size_t)64 << 20;
  size_t count = 0;
  while (count < sizeof(blocks) / sizeof(blocks[0]) && (count + 1) * block <= total) {
    CUresult rc = cu.MemAlloc(&blocks[count], block);
    if (rc == CUDA_ERROR_OUT_OF_MEMORY) break;
    Check(rc, "allocating device memory");
    ++count;
  }
  for (size_t i = 0; i < count; ++i) Check(cu.MemFree(blocks[i]), "freeing device memory");
  return (uint64_t)count * block;
}

/* Strict decimal: digits only (no sign, space or prefix), no overflow. */
static int ParseDecimal(const char* text, uint64_t* out) {
  if (text[0] < '0' || text[0] > '9') return 0;
  char* end = NULL;
  errno = 0;
  unsigned long long value = strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0') return 0;
  *out = (uint64_t)value;
  return 1;
}

static int WriteResult(const char* text) {
  char path[4096];
  int n = snprintf(path, sizeof(path), "%s/result.txt", out_dir);
  if (n < 0 || (size_t)n >= sizeof(path)) {
    fprintf(stderr, "gpu_bench: output directory path is too long\n");
    return 0;
  }
  FILE* file = fopen(path, "w");
  if (file == NULL) {
    fprintf(stderr, "gpu_bench: cannot create %s: %s\n", path, strerror(errno));
    return 0;
  }
  int ok = fputs(text, file) >= 0;
  ok = (fclose(file) == 0) && ok;
  if (!ok) fprintf(stderr, "gpu_bench: cannot write %s: %s\n", path, strerror(errno));
  return ok;
}

int main(int argc, char** argv) {
  uint64_t rounds = 0, seed = 0, device_index = 0;
  if ((argc != 4 && argc != 5) || !ParseDecimal(argv[1], &rounds) || !ParseDecimal(argv[2], &seed) ||
      (argc == 5 && (!ParseDecimal(argv[4], &device_index) || device_index > INT_MAX))) {
    fprintf(stderr, "usage: %s ROUNDS SEED OUTDIR [DEVICE_INDEX]  (ROUNDS, SEED and DEVICE_INDEX in decimal)\n",
            argc > 0 ? argv[0] : "gpu_bench");
    return kExitUsage;
  }
  out_dir = argv[3];
  LoadDriver();
  Check(cu.Init(0), "initialising the driver (cuInit)");
  int count = 0;
  Check(cu.DeviceGetCount(&count), "counting devices");
  if (device_index >= (uint64_t)count) Fail("device %" PRIu64 " requested, but only %d visible", device_index, count);
  CUdevice device = 0;
  Check(cu.DeviceGet(&device, (int)device_index), "opening the device");
  CUcontext context = NULL;
  Check(cu.PrimaryCtxRetain(&context, device), "creating a context");
  Check(cu.CtxSetCurrent(context), "creating a context");

  struct IgGpuBenchReport report;
  memset(&report, 0, sizeof(report));
  Check(cu.DeviceGetName(report.device_name, (int)sizeof(report.device_name), device), "reading the device name");
  size_t total = 0;
  Check(cu.DeviceTotalMem(&total, device), "reading the device memory size");
  report.memory_bytes = total;
  Check(cu.DeviceGetAttribute(&report.compute_capability_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
        "reading the compute capability");
  Check(cu.DeviceGetAttribute(&report.compute_capability_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
        "reading the compute capability");

  CUmodule module = LoadKernels();
  struct Timer timer;
  Check(cu.EventCreate(&timer.start, 0), "creating an event");
  Check(cu.EventCreate(&timer.stop, 0), "creating an event");
  report.rounds = rounds;
  report.checksum = RunChecksum(module, seed, rounds, &timer, &report.kernel_seconds);
  report.fp32_gflops = MeasureFp32Gflops(module, device, &timer);
  report.bandwidth_gbps = MeasureDeviceBandwidth(&timer);
  MeasureHostBandwidth(&timer, &report.h2d_gbps, &report.d2h_gbps);
  Check(cu.CtxSynchronize(), "finishing");
  report.allocatable_bytes = MeasureAllocatable(total);

  char text[2048];
  IgFormatGpuBenchReport(&report, text, sizeof(text));
  fputs(text, stdout);
  fflush(stdout);
  return WriteResult(text) ? 0 : kExitWriteFailed;
}
