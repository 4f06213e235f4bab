// GPU discovery through NVML and CUDA, against fake driver libraries built by
// the test build (tests/discovery/fake_nvml.c, fake_cuda.c) whose paths arrive
// as compile definitions.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>

#include <algorithm>
#include <string>
#include <vector>

#include "discovery/cuda_loader.h"
#include "discovery/nvml_loader.h"

namespace idlegrid::discovery {
namespace {

constexpr char kNoCuda[] = "/nonexistent/libcuda.so.1";
constexpr uint64_t kH200Total = 150754820096ull;
constexpr uint64_t kH200Used = 520093696ull;
constexpr uint64_t kRtx4090Total = 25757220864ull;
constexpr uint64_t kRtx4090Used = 1073741824ull;

bool HasError(const v1::GpuDevice& device, const std::string& text) {
  return std::any_of(device.query_errors().begin(), device.query_errors().end(),
                     [&](const std::string& error) { return error == text; });
}

std::string Errors(const v1::GpuDevice& device) {
  std::string all;
  for (const std::string& error : device.query_errors()) all += error + "\n";
  return all;
}

class GpuDiscoveryTest : public ::testing::Test {
 protected:
  void SetUp() override { ClearSwitches(); }
  void TearDown() override { ClearSwitches(); }

  static void ClearSwitches() {
    for (const char* name :
         {"FAKE_NVML_INIT_ERROR", "FAKE_NVML_COUNT", "FAKE_NVML_FAIL_MEMINFO_DEVICE", "FAKE_NVML_FAIL_HANDLE_DEVICE",
          "FAKE_NVML_FAIL_CC", "FAKE_CUDA_INIT_ERROR", "FAKE_CUDA_VERSION", "FAKE_NVML_STATE_FILE"}) {
      unsetenv(name);
    }
  }
};

TEST_F(GpuDiscoveryTest, ReadsEveryFieldOfBothDevices) {
  v1::GpuDiscovery gpus = DiscoverNvidiaGpus(FAKE_NVML_PATH, kNoCuda);
  ASSERT_TRUE(gpus.available()) << gpus.reason();
  EXPECT_EQ(gpus.reason(), "");
  ASSERT_EQ(gpus.devices_size(), 2);

  const v1::GpuDevice& h200 = gpus.devices(0);
  EXPECT_EQ(h200.index(), 0u);
  EXPECT_EQ(h200.name(), "NVIDIA H200");
  EXPECT_EQ(h200.uuid(), "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f");
  EXPECT_EQ(h200.memory_total_bytes(), kH200Total);
  EXPECT_EQ(h200.memory_used_bytes(), kH200Used);
  EXPECT_EQ(h200.memory_free_bytes(), kH200Total - kH200Used);
  EXPECT_EQ(h200.compute_capability(), "9.0");
  EXPECT_EQ(h200.driver_version(), "550.54.15");
  EXPECT_EQ(h200.cuda_driver_version(), "12.4");
  EXPECT_EQ(h200.pcie_generation(), 5u);
  EXPECT_EQ(h200.pcie_width(), 16u);
  EXPECT_EQ(h200.power_limit_mw(), 700000u);
  EXPECT_EQ(h200.power_draw_mw(), 112345u);
  EXPECT_EQ(h200.temperature_c(), 34u);
  EXPECT_EQ(h200.sm_clock_mhz(), 1980u);
  EXPECT_EQ(h200.memory_clock_mhz(), 2619u);
  EXPECT_EQ(h200.throttle_reasons(), 0x1u);
  EXPECT_EQ(h200.utilization_gpu_pct(), 87u);
  EXPECT_EQ(h200.utilization_memory_pct(), 45u);
  EXPECT_EQ(h200.ecc_errors_corrected(), 7u);
  EXPECT_EQ(h200.ecc_errors_uncorrected(), 2u);
  EXPECT_EQ(h200.mig_mode(), "enabled");
  EXPECT_FALSE(h200.simulated());
  EXPECT_EQ(h200.query_errors_size(), 0) << Errors(h200);

  const v1::GpuDevice& rtx = gpus.devices(1);
  EXPECT_EQ(rtx.index(), 1u);
  EXPECT_EQ(rtx.name(), "NVIDIA GeForce RTX 4090");
  EXPECT_EQ(rtx.uuid(), "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f");
  EXPECT_EQ(rtx.memory_total_bytes(), kRtx4090Total);
  EXPECT_EQ(rtx.memory_used_bytes(), kRtx4090Used);
  EXPECT_EQ(rtx.memory_free_bytes(), kRtx4090Total - kRtx4090Used);
  EXPECT_EQ(rtx.compute_capability(), "8.9");
  EXPECT_EQ(rtx.driver_version(), "550.54.15");
  EXPECT_EQ(rtx.cuda_driver_version(), "12.4");
  EXPECT_EQ(rtx.pcie_generation(), 4u);
  EXPECT_EQ(rtx.pcie_width(), 16u);
  EXPECT_EQ(rtx.power_limit_mw(), 450000u);
  EXPECT_EQ(rtx.power_draw_mw(), 30123u);
  EXPECT_EQ(rtx.temperature_c(), 41u);
  EXPECT_EQ(rtx.sm_clock_mhz(), 2520u);
  EXPECT_EQ(rtx.memory_clock_mhz(), 10501u);
  EXPECT_EQ(rtx.throttle_reasons(), 0x4u);
  EXPECT_EQ(rtx.utilization_gpu_pct(), 3u);
  EXPECT_EQ(rtx.utilization_memory_pct(), 1u);
  // A GeForce has no ECC and no MIG: the first is a recorded query error,
  // the second simply "unsupported".
  EXPECT_EQ(rtx.ecc_errors_corrected(), 0u);
  EXPECT_EQ(rtx.ecc_errors_uncorrected(), 0u);
  EXPECT_EQ(rtx.mig_mode(), "unsupported");
  EXPECT_EQ(rtx.query_errors_size(), 2) << Errors(rtx);
  EXPECT_TRUE(HasError(rtx, "ecc_errors_corrected: nvmlDeviceGetTotalEccErrors returned 3 (Not Supported)"))
      << Errors(rtx);
  EXPECT_TRUE(HasError(rtx, "ecc_errors_uncorrected: nvmlDeviceGetTotalEccErrors returned 3 (Not Supported)"))
      << Errors(rtx);
}

TEST_F(GpuDiscoveryTest, BalancesInitWithShutdown) {
  // Holding our own reference keeps the fake (and its counter) loaded across
  // the loader's dlopen/dlclose.
  void* fake = dlopen(FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(fake, nullptr) << dlerror();
  auto active_inits = reinterpret_cast<int (*)()>(dlsym(fake, "fake_nvml_active_inits"));
  ASSERT_NE(active_inits, nullptr);

  EXPECT_TRUE(DiscoverNvidiaGpus(FAKE_NVML_PATH, kNoCuda).available());
  EXPECT_EQ(active_inits(), 0);
  setenv("FAKE_NVML_COUNT", "0", 1);
  EXPECT_FALSE(DiscoverNvidiaGpus(FAKE_NVML_PATH, kNoCuda).available());
  EXPECT_EQ(active_inits(), 0);
  dlclose(fake);
}

TEST_F(GpuDiscoveryTest, AbsentLibraryIsReportedNotFatal) {
  v1::GpuDiscovery gpus = DiscoverNvidiaGpus("/nonexistent/libnvidia-ml.so.1", kNoCuda);
  EXPECT_FALSE(gpus.available());
  EXPECT_EQ(gpus.devices_size(), 0);
  EXPECT_TRUE(gpus.reason().starts_with("library absent: /nonexistent/libnvidia-ml.so.1 (")) << gpus.reason();
  EXPECT_NE(gpus.reason().find("No such file"), std::string::npos) << gpus.reason();
}

TEST_F(GpuDiscoveryTest, InitErrorIsADriverError) {
  setenv("FAKE_NVML_INIT_ERROR", "9", 1);
  v1::GpuDiscovery gpus = DiscoverNvidiaGpus(FAKE_NVML_PATH, kNoCuda);
  EXPECT_FALSE(gpus.available());
  EXPECT_EQ(gpus.devices_size(), 0);
  EXPECT_EQ(gpus.reason(), "driver error: nvmlInit_v2 returned 9 (Driver Not Loaded)");
}

TEST_F(GpuDiscoveryTest, ZeroDevicesIsNoDevice) {
  setenv("FAKE_NVML_COUNT", "0", 1);
  v1::GpuDiscovery gpus = DiscoverNvidiaGpus(FAKE_NVML_PATH, FAKE_CUDA_PATH);
  EXPECT_FALSE(gpus.available());
  EXPECT_EQ(gpus.devices_size(), 0);
  EXPECT_EQ(gpus.reason(), "no device");
}

TEST_F(GpuDiscoveryTest, MissingRequiredSymbolIsADriverError) {
  v1::GpuDiscovery gpus = DiscoverNvidiaGpus(FAKE_NVML_NO_GETNAME_PATH, kNoCuda);
  EXPECT_FALSE(gpus.available());
  EXPECT_EQ(gpus.devices_size(), 0);
  EXPECT_EQ(gpus.reason(), "driver error: symbol nvmlDeviceGetName missing");
}

TEST_F(GpuDiscoveryTest, FailingMemoryQueryKeepsDeviceListedAndOthersIntact) {
  setenv("FAKE_NVML_FAIL_MEMINFO_DEVICE", "1", 1);
  v1::GpuDiscovery gpus = DiscoverNvidiaGpus(FAKE_NVML_PATH, kNoCuda);
  ASSERT_TRUE(gpus.available()) << gpus.reason();
  ASSERT_EQ(gpus.devices_size(), 2);

  const v1::GpuDevice& h200 = gpus.devices(0);
  EXPECT_EQ(h200.memory_total_bytes(), kH200Total);
  EXPECT_EQ(h200.query_errors_size(), 0) << Errors(h200);

  const v1::GpuDevice& rtx = gpus.devices(1);
  EXPECT_EQ(rtx.name(), "NVIDIA GeForce RTX 4090");
  EXPECT_EQ(rtx.uuid(), "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f");
  EXPECT_EQ(rtx.memory_total_bytes(), 0u);
  EXPECT_EQ(rtx.memory_free_bytes(), 0u);
  EXPECT_EQ(rtx.memory_used_bytes(), 0u);
  EXPECT_EQ(rtx.temperature_c(), 41u);  // queries after the failing one still ran
  EXPECT_TRUE(HasError(rtx, "memory: nvmlDeviceGetMemoryInfo returned 999 (Unknown Error)")) << Errors(rtx);
}

TEST_F(GpuDiscoveryTest, DeviceWithoutHandleIsListedWithTheReason) {
  setenv("FAKE_NVML_FAIL_HANDLE_DEVICE", "0", 1);
  v1::GpuDiscovery gpus = DiscoverNvidiaGpus(FAKE_NVML_PATH, kNoCuda);
  ASSERT_EQ(gpus.devices_size(), 2);
  EXPECT_EQ(gpus.devices(0).index(), 0u);
  EXPECT_EQ(gpus.devices(0).name(), "");
  EXPECT_TRUE(HasError(gpus.devices(0), "handle: nvmlDeviceGetHandleByIndex_v2 returned 4 (Insufficient Permissions)"))
      << Errors(gpus.devices(0));
  EXPECT_EQ(gpus.devices(1).name(), "NVIDIA GeForce RTX 4090");
}

TEST_F(GpuDiscoveryTest, MissingOptionalSymbolsLeaveFieldsEmptyWithReasons) {
  v1::GpuDiscovery gpus = DiscoverNvidiaGpus(FAKE_NVML_MINIMAL_PATH, kNoCuda);
  ASSERT_TRUE(gpus.available()) << gpus.reason();
  ASSERT_EQ(gpus.devices_size(), 2);
  const v1::GpuDevice& h200 = gpus.devices(0);
  EXPECT_EQ(h200.power_draw_mw(), 0u);
  EXPECT_TRUE(HasError(h200, "power_draw_mw: symbol nvmlDeviceGetPowerUsage missing")) << Errors(h200);
  EXPECT_EQ(h200.mig_mode(), "unsupported");  // a driver that predates MIG
  EXPECT_EQ(h200.power_limit_mw(), 700000u);
  // Found under the name NVML 12.2 gave it.
  EXPECT_EQ(h200.throttle_reasons(), 0x1u);
  EXPECT_EQ(h200.query_errors_size(), 1) << Errors(h200);
  // Without nvmlErrorString the bare code is reported.
  EXPECT_TRUE(HasError(gpus.devices(1), "ecc_errors_corrected: nvmlDeviceGetTotalEccErrors returned 3"))
      << Errors(gpus.devices(1));
}

// The pause watcher's reading (issue 15): live values and the processes on
// each device, which the fake takes from a state file a test rewrites.
TEST_F(GpuDiscoveryTest, GpuLoadReadsProcessesAndLiveValues) {
  char dir[] = "/tmp/nvml-state.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string state = std::string(dir) + "/state";
  setenv("FAKE_NVML_STATE_FILE", state.c_str(), 1);
  GpuLoadReading quiet = ReadGpuLoad(FAKE_NVML_PATH);
  ASSERT_TRUE(quiet.available) << quiet.reason;
  ASSERT_EQ(quiet.devices.size(), 2u);
  EXPECT_TRUE(quiet.devices[0].processes_known) << quiet.devices[0].processes_error;
  EXPECT_TRUE(quiet.devices[0].processes.empty());
  EXPECT_EQ(quiet.devices[0].device.temperature_c(), 34u);

  FILE* f = fopen(state.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs(
      "graphics 0 4242 1024\nprocess 0 5000 10\nprocess 1 6000 0\ntemperature 0 91\npower 1 350000\n"
      "utilization 0 80\nthrottle 0 0x40\n",
      f);
  fclose(f);
  GpuLoadReading busy = ReadGpuLoad(FAKE_NVML_PATH);
  ASSERT_TRUE(busy.available) << busy.reason;
  const GpuLoad& d0 = busy.devices[0];
  ASSERT_TRUE(d0.processes_known) << d0.processes_error;
  ASSERT_EQ(d0.processes.size(), 2u);
  EXPECT_EQ(d0.processes[0].pid, 5000u);  // compute first, then graphics
  EXPECT_EQ(d0.processes[1].pid, 4242u);
  EXPECT_EQ(d0.processes[1].used_memory_bytes, 1024ull << 20);
  EXPECT_EQ(d0.device.temperature_c(), 91u);
  EXPECT_EQ(d0.device.utilization_gpu_pct(), 80u);
  EXPECT_EQ(d0.device.throttle_reasons(), 0x40u);
  ASSERT_EQ(busy.devices[1].processes.size(), 1u);
  EXPECT_EQ(busy.devices[1].device.power_draw_mw(), 350000u);

  f = fopen(state.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("count 0\n", f);
  fclose(f);
  EXPECT_FALSE(ReadGpuLoad(FAKE_NVML_PATH).available);
  std::remove(state.c_str());
  rmdir(dir);
}

TEST_F(GpuDiscoveryTest, GpuLoadWithoutProcessQueriesSaysSo) {
  GpuLoadReading reading = ReadGpuLoad(FAKE_NVML_MINIMAL_PATH);
  ASSERT_TRUE(reading.available) << reading.reason;
  EXPECT_FALSE(reading.devices[0].processes_known);
  EXPECT_EQ(reading.devices[0].processes_error, "symbol nvmlDeviceGetComputeRunningProcesses_v3 missing");
}

TEST_F(GpuDiscoveryTest, CudaFillsWhatNvmlCouldNotReadMatchingByUuid) {
  setenv("FAKE_NVML_FAIL_CC", "1", 1);
  setenv("FAKE_NVML_FAIL_MEMINFO_DEVICE", "1", 1);
  v1::GpuDiscovery gpus = DiscoverNvidiaGpus(FAKE_NVML_PATH, FAKE_CUDA_PATH);
  ASSERT_EQ(gpus.devices_size(), 2);
  // The fake CUDA lists the devices in the opposite order to NVML.
  EXPECT_EQ(gpus.devices(0).compute_capability(), "9.0");
  EXPECT_EQ(gpus.devices(1).compute_capability(), "8.9");
  EXPECT_EQ(gpus.devices(1).memory_total_bytes(), kRtx4090Total);
  EXPECT_EQ(gpus.devices(1).memory_free_bytes(), 0u);  // unknown, so nothing to allocate
  // The NVML failure stays on record.
  EXPECT_TRUE(HasError(gpus.devices(0),
                       "compute_capability: nvmlDeviceGetCudaComputeCapability returned 3 "
                       "(Not Supported)"))
      << Errors(gpus.devices(0));
}

TEST_F(GpuDiscoveryTest, CudaDisagreementIsRecordedAndNvmlKept) {
  setenv("FAKE_CUDA_VERSION", "12020", 1);
  v1::GpuDiscovery gpus = DiscoverNvidiaGpus(FAKE_NVML_PATH, FAKE_CUDA_PATH);
  ASSERT_EQ(gpus.devices_size(), 2);
  EXPECT_EQ(gpus.devices(0).cuda_driver_version(), "12.4");
  EXPECT_TRUE(HasError(gpus.devices(0), "cuda_driver_version: NVML reports 12.4, CUDA reports 12.2"))
      << Errors(gpus.devices(0));
}

TEST_F(GpuDiscoveryTest, CudaInitFailureLeavesNvmlResultAlone) {
  setenv("FAKE_CUDA_INIT_ERROR", "100", 1);
  setenv("FAKE_NVML_FAIL_CC", "1", 1);
  v1::GpuDiscovery gpus = DiscoverNvidiaGpus(FAKE_NVML_PATH, FAKE_CUDA_PATH);
  ASSERT_TRUE(gpus.available());
  EXPECT_EQ(gpus.devices(0).compute_capability(), "");
  EXPECT_EQ(gpus.devices(0).name(), "NVIDIA H200");
}

TEST_F(GpuDiscoveryTest, QueryCudaDriverReadsTheFake) {
  Result<CudaDriverInfo> cuda = QueryCudaDriver(FAKE_CUDA_PATH);
  ASSERT_TRUE(cuda.ok()) << cuda.status().ToString();
  EXPECT_EQ(cuda->driver_version, "12.4");
  ASSERT_EQ(cuda->devices.size(), 2u);
  EXPECT_EQ(cuda->devices[0].ordinal, 0);
  EXPECT_EQ(cuda->devices[0].uuid, "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f");
  EXPECT_EQ(cuda->devices[0].compute_capability, "8.9");
  EXPECT_EQ(cuda->devices[0].memory_total_bytes, kRtx4090Total);
  EXPECT_EQ(cuda->devices[1].uuid, "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f");
  EXPECT_EQ(cuda->devices[1].compute_capability, "9.0");
}

TEST_F(GpuDiscoveryTest, QueryCudaDriverErrors) {
  Result<CudaDriverInfo> absent = QueryCudaDriver(kNoCuda);
  EXPECT_EQ(absent.status().code(), Code::kNotFound);
  EXPECT_TRUE(absent.status().message().starts_with("library absent: ")) << absent.status().message();

  setenv("FAKE_CUDA_INIT_ERROR", "100", 1);
  Result<CudaDriverInfo> failed = QueryCudaDriver(FAKE_CUDA_PATH);
  EXPECT_EQ(failed.status().code(), Code::kUnavailable);
  EXPECT_EQ(failed.status().message(), "driver error: cuInit returned 100");

  // NVML's library is no CUDA driver.
  Result<CudaDriverInfo> wrong = QueryCudaDriver(FAKE_NVML_PATH);
  EXPECT_EQ(wrong.status().message(), "driver error: symbol cuInit missing");
}

TEST(CudaFormatTest, Versions) {
  EXPECT_EQ(FormatCudaVersion(12040), "12.4");
  EXPECT_EQ(FormatCudaVersion(11080), "11.8");
  EXPECT_EQ(FormatCudaVersion(12000), "12.0");
  EXPECT_EQ(FormatCudaVersion(13010), "13.1");
}

TEST(CudaFormatTest, Uuid) {
  unsigned char bytes[16];
  for (int i = 0; i < 16; ++i) bytes[i] = static_cast<unsigned char>(0xf0 + i);
  EXPECT_EQ(FormatGpuUuid(bytes), "GPU-f0f1f2f3-f4f5-f6f7-f8f9-fafbfcfdfeff");
}

TEST(MergeCudaInfoTest, UnmatchedDeviceGetsOnlyTheDriverVersion) {
  v1::GpuDiscovery gpus;
  v1::GpuDevice* device = gpus.add_devices();
  device->set_uuid("GPU-aaaaaaaa-0000-0000-0000-000000000000");
  gpus.add_devices();  // NVML could not read its uuid
  CudaDriverInfo cuda;
  cuda.driver_version = "12.4";
  cuda.devices.push_back({0, "GPU-bbbbbbbb-0000-0000-0000-000000000000", "9.0", 1000});
  cuda.devices.push_back({1, "", "8.0", 2000});  // an empty uuid must not match an empty uuid

  MergeCudaInfo(cuda, &gpus);
  for (const v1::GpuDevice& merged : gpus.devices()) {
    EXPECT_EQ(merged.cuda_driver_version(), "12.4");
    EXPECT_EQ(merged.compute_capability(), "");
    EXPECT_EQ(merged.memory_total_bytes(), 0u);
    EXPECT_EQ(merged.query_errors_size(), 0);
  }
}

TEST(MergeCudaInfoTest, ComputeCapabilityMismatchIsRecorded) {
  v1::GpuDiscovery gpus;
  v1::GpuDevice* device = gpus.add_devices();
  device->set_uuid("GPU-1");
  device->set_compute_capability("9.0");
  device->set_memory_total_bytes(5);
  CudaDriverInfo cuda;
  cuda.devices.push_back({0, "GPU-1", "8.9", 7});

  MergeCudaInfo(cuda, &gpus);
  EXPECT_EQ(device->compute_capability(), "9.0");
  EXPECT_EQ(device->memory_total_bytes(), 5u);
  EXPECT_EQ(device->cuda_driver_version(), "");
  ASSERT_EQ(device->query_errors_size(), 1);
  EXPECT_EQ(device->query_errors(0), "compute_capability: NVML reports 9.0, CUDA reports 8.9");
}

}  // namespace
}  // namespace idlegrid::discovery
