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
 *   FAKE_NVML_DEVICE0_NAME=S         device 0 is named S (a model with no plausibility figures,
 *                                    for a fake GPU that must pass the readiness benchmark)
 *   FAKE_NVML_DEVICE0_MEMORY=N       device 0 has N bytes, all free (with the name above)
 *   FAKE_NVML_STATE_FILE=PATH        live values a test rewrites while an agent polls
 *                                    (read on every call; a missing file changes nothing):
 *       count N                      number of devices, as FAKE_NVML_COUNT (which it overrides)
 *       process I PID MIB            a compute process on device I (repeat the line for more)
 *       graphics I PID MIB           a graphics process on device I (a game)
 *       temperature I C              device I's temperature
 *       power I MW                   device I's power draw
 *       utilization I PCT            device I's GPU utilisation
 *       throttle I BITS              device I's throttle reasons (decimal or 0x hex)
 *
 * Build variants: -DOMIT_GETNAME drops a required symbol; -DOMIT_OPTIONAL drops
 * nvmlErrorString, nvmlDeviceGetPowerUsage, nvmlDeviceGetMigMode and the running-process
 * queries, and exports
 * the throttle reasons only under their newer "clocks event reasons" name.
 */
#include <stdio.h>
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
/* nvmlProcessInfo_v2_t, which the _v2 and _v3 process queries fill. */
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

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

/* What FAKE_NVML_STATE_FILE says now; fields it does not set stay -1. */
#define FAKE_MAX_PROCESSES 16
struct FakeProcess {
  int device, graphics;
  unsigned int pid;
  unsigned long long mib;
};
struct FakeState {
  int count;
  long long temperature[2], power[2], utilization[2], throttle[2];
  int processes;
  struct FakeProcess process[FAKE_MAX_PROCESSES];
};

static void ReadState(struct FakeState* state) {
  memset(state, 0, sizeof *state);
  state->count = -1;
  for (int i = 0; i < 2; ++i) {
    state->temperature[i] = state->power[i] = state->utilization[i] = state->throttle[i] = -1;
  }
  const char* path = getenv("FAKE_NVML_STATE_FILE");
  if (path == NULL || *path == '\0') return;
  FILE* f = fopen(path, "r");
  if (f == NULL) return;
  char line[256], key[32];
  while (fgets(line, sizeof line, f) != NULL) {
    unsigned int index = 0;
    unsigned long long a = 0, b = 0;
    int n = sscanf(line, "%31s %u %lli %lli", key, &index, &a, &b);
    if (n >= 2 && strcmp(key, "count") == 0) {
      state->count = (int)index;
      continue;
    }
    if (n < 3 || index >= 2) continue;
    if (strcmp(key, "temperature") == 0) state->temperature[index] = (long long)a;
    if (strcmp(key, "power") == 0) state->power[index] = (long long)a;
    if (strcmp(key, "utilization") == 0) state->utilization[index] = (long long)a;
    if (strcmp(key, "throttle") == 0) state->throttle[index] = (long long)a;
    if ((strcmp(key, "process") == 0 || strcmp(key, "graphics") == 0) && state->processes < FAKE_MAX_PROCESSES) {
      struct FakeProcess* p = &state->process[state->processes++];
      p->device = (int)index;
      p->graphics = strcmp(key, "graphics") == 0;
      p->pid = (unsigned int)a;
      p->mib = n >= 4 ? b : 0;
    }
  }
  fclose(f);
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
  struct FakeState state;
  ReadState(&state);
  int n = state.count >= 0 ? state.count : EnvInt("FAKE_NVML_COUNT", 2);
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
  if (rc != NVML_SUCCESS) return rc;
  const char* renamed = getenv("FAKE_NVML_DEVICE0_NAME");
  if (device == &devices[0] && renamed != NULL && *renamed != '\0') return CopyText(renamed, name, length, 96);
  return CopyText(device->name, name, length, 96);
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
  const char* total = getenv("FAKE_NVML_DEVICE0_MEMORY");
  if (device == &devices[0] && total != NULL && *total != '\0') {
    memory->total = memory->free = strtoull(total, NULL, 10);
    memory->used = 0;
  }
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

/* A live value: the state file's when it sets one, else the built-in one. */
static unsigned long long Live(const long long* values, nvmlDevice_t device, unsigned long long fallback) {
  int index = DeviceIndex(device);
  return index >= 0 && values[index] >= 0 ? (unsigned long long)values[index] : fallback;
}

#ifndef OMIT_OPTIONAL
EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* value) {
  nvmlReturn_t rc = CheckDevice(device);
  if (rc != NVML_SUCCESS) return rc;
  struct FakeState state;
  ReadState(&state);
  *value = (unsigned int)Live(state.power, device, device->power_draw_mw);
  return NVML_SUCCESS;
}

static nvmlReturn_t RunningProcesses(nvmlDevice_t device, int graphics, unsigned int* count,
                                     nvmlProcessInfo_t* infos) {
  nvmlReturn_t rc = CheckDevice(device);
  if (rc != NVML_SUCCESS) return rc;
  if (count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  struct FakeState state;
  ReadState(&state);
  unsigned int found = 0;
  for (int i = 0; i < state.processes; ++i) {
    const struct FakeProcess* p = &state.process[i];
    if (p->device != DeviceIndex(device) || p->graphics != graphics) continue;
    if (infos != NULL && found < *count) {
      infos[found].pid = p->pid;
      infos[found].usedGpuMemory = p->mib << 20;
      infos[found].gpuInstanceId = infos[found].computeInstanceId = 0xFFFFFFFFu;
    }
    ++found;
  }
  /* Like NVML: too small a buffer says how many there are. */
  rc = found > *count ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
  *count = found;
  return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                                            nvmlProcessInfo_t* infos) {
  return RunningProcesses(device, 0, count, infos);
}

EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                                             nvmlProcessInfo_t* infos) {
  return RunningProcesses(device, 1, count, infos);
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensor, unsigned int* temp) {
  nvmlReturn_t rc = CheckDevice(device);
  if (rc != NVML_SUCCESS) return rc;
  if (sensor != 0) return NVML_ERROR_INVALID_ARGUMENT; /* only NVML_TEMPERATURE_GPU */
  struct FakeState state;
  ReadState(&state);
  *temp = (unsigned int)Live(state.temperature, device, device->temperature_c);
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
  struct FakeState state;
  ReadState(&state);
  *reasons = Live(state.throttle, device, device->throttle_reasons);
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
  struct FakeState state;
  ReadState(&state);
  *rates = device->utilization;
  rates->gpu = (unsigned int)Live(state.utilization, device, device->utilization.gpu);
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
