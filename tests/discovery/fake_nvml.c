/* A stand-in for libnvidia-ml.so.1 with two known GPUs, for discovery tests.
 *
 * It declares the NVML C API itself, as the loader does, and behaves like the
 * real library where the loader depends on it: every query fails with
 * NVML_ERROR_UNINITIALIZED unless nvmlInit_v2 was called, handles are checked,
 * and text buffers smaller than NVML's documented sizes are refused.
 *
 * Behaviour switches, read from the environment on every call:
 *   FAKE_NVML_INIT_ERROR=N           nvmlInit_v2 returns N
 *   FAKE_NVML_COUNT=N                number of devices (0..2, default 2)
 *   FAKE_NVML_FAIL_MEMINFO_DEVICE=I  nvmlDeviceGetMemoryInfo fails (999) for device I
 *   FAKE_NVML_FAIL_HANDLE_DEVICE=I   nvmlDeviceGetHandleByIndex_v2 fails (4) for device I
 *   FAKE_NVML_FAIL_CC=1              nvmlDeviceGetCudaComputeCapability: Not Supported
 *
 * Build variants: -DOMIT_GETNAME drops a required symbol; -DOMIT_OPTIONAL drops
 * nvmlErrorString, nvmlDeviceGetPowerUsage and nvmlDeviceGetMigMode, and exports
 * the throttle reasons only under their newer "clocks event reasons" name.
 */
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t;
typedef struct FakeDevice* nvmlDevice_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
  unsigned int gpu, memory;
} nvmlUtilization_t;

enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_UNKNOWN = 999,
};

struct FakeDevice {
  const char* name;
  const char* uuid;
  nvmlMemory_t memory;
  int cc_major, cc_minor;
  unsigned int pcie_gen, pcie_width, power_limit_mw, power_draw_mw, temperature_c;
  unsigned int sm_clock_mhz, mem_clock_mhz;
  unsigned long long throttle_reasons;
  nvmlUtilization_t utilization;
  int ecc_supported;
  unsigned long long ecc_corrected, ecc_uncorrected;
  int mig_supported;
  unsigned int mig_current, mig_pending;
};

static struct FakeDevice devices[2] = {
    {"NVIDIA H200",
     "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f",
     {150754820096ull, 150754820096ull - 520093696ull, 520093696ull},
     9,
     0,
     5,
     16,
     700000,
     112345,
     34,
     1980,
     2619,
     0x1ull,
     {87, 45},
     1,
     7,
     2,
     1,
     1,
     1},
    {"NVIDIA GeForce RTX 4090",
     "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f",
     {25757220864ull, 25757220864ull - 1073741824ull, 1073741824ull},
     8,
     9,
     4,
     16,
     450000,
     30123,
     41,
     2520,
     10501,
     0x4ull,
     {3, 1},
     0,
     0,
     0,
     0,
     0,
     0},
};

static int active_inits = 0;

static int EnvInt(const char* name, int fallback) {
  const char* value = getenv(name);
  return value != NULL && *value != '\0' ? atoi(value) : fallback;
}

static int DeviceIndex(nvmlDevice_t device) {
  for (int i = 0; i < 2; ++i) {
    if (device == &devices[i]) return i;
  }
  return -1;
}

/* Common preconditions of every device query. */
static nvmlReturn_t CheckDevice(nvmlDevice_t device) {
  if (active_inits == 0) return NVML_ERROR_UNINITIALIZED;
  if (DeviceIndex(device) < 0) return NVML_ERROR_INVALID_ARGUMENT;
  return NVML_SUCCESS;
}

static nvmlReturn_t CopyText(const char* text, char* buffer, unsigned int length,
                             unsigned int documented_size) {
  if (buffer == NULL || length < documented_size) return NVML_ERROR_INSUFFICIENT_SIZE;
  strncpy(buffer, text, length - 1);
  buffer[length - 1] = '\0';
  return NVML_SUCCESS;
}

/* For tests that keep the library loaded: inits not yet balanced by shutdown. */
EXPORT int fake_nvml_active_inits(void) { return active_inits; }

EXPORT nvmlReturn_t nvmlInit_v2(void) {
  int error = EnvInt("FAKE_NVML_INIT_ERROR", 0);
  if (error != 0) return error;
  ++active_inits;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlShutdown(void) {
  if (active_inits == 0) return NVML_ERROR_UNINITIALIZED;
  --active_inits;
  return NVML_SUCCESS;
}

#ifndef OMIT_OPTIONAL
EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case 9:
      return "Driver Not Loaded";
    default:
      return "Unknown Error";
  }
}
#endif

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  if (active_inits == 0) return NVML_ERROR_UNINITIALIZED;
  return CopyText("550.54.15", version, length, 80);
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  if (active_inits == 0) return NVML_ERROR_UNINITIALIZED;
  *version = 12040;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (active_inits == 0) return NVML_ERROR_UNINITIALIZED;
  int n = EnvInt("FAKE_NVML_COUNT", 2);
  *count = (unsigned int)(n < 0 ? 0 : n > 2 ? 2 : n);
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (active_inits == 0) return NVML_ERROR_UNINITIALIZED;
  if (index >= 2) return NVML_ERROR_INVALID_ARGUMENT;
  if ((int)index == EnvInt("FAKE_NVML_FAIL_HANDLE_DEVICE", -1)) return NVML_ERROR_NO_PERMISSION;
  *device = &devices[index];
  return NVML_SUCCESS;
}

#ifndef OMIT_GETNAME
EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  nvmlReturn_t rc = CheckDevice(device);
  return rc != NVML_SUCCESS ? rc : CopyText(device->name, name, length, 96);
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  nvmlReturn_t rc = CheckDevice(device);
  return rc != NVML_SUCCESS ? rc : CopyText(device->uuid, uuid, length, 80);
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  nvmlReturn_t rc = CheckDevice(device);
  if (rc != NVML_SUCCESS) return rc;
  if (DeviceIndex(device) == EnvInt("FAKE_NVML_FAIL_MEMINFO_DEVICE", -1)) return NVML_ERROR_UNKNOWN;
  *memory = device->memory;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major,
                                                       int* minor) {
  nvmlReturn_t rc = CheckDevice(device);
  if (rc != NVML_SUCCESS) return rc;
  if (EnvInt("FAKE_NVML_FAIL_CC", 0) != 0) return NVML_ERROR_NOT_SUPPORTED;
  *major = device->cc_major;
  *minor = device->cc_minor;
  return NVML_SUCCESS;
}

#define FAKE_UINT_QUERY(function, field)                                   \
  EXPORT nvmlReturn_t function(nvmlDevice_t device, unsigned int* value) { \
    nvmlReturn_t rc = CheckDevice(device);                                 \
    if (rc != NVML_SUCCESS) return rc;                                     \
    *value = device->field;                                                \
    return NVML_SUCCESS;                                                   \
  }

FAKE_UINT_QUERY(nvmlDeviceGetCurrPcieLinkGeneration, pcie_gen)
FAKE_UINT_QUERY(nvmlDeviceGetCurrPcieLinkWidth, pcie_width)
FAKE_UINT_QUERY(nvmlDeviceGetEnforcedPowerLimit, power_limit_mw)
#ifndef OMIT_OPTIONAL
FAKE_UINT_QUERY(nvmlDeviceGetPowerUsage, power_draw_mw)
#endif

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensor, unsigned int* temp) {
  nvmlReturn_t rc = CheckDevice(device);
  if (rc != NVML_SUCCESS) return rc;
  if (sensor != 0) return NVML_ERROR_INVALID_ARGUMENT; /* only NVML_TEMPERATURE_GPU */
  *temp = device->temperature_c;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned int* clock) {
  nvmlReturn_t rc = CheckDevice(device);
  if (rc != NVML_SUCCESS) return rc;
  switch (type) {
    case 1:
      *clock = device->sm_clock_mhz;
      return NVML_SUCCESS; /* NVML_CLOCK_SM */
    case 2:
      *clock = device->mem_clock_mhz;
      return NVML_SUCCESS; /* NVML_CLOCK_MEM */
    default:
      return NVML_ERROR_INVALID_ARGUMENT;
  }
}

static nvmlReturn_t ThrottleReasons(nvmlDevice_t device, unsigned long long* reasons) {
  nvmlReturn_t rc = CheckDevice(device);
  if (rc != NVML_SUCCESS) return rc;
  *reasons = device->throttle_reasons;
  return NVML_SUCCESS;
}

#ifdef OMIT_OPTIONAL
EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                           unsigned long long* reasons) {
  return ThrottleReasons(device, reasons);
}
#else
EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                              unsigned long long* reasons) {
  return ThrottleReasons(device, reasons);
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* rates) {
  nvmlReturn_t rc = CheckDevice(device);
  if (rc != NVML_SUCCESS) return rc;
  *rates = device->utilization;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int error_type,
                                                int counter_type, unsigned long long* count) {
  nvmlReturn_t rc = CheckDevice(device);
  if (rc != NVML_SUCCESS) return rc;
  if (!device->ecc_supported) return NVML_ERROR_NOT_SUPPORTED;
  if (counter_type != 1) return NVML_ERROR_INVALID_ARGUMENT; /* only NVML_AGGREGATE_ECC */
  switch (error_type) {
    case 0:
      *count = device->ecc_corrected;
      return NVML_SUCCESS;
    case 1:
      *count = device->ecc_uncorrected;
      return NVML_SUCCESS;
    default:
      return NVML_ERROR_INVALID_ARGUMENT;
  }
}

#ifndef OMIT_OPTIONAL
EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current,
                                         unsigned int* pending) {
  nvmlReturn_t rc = CheckDevice(device);
  if (rc != NVML_SUCCESS) return rc;
  if (!device->mig_supported) return NVML_ERROR_NOT_SUPPORTED;
  *current = device->mig_current;
  *pending = device->mig_pending;
  return NVML_SUCCESS;
}
#endif
