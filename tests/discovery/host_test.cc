// Host inventory: the /proc parsers on sample text, and the thin readers on
// this machine.
#include "discovery/host.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "common/fs.h"

namespace idlegrid::discovery {
namespace {

std::vector<std::string> Flags(const v1::CpuInfo& cpu) { return {cpu.flags().begin(), cpu.flags().end()}; }

// One processor block as an Intel host prints it.
std::string XeonProcessor(int processor, int physical_id, int core_id) {
  return "processor\t: " + std::to_string(processor) +
         "\nvendor_id\t: GenuineIntel\n"
         "model name\t: Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz\n"
         "physical id\t: " +
         std::to_string(physical_id) +
         "\nsiblings\t: 4\n"
         "core id\t\t: " +
         std::to_string(core_id) +
         "\ncpu cores\t: 2\n"
         "flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 "
         "clflush mmx fxsr sse sse2 ss ht syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl "
         "xtopology nonstop_tsc cpuid aperfmperf tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid "
         "sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand "
         "hypervisor lahf_lm abm 3dnowprefetch invpcid_single ssbd ibrs ibpb stibp ibrs_enhanced "
         "fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid avx512f avx512dq rdseed adx smap "
         "avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 "
         "xsaves wbnoinvd ida arat avx512vbmi pku ospke avx512_vbmi2 gfni vaes vpclmulqdq "
         "avx512_vnni avx512_bitalg tme avx512_vpopcntdq rdpid md_clear flush_l1d "
         "arch_capabilities\n"
         "bugs\t\t: spectre_v1 spectre_v2 spec_store_bypass swapgs mmio_stale_data\n"
         "bogomips\t: 5799.99\n\n";
}

TEST(ParseCpuInfoTest, Avx512HostWithHyperthreads) {
  // Two cores, two hyperthreads each: processors 0,2 share core 0.
  std::string text = XeonProcessor(0, 0, 0) + XeonProcessor(1, 0, 1) + XeonProcessor(2, 0, 0) + XeonProcessor(3, 0, 1);
  Result<v1::CpuInfo> cpu = ParseCpuInfo(text);
  ASSERT_TRUE(cpu.ok()) << cpu.status().ToString();
  EXPECT_EQ(cpu->model(), "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz");
  EXPECT_EQ(cpu->logical_cores(), 4u);
  EXPECT_EQ(cpu->physical_cores(), 2u);
  EXPECT_EQ(Flags(*cpu),
            (std::vector<std::string>{"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512dq", "avx512cd",
                                      "avx512bw", "avx512vl", "avx512_vnni", "aes", "sha_ni"}));
}

TEST(ParseCpuInfoTest, TwoSocketsCountCoresPerSocket) {
  // Core id 0 exists on both sockets: two physical cores, not one.
  std::string text = XeonProcessor(0, 0, 0) + XeonProcessor(1, 1, 0);
  Result<v1::CpuInfo> cpu = ParseCpuInfo(text);
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->logical_cores(), 2u);
  EXPECT_EQ(cpu->physical_cores(), 2u);
}

TEST(ParseCpuInfoTest, AvxOnlyVmWithoutTopology) {
  const std::string text =
      "processor\t: 0\n"
      "model name\t: AMD EPYC 7B12\n"
      "flags\t\t: fpu sse sse2 sse4_1 sse4_2 avx avx2 fma\n"
      "\n"
      "processor\t: 1\n"
      "model name\t: AMD EPYC 7B12\n"
      "flags\t\t: fpu sse sse2 sse4_1 sse4_2 avx avx2 fma\n";
  Result<v1::CpuInfo> cpu = ParseCpuInfo(text);
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->model(), "AMD EPYC 7B12");
  EXPECT_EQ(cpu->logical_cores(), 2u);
  EXPECT_EQ(cpu->physical_cores(), 2u);  // no core ids: assume no SMT
  EXPECT_EQ(Flags(*cpu), (std::vector<std::string>{"sse4_2", "avx", "avx2", "fma"}));
}

TEST(ParseCpuInfoTest, ArmUsesFeaturesAndModel) {
  const std::string text =
      "processor\t: 0\n"
      "BogoMIPS\t: 243.75\n"
      "Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics sve sve2\n"
      "CPU implementer\t: 0x41\n"
      "\n"
      "processor\t: 1\n"
      "Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics sve sve2\n"
      "\n"
      "Hardware\t: BCM2835\n"
      "Model\t\t: Raspberry Pi 5 Model B Rev 1.0\n";
  Result<v1::CpuInfo> cpu = ParseCpuInfo(text);
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->model(), "Raspberry Pi 5 Model B Rev 1.0");
  EXPECT_EQ(cpu->logical_cores(), 2u);
  EXPECT_EQ(Flags(*cpu), (std::vector<std::string>{"aes", "asimd", "sve", "sve2"}));
}

TEST(ParseCpuInfoTest, NoProcessorIsAnError) {
  EXPECT_EQ(ParseCpuInfo("").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ParseCpuInfo("garbage\nmore garbage\n").status().code(), Code::kInvalidArgument);
}

constexpr char kMemInfo[] =
    "MemTotal:       16310856 kB\n"
    "MemFree:         1234567 kB\n"
    "MemAvailable:   12000000 kB\n"
    "Buffers:          200000 kB\n"
    "Cached:          3000000 kB\n"
    "SwapCached:            0 kB\n"
    "HugePages_Total:       0\n";

TEST(ParseMemInfoTest, TotalAndAvailableInBytes) {
  Result<MemoryInfo> memory = ParseMemInfo(kMemInfo);
  ASSERT_TRUE(memory.ok()) << memory.status().ToString();
  EXPECT_EQ(memory->total_bytes, 16310856ull * 1024);
  EXPECT_EQ(memory->available_bytes, 12000000ull * 1024);
}

TEST(ParseMemInfoTest, OldKernelsEstimateAvailable) {
  Result<MemoryInfo> memory = ParseMemInfo("MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 20 kB\nCached: 300 kB\n");
  ASSERT_TRUE(memory.ok());
  EXPECT_EQ(memory->available_bytes, 420ull * 1024);
}

TEST(ParseMemInfoTest, Errors) {
  EXPECT_EQ(ParseMemInfo("MemFree: 100 kB\n").status().code(), Code::kInvalidArgument);
  Result<MemoryInfo> bad = ParseMemInfo("MemTotal: lots kB\n");
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("MemTotal"), std::string::npos);
  EXPECT_FALSE(ParseMemInfo("MemTotal: 99999999999999999999 kB\n").ok());
}

class HostReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/discovery_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { (void)RemoveTree(dir_); }
  std::string dir_;
};

TEST_F(HostReadTest, ReadersSeeThisHost) {
  Result<v1::CpuInfo> cpu = ReadCpuInfo();
  ASSERT_TRUE(cpu.ok()) << cpu.status().ToString();
  EXPECT_GE(cpu->logical_cores(), 1u);
  EXPECT_LE(cpu->physical_cores(), cpu->logical_cores());
  EXPECT_GE(cpu->logical_cores(), static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_ONLN)));

  Result<MemoryInfo> memory = ReadMemInfo();
  ASSERT_TRUE(memory.ok()) << memory.status().ToString();
  EXPECT_GT(memory->total_bytes, 0u);
  EXPECT_LE(memory->available_bytes, memory->total_bytes);

  Result<std::string> kernel = ReadKernelRelease();
  ASSERT_TRUE(kernel.ok());
  EXPECT_FALSE(kernel->empty());
}

TEST_F(HostReadTest, ReadFailuresAreStatuses) {
  EXPECT_EQ(ReadCpuInfo(dir_ + "/missing").status().code(), Code::kNotFound);
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/meminfo", "nothing useful\n").ok());
  Result<MemoryInfo> memory = ReadMemInfo(dir_ + "/meminfo");
  EXPECT_EQ(memory.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(memory.status().message().starts_with(dir_ + "/meminfo")) << memory.status().message();
}

TEST_F(HostReadTest, DiskSpace) {
  Result<v1::DiskInfo> disk = ReadDisk(dir_);
  ASSERT_TRUE(disk.ok()) << disk.status().ToString();
  EXPECT_EQ(disk->path(), dir_);
  EXPECT_GT(disk->total_bytes(), 0u);
  EXPECT_LE(disk->free_bytes(), disk->total_bytes());
  EXPECT_EQ(ReadDisk(dir_ + "/missing").status().code(), Code::kNotFound);
}

TEST_F(HostReadTest, DiscoverHostListsEveryRequestedDisk) {
  v1::HostInventory host =
      DiscoverHost({dir_, dir_ + "/missing"}, "/nonexistent/libnvidia-ml.so.1", "/nonexistent/libcuda.so.1");
  EXPECT_GE(host.cpu().logical_cores(), 1u);
  EXPECT_GT(host.memory_total_bytes(), 0u);
  EXPECT_FALSE(host.kernel().empty());
  ASSERT_EQ(host.disks_size(), 2);
  EXPECT_EQ(host.disks(0).path(), dir_);
  EXPECT_GT(host.disks(0).total_bytes(), 0u);
  EXPECT_EQ(host.disks(1).path(), dir_ + "/missing");
  EXPECT_EQ(host.disks(1).total_bytes(), 0u);
  EXPECT_FALSE(host.gpus().available());
  EXPECT_TRUE(host.gpus().reason().starts_with("library absent")) << host.gpus().reason();
}

TEST_F(HostReadTest, DiscoverHostIncludesGpus) {
  v1::HostInventory host = DiscoverHost({}, FAKE_NVML_PATH, FAKE_CUDA_PATH);
  ASSERT_TRUE(host.gpus().available()) << host.gpus().reason();
  EXPECT_EQ(host.gpus().devices_size(), 2);
}

}  // namespace
}  // namespace idlegrid::discovery
