/* A stand-in for libcuda.so.1 for discovery tests: the same two GPUs as
 * fake_nvml.c, listed in the opposite order (CUDA numbers devices
 * fastest-first, NVML by PCI bus), so a loader matching by position is caught.
 *
 * Switches, read from the environment on every call:
 *   FAKE_CUDA_INIT_ERROR=N   cuInit returns N
 *   FAKE_CUDA_VERSION=N      cuDriverGetVersion reports N (default 12040)
 */
#include <stddef.h>
#include <stdlib.h>

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
  CUDA_ERROR_INVALID_DEVICE = 101,
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
  *count = 2;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (ordinal < 0 || ordinal >= 2) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int* value, int attribute, CUdevice device) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (device < 0 || device >= 2) return CUDA_ERROR_INVALID_DEVICE;
  switch (attribute) {
    case 75:
      *value = devices[device].cc_major;
      return CUDA_SUCCESS;
    case 76:
      *value = devices[device].cc_minor;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice device) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (device < 0 || device >= 2) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = devices[device].total_mem;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice device) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (device < 0 || device >= 2) return CUDA_ERROR_INVALID_DEVICE;
  for (int i = 0; i < 16; ++i) uuid->bytes[i] = (unsigned char)(devices[device].uuid_base + i);
  return CUDA_SUCCESS;
}
