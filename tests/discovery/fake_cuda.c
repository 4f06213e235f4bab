/* A stand-in for libcuda.so.1, and a FAKE GPU: never a measurement of
 * anything real.
 *
 * For discovery tests: the same two GPUs as fake_nvml.c, listed in the
 * opposite order (CUDA numbers devices fastest-first, NVML by PCI bus), so a
 * loader matching by position is caught.
 *
 * For the GPU readiness benchmark (src/readiness/gpu_bench.c): contexts,
 * memory, events and kernels. Its "JIT" is fake_ptx.c, which runs the
 * benchmark's real PTX on the CPU, so the coordinator's recomputed checksum
 * checks the shipped kernel. Device memory is address space of its own,
 * backed (shared, anonymous, on first touch) only when written or read: like
 * real VRAM it is not the job's data segment, so the job's RLIMIT_DATA does
 * not count it, and probing how much can be allocated costs nothing.
 *
 * Switches, read from the environment:
 *   FAKE_CUDA_INIT_ERROR=N     cuInit returns N (100: CUDA_ERROR_NO_DEVICE)
 *   FAKE_CUDA_VERSION=N        cuDriverGetVersion reports N (default 12040)
 *   FAKE_CUDA_DEVICE_NAME=S    one device named S instead of the two above,
 *                              as a container given one GPU sees it
 *   FAKE_CUDA_DEVICE_MEMORY=N  its memory in bytes (default 1342177280)
 *   FAKE_CUDA_MAX_PTX_ISA=N    newest PTX ISA accepted, 10 x version (default
 *                              70, the ISA of CUDA 11.0's drivers)
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "fake_ptx.h"

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef struct {
  unsigned char bytes[16];
} CUuuid;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_LAUNCH_FAILED = 719,
};

struct FakeCudaDevice {
  unsigned char uuid_base; /* uuid bytes are uuid_base + 0..15 */
  int cc_major, cc_minor;
  size_t total_mem;
};

static const struct FakeCudaDevice devices[2] = {
    {0x10, 8, 9, 25757220864ull},  /* RTX 4090, NVML index 1 */
    {0x00, 9, 0, 150754820096ull}, /* H200, NVML index 0 */
};

static int initialized = 0;

/* FAKE_CUDA_DEVICE_NAME's single device, or NULL for the two above. */
static const char* SingleDeviceName(void) {
  const char* name = getenv("FAKE_CUDA_DEVICE_NAME");
  return name != NULL && *name != '\0' ? name : NULL;
}

static int DeviceCount(void) { return SingleDeviceName() != NULL ? 1 : 2; }

/* The single device is fake_nvml.c's device 0 (the H200's UUID and compute
 * capability), which a test's NVML then renames. */
static const struct FakeCudaDevice* Device(int ordinal) {
  return SingleDeviceName() != NULL ? &devices[1] : &devices[ordinal];
}

static size_t SingleDeviceMemory(void) {
  const char* value = getenv("FAKE_CUDA_DEVICE_MEMORY");
  return value != NULL && *value != '\0' ? (size_t)strtoull(value, NULL, 10) : (size_t)1342177280u;
}

static int EnvInt(const char* name, int fallback) {
  const char* value = getenv(name);
  return value != NULL && *value != '\0' ? atoi(value) : fallback;
}

EXPORT CUresult cuInit(unsigned int flags) {
  int error = EnvInt("FAKE_CUDA_INIT_ERROR", 0);
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (error != 0) return error;
  initialized = 1;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int* version) {
  *version = EnvInt("FAKE_CUDA_VERSION", 12040);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int* count) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  *count = DeviceCount();
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (ordinal < 0 || ordinal >= DeviceCount()) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int* value, int attribute, CUdevice device) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (device < 0 || device >= DeviceCount()) return CUDA_ERROR_INVALID_DEVICE;
  switch (attribute) {
    case 16: /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
      *value = 1;
      return CUDA_SUCCESS;
    case 75:
      *value = Device(device)->cc_major;
      return CUDA_SUCCESS;
    case 76:
      *value = Device(device)->cc_minor;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice device) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (device < 0 || device >= DeviceCount()) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = SingleDeviceName() != NULL ? SingleDeviceMemory() : Device(device)->total_mem;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice device) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (device < 0 || device >= DeviceCount()) return CUDA_ERROR_INVALID_DEVICE;
  for (int i = 0; i < 16; ++i) uuid->bytes[i] = (unsigned char)(Device(device)->uuid_base + i);
  return CUDA_SUCCESS;
}

/* --- The device side: names, contexts, memory, events, kernels ------------------ */

EXPORT CUresult cuDeviceGetName(char* name, int length, CUdevice device) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (device < 0 || device >= DeviceCount() || length <= 0) return CUDA_ERROR_INVALID_DEVICE;
  const char* single = SingleDeviceName();
  snprintf(name, (size_t)length, "%s", single != NULL ? single : (device == 0 ? "NVIDIA GeForce RTX 4090" : "NVIDIA H200"));
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorName(CUresult error, const char** name) {
  switch (error) {
    case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
    case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_INITIALIZED: *name = "CUDA_ERROR_NOT_INITIALIZED"; return CUDA_SUCCESS;
    case CUDA_ERROR_NO_DEVICE: *name = "CUDA_ERROR_NO_DEVICE"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_DEVICE: *name = "CUDA_ERROR_INVALID_DEVICE"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_PTX: *name = "CUDA_ERROR_INVALID_PTX"; return CUDA_SUCCESS;
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION: *name = "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"; return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; return CUDA_SUCCESS;
    case CUDA_ERROR_LAUNCH_FAILED: *name = "CUDA_ERROR_LAUNCH_FAILED"; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

static int context_current = 0;
static int primary_context; /* its address is the handle */

EXPORT CUresult cuDevicePrimaryCtxRetain(void** context, CUdevice device) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (device < 0 || device >= DeviceCount()) return CUDA_ERROR_INVALID_DEVICE;
  *context = &primary_context;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(void* context) {
  if (context != &primary_context) return CUDA_ERROR_INVALID_VALUE;
  context_current = 1;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void) { return context_current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }

/* Device memory: a bump allocator over address space of its own. */
struct Allocation {
  uint64_t address;
  size_t size;
  char* backing; /* NULL until first touched */
  int live;
};
enum { kMaxAllocations = 1 << 16 };
static struct Allocation allocations[kMaxAllocations];
static int allocation_count = 0;
static uint64_t next_address = UINT64_C(0x7e0000000000);
static size_t allocated_bytes = 0;

static size_t TotalMemory(void) { return SingleDeviceName() != NULL ? SingleDeviceMemory() : Device(0)->total_mem; }

EXPORT CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  if (!context_current) return CUDA_ERROR_INVALID_VALUE;
  *total_bytes = TotalMemory();
  *free_bytes = *total_bytes - allocated_bytes;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(unsigned long long* address, size_t bytes) {
  if (!context_current || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (bytes > TotalMemory() - allocated_bytes || allocation_count == kMaxAllocations) return CUDA_ERROR_OUT_OF_MEMORY;
  struct Allocation* a = &allocations[allocation_count++];
  a->address = next_address;
  a->size = bytes;
  a->backing = NULL;
  a->live = 1;
  next_address += (bytes + 0xfffff) & ~(uint64_t)0xfffff;
  allocated_bytes += bytes;
  *address = a->address;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(unsigned long long address) {
  for (int i = 0; i < allocation_count; ++i) {
    struct Allocation* a = &allocations[i];
    if (a->live && a->address == address) {
      if (a->backing != NULL) munmap(a->backing, a->size);
      a->live = 0;
      a->backing = NULL;
      allocated_bytes -= a->size;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
}

/* Host memory for `bytes` bytes at device `address`, or NULL. */
static void* Translate(uint64_t address, size_t bytes) {
  for (int i = allocation_count - 1; i >= 0; --i) {
    struct Allocation* a = &allocations[i];
    if (!a->live || address < a->address || address - a->address > a->size || bytes > a->size - (address - a->address)) {
      continue;
    }
    if (a->backing == NULL) {
      void* backing = mmap(NULL, a->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (backing == MAP_FAILED) return NULL;
      a->backing = backing;
    }
    return a->backing + (address - a->address);
  }
  return NULL;
}

EXPORT CUresult cuMemAllocHost_v2(void** host, size_t bytes) {
  *host = malloc(bytes); /* pinned host memory is the job's own memory */
  return *host != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuMemFreeHost(void* host) {
  free(host);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD8_v2(unsigned long long address, unsigned char value, size_t bytes) {
  void* host = Translate(address, bytes);
  if (host == NULL) return CUDA_ERROR_INVALID_VALUE;
  memset(host, value, bytes);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyHtoD_v2(unsigned long long address, const void* source, size_t bytes) {
  void* host = Translate(address, bytes);
  if (host == NULL) return CUDA_ERROR_INVALID_VALUE;
  memcpy(host, source, bytes);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoH_v2(void* destination, unsigned long long address, size_t bytes) {
  void* host = Translate(address, bytes);
  if (host == NULL) return CUDA_ERROR_INVALID_VALUE;
  memcpy(destination, host, bytes);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoD_v2(unsigned long long destination, unsigned long long source, size_t bytes) {
  void* to = Translate(destination, bytes);
  void* from = Translate(source, bytes);
  if (to == NULL || from == NULL) return CUDA_ERROR_INVALID_VALUE;
  memmove(to, from, bytes);
  return CUDA_SUCCESS;
}

/* Events: everything runs synchronously, so an event's time is the moment
 * it is recorded. */
struct FakeEvent {
  struct timespec at;
  int recorded;
};

EXPORT CUresult cuEventCreate(void** event, unsigned flags) {
  (void)flags;
  *event = calloc(1, sizeof(struct FakeEvent));
  return *event != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuEventRecord(void* event, void* stream) {
  if (event == NULL || stream != NULL) return CUDA_ERROR_INVALID_VALUE;
  struct FakeEvent* e = event;
  clock_gettime(CLOCK_MONOTONIC, &e->at);
  e->recorded = 1;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuEventSynchronize(void* event) {
  return event != NULL && ((struct FakeEvent*)event)->recorded ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuEventElapsedTime(float* ms, void* start, void* stop) {
  struct FakeEvent* a = start;
  struct FakeEvent* b = stop;
  if (a == NULL || b == NULL || !a->recorded || !b->recorded) return CUDA_ERROR_INVALID_VALUE;
  double elapsed = (double)(b->at.tv_sec - a->at.tv_sec) * 1e3 + (double)(b->at.tv_nsec - a->at.tv_nsec) / 1e6;
  /* A real device's timer resolves about half a microsecond; never report 0. */
  *ms = (float)(elapsed > 0.0005 ? elapsed : 0.0005);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuEventDestroy_v2(void* event) {
  free(event);
  return CUDA_SUCCESS;
}

/* Modules: PTX only (no cubin), run by fake_ptx.c. */
static int EnvMaxIsa(void) {
  const char* value = getenv("FAKE_CUDA_MAX_PTX_ISA");
  return value != NULL && *value != '\0' ? atoi(value) : 70;
}

EXPORT CUresult cuModuleLoadDataEx(void** module, const void* image, unsigned count, int* options, void** values) {
  if (!context_current) return CUDA_ERROR_INVALID_VALUE;
  char error[1024] = "";
  int unsupported = 0;
  struct FakePtxModule* m = FakePtxLoad((const char*)image, EnvMaxIsa(), &unsupported, error, sizeof(error));
  if (m == NULL) {
    for (unsigned i = 0; i < count; ++i) { /* CU_JIT_ERROR_LOG_BUFFER (5) and its size (6) */
      if (options[i] != 5) continue;
      size_t size = 0;
      for (unsigned j = 0; j < count; ++j) {
        if (options[j] == 6) size = (size_t)(uintptr_t)values[j];
      }
      if (size > 0) snprintf((char*)values[i], size, "ptxas fatal   : %s", error);
    }
    return unsupported ? CUDA_ERROR_UNSUPPORTED_PTX_VERSION : CUDA_ERROR_INVALID_PTX;
  }
  *module = m;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(void** function, void* module, const char* name) {
  const struct FakePtxKernel* kernel = FakePtxFind((struct FakePtxModule*)module, name);
  if (kernel == NULL) return CUDA_ERROR_NOT_FOUND;
  *function = (void*)kernel;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuLaunchKernel(void* function, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                               unsigned block_y, unsigned block_z, unsigned shared_bytes, void* stream, void** params,
                               void** extra) {
  if (function == NULL || grid_y != 1 || grid_z != 1 || block_y != 1 || block_z != 1 || shared_bytes != 0 ||
      stream != NULL || extra != NULL) {
    return CUDA_ERROR_INVALID_VALUE; /* what the benchmark never asks */
  }
  char error[512];
  if (FakePtxRun((const struct FakePtxKernel*)function, grid_x, block_x, params, Translate, error, sizeof(error)) != 0) {
    fprintf(stderr, "fake libcuda: kernel failed: %s\n", error);
    return CUDA_ERROR_LAUNCH_FAILED;
  }
  return CUDA_SUCCESS;
}
