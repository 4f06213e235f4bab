#include "readiness/gpu_readiness.h"
#include "common/test_support.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "readiness/gpu_bench_format.h"
#include "readiness/gpu_kernel.h"
#include "readiness/kernel.h"

namespace idlegrid::readiness {
namespace {

using ::idlegrid::testing::CommandResult;
using ::idlegrid::testing::RunShell;
using ::idlegrid::testing::TempDir;

// --- The kernel: the device's copy is the CPU's ---------------------------------------

// Every thread runs kernel.h's kernel from its own seed, whatever the seed.
TEST(GpuKernelTest, EveryThreadRunsTheCpuKernelFromItsOwnSeed) {
  for (uint64_t seed : {uint64_t{0}, uint64_t{7}, std::numeric_limits<uint64_t>::max()}) {
    for (uint32_t thread = 0; thread < IG_GPU_THREADS; ++thread) {
      uint64_t thread_seed = seed + thread * 0xD6E8FEB86659FD93u;
      ASSERT_EQ(ig_gpu_thread_seed(seed, thread), thread_seed) << seed << " " << thread;
      ASSERT_EQ(ig_gpu_thread_result(seed, thread, 3), ig_cpu_kernel(thread_seed, 3)) << seed << " " << thread;
    }
  }
}

// --- ExpectedGpuChecksum ----------------------------------------------------------------

// Computed once and cross-checked with an independent Python model of the
// kernel and the per-thread seeds; a change must fail here, because deployed
// GPU benchmark images would then disagree with the coordinator.
TEST(ExpectedGpuChecksumTest, KnownAnswers) {
  struct Case {
    uint64_t seed;
    uint64_t rounds;
    uint64_t checksum;
  };
  const Case cases[] = {
      {0u, 0u, 0xc3e79c00c2ab0000u},
      {0u, 1u, 0xd202ad003b39294bu},
      {1u, 1u, 0x66695d0046486905u},
      {7u, 1u, 0xea0031005d3ce7dfu},
      {42u, 10u, 0xbad99605924b5102u},
      {18446744073709551615u, 3u, 0x43799ca38d111dfbu},
      {7u, 100u, 0xeeb72549feb5e29cu},
      {2611923443488327891u, 50u, 0x63231353333fb65du},
      {7u, kDefaultGpuBenchRounds, 0x25b1d8725f062402u},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ExpectedGpuChecksum(c.seed, c.rounds), c.checksum) << "seed " << c.seed << ", rounds " << c.rounds;
  }
}

TEST(ExpectedGpuChecksumTest, IsTheXorOfTheCpuKernelOverAllThreads) {
  for (uint64_t seed : {uint64_t{3}, uint64_t{0xabcdef0123456789u}}) {
    uint64_t expected = 0;
    for (uint64_t thread = 0; thread < kGpuBenchThreads; ++thread) {
      expected ^= ig_cpu_kernel(seed + thread * 0xD6E8FEB86659FD93u, 20);
    }
    EXPECT_EQ(ExpectedGpuChecksum(seed, 20), expected) << seed;
  }
}

// With `seed ^ thread` as the thread seeds, seeds differing only in their low
// 16 bits would share one checksum; here every bit and every round counts.
TEST(ExpectedGpuChecksumTest, DependsOnEverySeedBitAndEveryRound) {
  std::set<uint64_t> seeds = {std::numeric_limits<uint64_t>::max()};
  for (int bit = 0; bit < 64; ++bit) seeds.insert(uint64_t{1} << bit);
  for (uint64_t seed = 0; seed < 64; ++seed) seeds.insert(seed);
  std::set<uint64_t> by_seed;
  for (uint64_t seed : seeds) by_seed.insert(ExpectedGpuChecksum(seed, 8));
  EXPECT_EQ(by_seed.size(), seeds.size());
  std::set<uint64_t> by_rounds;
  for (uint64_t rounds = 0; rounds < 64; ++rounds) by_rounds.insert(ExpectedGpuChecksum(9, rounds));
  EXPECT_EQ(by_rounds.size(), 64u);
}

TEST(GpuBenchArgsTest, RoundsSeedOutputDirectoryThenDevice) {
  EXPECT_EQ(GpuBenchArgs(2000, 18446744073709551615u, "/out"),
            (std::vector<std::string>{"2000", "18446744073709551615", "/out", "0"}));
  EXPECT_EQ(GpuBenchArgs(1, 2, "/o", 3), (std::vector<std::string>{"1", "2", "/o", "3"}));
}

// --- ParseGpuBenchResult -------------------------------------------------------------------

const std::string kH200Text =
    "checksum=25b1d8725f062402\nrounds=2000\nthreads=65536\nkernel_seconds=0.000041216\n"
    "bandwidth_gbps=4012.345\ndevice_name=NVIDIA H200\nmemory_bytes=150754820096\n"
    "compute_capability=9.0\nfp32_gflops=61234.5\nh2d_gbps=55.1\nd2h_gbps=54.9\n"
    "allocatable_bytes=149250113536\n";

TEST(ParseGpuBenchResultTest, AcceptsWellFormedResults) {
  auto h200 = ParseGpuBenchResult(kH200Text);
  ASSERT_TRUE(h200.ok()) << h200.status().ToString();
  EXPECT_EQ(h200->checksum, 0x25b1d8725f062402u);
  EXPECT_EQ(h200->rounds, 2000u);
  EXPECT_EQ(h200->threads, 65536u);
  EXPECT_DOUBLE_EQ(h200->kernel_seconds, 0.000041216);
  EXPECT_DOUBLE_EQ(h200->bandwidth_gbps, 4012.345);
  EXPECT_EQ(h200->device_name, "NVIDIA H200");
  EXPECT_EQ(h200->memory_bytes, 150754820096u);
  EXPECT_EQ(h200->compute_capability, "9.0");
  EXPECT_DOUBLE_EQ(h200->fp32_gflops, 61234.5);
  EXPECT_DOUBLE_EQ(h200->h2d_gbps, 55.1);
  EXPECT_DOUBLE_EQ(h200->d2h_gbps, 54.9);
  EXPECT_EQ(h200->allocatable_bytes, 149250113536u);

  // Any order; any printable name, '=' included; edge values.
  auto odd = ParseGpuBenchResult(
      "compute_capability=12.10\nmemory_bytes=18446744073709551615\ndevice_name= A=B [x] \n"
      "bandwidth_gbps=0\nkernel_seconds=1e-9\nthreads=0\nrounds=18446744073709551615\n"
      "checksum=A\nallocatable_bytes=0\nd2h_gbps=0\nh2d_gbps=1\nfp32_gflops=2\n");
  ASSERT_TRUE(odd.ok()) << odd.status().ToString();
  EXPECT_EQ(odd->checksum, 0xau);
  EXPECT_EQ(odd->rounds, 18446744073709551615u);
  EXPECT_EQ(odd->threads, 0u);
  EXPECT_DOUBLE_EQ(odd->kernel_seconds, 1e-9);
  EXPECT_EQ(odd->bandwidth_gbps, 0);
  EXPECT_EQ(odd->device_name, " A=B [x] ");
  EXPECT_EQ(odd->memory_bytes, 18446744073709551615u);
  EXPECT_EQ(odd->compute_capability, "12.10");
}

// kH200Text with the line for `key` replaced by `line` ("" drops it).
std::string WithLine(const std::string& key, const std::string& line) {
  std::istringstream in(kH200Text);
  std::string out;
  for (std::string current; std::getline(in, current);) {
    out += current.rfind(key + "=", 0) == 0 ? line : current + "\n";
  }
  return out;
}

TEST(ParseGpuBenchResultTest, RejectsMalformedResultsNamingTheLine) {
  ASSERT_EQ(WithLine("threads", "threads=65536\n"), kH200Text);
  struct Case {
    std::string name;
    std::string text;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {"empty", "", "has no checksum line"},
      {"missing rounds", WithLine("rounds", ""), "has no rounds line"},
      {"missing threads", WithLine("threads", ""), "has no threads line"},
      {"missing kernel_seconds", WithLine("kernel_seconds", ""), "has no kernel_seconds line"},
      {"missing bandwidth", WithLine("bandwidth_gbps", ""), "has no bandwidth_gbps line"},
      {"missing device_name", WithLine("device_name", ""), "has no device_name line"},
      {"missing memory_bytes", WithLine("memory_bytes", ""), "has no memory_bytes line"},
      {"missing compute_capability", WithLine("compute_capability", ""), "has no compute_capability line"},
      {"missing fp32_gflops", WithLine("fp32_gflops", ""), "has no fp32_gflops line"},
      {"missing h2d_gbps", WithLine("h2d_gbps", ""), "has no h2d_gbps line"},
      {"missing d2h_gbps", WithLine("d2h_gbps", ""), "has no d2h_gbps line"},
      {"missing allocatable_bytes", WithLine("allocatable_bytes", ""), "has no allocatable_bytes line"},
      {"negative FP32 throughput", WithLine("fp32_gflops", "fp32_gflops=-1\n"),
       "line 9 \"fp32_gflops=-1\": fp32_gflops must be a finite, non-negative decimal"},
      {"allocatable in GiB", WithLine("allocatable_bytes", "allocatable_bytes=139.0\n"),
       "line 12 \"allocatable_bytes=139.0\": allocatable_bytes must be a decimal integer"},
      {"duplicate key", kH200Text + "rounds=2000\n", "line 13 \"rounds=2000\": repeats rounds (first on line 2)"},
      {"unknown key", kH200Text + "score=1\n", "line 13 \"score=1\": unknown key"},
      {"CPU benchmark's key", WithLine("rounds", "iterations=2000\n"), "line 2 \"iterations=2000\": unknown key"},
      {"no equals sign", WithLine("threads", "threads 65536\n"), "line 3 \"threads 65536\": expected key=value"},
      {"blank line", "\n" + kH200Text, "line 1 \"\": expected key=value"},
      {"no final newline", kH200Text.substr(0, kH200Text.size() - 1),
       "line 12 \"allocatable_bytes=149250113536\": not ended by a newline"},
      {"carriage return", WithLine("rounds", "rounds=2000\r\n"), "line 2"},
      {"space in key", WithLine("rounds", "rounds =2000\n"), "line 2"},
      {"17 hex digits", WithLine("checksum", "checksum=125b1d8725f062402\n"),
       "line 1 \"checksum=125b1d8725f062402\": checksum must be 1 to 16 hex digits"},
      {"hex prefix", WithLine("checksum", "checksum=0x25b1\n"), "line 1"},
      {"empty checksum", WithLine("checksum", "checksum=\n"), "line 1"},
      {"negative rounds", WithLine("rounds", "rounds=-1\n"),
       "line 2 \"rounds=-1\": rounds must be a decimal integer below 2^64"},
      {"rounds overflow", WithLine("rounds", "rounds=18446744073709551616\n"), "line 2"},
      {"fractional threads", WithLine("threads", "threads=65536.0\n"),
       "line 3 \"threads=65536.0\": threads must be a decimal integer"},
      {"negative kernel time", WithLine("kernel_seconds", "kernel_seconds=-0.1\n"),
       "line 4 \"kernel_seconds=-0.1\": kernel_seconds must be a finite, non-negative decimal"},
      {"inf kernel time", WithLine("kernel_seconds", "kernel_seconds=inf\n"), "line 4"},
      {"nan bandwidth", WithLine("bandwidth_gbps", "bandwidth_gbps=nan\n"),
       "line 5 \"bandwidth_gbps=nan\": bandwidth_gbps must be a finite, non-negative decimal"},
      {"huge bandwidth", WithLine("bandwidth_gbps", "bandwidth_gbps=1e999\n"), "line 5"},
      {"bandwidth with unit", WithLine("bandwidth_gbps", "bandwidth_gbps=4000GB/s\n"), "line 5"},
      {"plus sign", WithLine("bandwidth_gbps", "bandwidth_gbps=+4000\n"), "line 5"},
      {"empty device name", WithLine("device_name", "device_name=\n"),
       "line 6 \"device_name=\": device_name must be 1 to 255 printable ASCII characters"},
      {"control character in name", WithLine("device_name", "device_name=NVIDIA\tH200\n"), "line 6"},
      {"non-ASCII name", WithLine("device_name", "device_name=NVIDIA H200 \xc2\xb5\n"), "line 6"},
      {"256-character name", WithLine("device_name", "device_name=" + std::string(256, 'x') + "\n"), "line 6"},
      {"memory in GiB", WithLine("memory_bytes", "memory_bytes=140.4\n"),
       "line 7 \"memory_bytes=140.4\": memory_bytes must be a decimal integer"},
      {"capability without minor", WithLine("compute_capability", "compute_capability=9\n"),
       "line 8 \"compute_capability=9\": compute_capability must be MAJOR.MINOR"},
      {"capability with three parts", WithLine("compute_capability", "compute_capability=9.0.1\n"), "line 8"},
      {"capability with letters", WithLine("compute_capability", "compute_capability=sm_90\n"), "line 8"},
      {"capability with empty major", WithLine("compute_capability", "compute_capability=.9\n"), "line 8"},
      {"too large", kH200Text + std::string(5000, 'x'), "at most 4096"},
  };
  for (const Case& c : cases) {
    auto result = ParseGpuBenchResult(c.text);
    EXPECT_EQ(result.status().code(), Code::kInvalidArgument) << c.name;
    EXPECT_NE(result.status().message().find(c.message_part), std::string::npos)
        << c.name << ": " << result.status().message();
  }
}

// --- What gpu_bench writes is what the coordinator reads -------------------------------

// gpu_bench.c's report, formatted by the C header it uses.
std::string Format(const IgGpuBenchReport& report) {
  char text[2048];
  IgFormatGpuBenchReport(&report, text, sizeof(text));
  return text;
}

IgGpuBenchReport Report(const std::string& name) {
  IgGpuBenchReport report{};
  std::snprintf(report.device_name, sizeof(report.device_name), "%s", name.c_str());
  return report;
}

TEST(FormatGpuBenchReportTest, RoundTripsThroughTheParser) {
  IgGpuBenchReport report = Report("NVIDIA H200");
  report.checksum = 0x0123456789abcdefu;
  report.rounds = 18446744073709551615u;
  report.kernel_seconds = 0.000041216;
  report.fp32_gflops = 61234.5;
  report.bandwidth_gbps = 4012.345;
  report.h2d_gbps = 55.125;
  report.d2h_gbps = 54.875;
  report.memory_bytes = 150754820096u;
  report.allocatable_bytes = 149250113536u;
  report.compute_capability_major = 12;
  report.compute_capability_minor = 0;
  const std::string text = Format(report);
  EXPECT_EQ(text,
            "checksum=0123456789abcdef\nrounds=18446744073709551615\nthreads=65536\n"
            "kernel_seconds=0.000041216\nfp32_gflops=61234.500\nbandwidth_gbps=4012.345\n"
            "h2d_gbps=55.125\nd2h_gbps=54.875\ndevice_name=NVIDIA H200\nmemory_bytes=150754820096\n"
            "allocatable_bytes=149250113536\ncompute_capability=12.0\n");
  auto parsed = ParseGpuBenchResult(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->checksum, report.checksum);
  EXPECT_EQ(parsed->rounds, report.rounds);
  EXPECT_EQ(parsed->threads, kGpuBenchThreads);
  EXPECT_DOUBLE_EQ(parsed->kernel_seconds, report.kernel_seconds);
  EXPECT_DOUBLE_EQ(parsed->fp32_gflops, report.fp32_gflops);
  EXPECT_DOUBLE_EQ(parsed->bandwidth_gbps, report.bandwidth_gbps);
  EXPECT_DOUBLE_EQ(parsed->h2d_gbps, report.h2d_gbps);
  EXPECT_DOUBLE_EQ(parsed->d2h_gbps, report.d2h_gbps);
  EXPECT_EQ(parsed->device_name, "NVIDIA H200");
  EXPECT_EQ(parsed->memory_bytes, report.memory_bytes);
  EXPECT_EQ(parsed->allocatable_bytes, report.allocatable_bytes);
  EXPECT_EQ(parsed->compute_capability, "12.0");
}

TEST(FormatGpuBenchReportTest, AnHonestRunPassesJudge) {
  IgGpuBenchReport report = Report("NVIDIA H100 80GB HBM3");
  report.checksum = ExpectedGpuChecksum(11, 40);
  report.rounds = 40;
  report.kernel_seconds = 0.000002;
  report.fp32_gflops = 51000;
  report.bandwidth_gbps = 3001;
  report.h2d_gbps = 25;
  report.d2h_gbps = 26;
  report.memory_bytes = 85045231616u;
  report.allocatable_bytes = 84154875904u;
  report.compute_capability_major = 9;
  auto parsed = ParseGpuBenchResult(Format(report));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  v1::GpuDevice claimed;
  claimed.set_name("NVIDIA H100 80GB HBM3");
  claimed.set_memory_total_bytes(85520809984u);  // NVML's figure: 81559 MiB
  claimed.set_compute_capability("9.0");
  GpuJudgement j = JudgeGpu(*parsed, 11, 40, claimed);
  EXPECT_TRUE(j.passed) << j.reason;
  EXPECT_EQ(j.fp32_gflops, 51000);
  EXPECT_EQ(j.allocatable_bytes, 84154875904u);
}

TEST(FormatGpuBenchReportTest, DeviceNamesStayOnePrintableLine) {
  struct Case {
    std::string name;
    std::string printed;
  };
  const std::vector<Case> cases = {
      {"NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090"},
      {"bad\nname=\tx\xc2\xb5", "bad?name=?x??"},
      {std::string("cut\0here", 8), "cut"},
      {std::string(300, 'n'), std::string(IG_MAX_GPU_DEVICE_NAME, 'n')},
  };
  for (const Case& c : cases) {
    char printed[IG_MAX_GPU_DEVICE_NAME + 1];
    IgPrintableGpuDeviceName(c.name.data(), c.name.size(), printed);
    EXPECT_EQ(std::string(printed), c.printed);
    IgGpuBenchReport report{};
    std::memcpy(report.device_name, c.name.data(), std::min(c.name.size(), sizeof(report.device_name) - 1));
    auto parsed = ParseGpuBenchResult(Format(report));
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(parsed->device_name, c.printed);
  }
  // An empty name is reported as such, and the coordinator rejects it.
  EXPECT_EQ(ParseGpuBenchResult(Format(IgGpuBenchReport{})).status().code(), Code::kInvalidArgument);
}

TEST(BenchErrorLineTest, FirstLineCutAndPrintable) {
  EXPECT_EQ(BenchErrorLine("initialising the driver (cuInit): CUDA driver error CUDA_ERROR_NO_DEVICE (100)\nmore\n"),
            "initialising the driver (cuInit): CUDA driver error CUDA_ERROR_NO_DEVICE (100)");
  EXPECT_EQ(BenchErrorLine("tab\there"), "tab?here");
  EXPECT_EQ(BenchErrorLine(""), "(error.txt is empty)");
  EXPECT_EQ(BenchErrorLine(std::string(400, 'x')), std::string(300, 'x') + "...");
}

// --- The plausibility table ----------------------------------------------------------------

TEST(GpuClassTest, MinimumsAreConservativeShareOfTheSpecSheet) {
  ASSERT_GE(GpuClasses().size(), 9u);
  for (const GpuClass& c : GpuClasses()) {
    double share = c.min_bandwidth_gbps / c.spec_bandwidth_gbps;
    EXPECT_GE(share, 0.39) << c.name_pattern;
    EXPECT_LE(share, 0.55) << c.name_pattern;
    EXPECT_GT(c.min_memory_bytes, uint64_t{4} << 30) << c.name_pattern;
  }
}

// Specific patterns come before the general ones they contain, or they
// would never match.
TEST(GpuClassTest, NoPatternIsShadowedByAnEarlierOne) {
  for (const GpuClass& c : GpuClasses()) {
    EXPECT_EQ(FindGpuClass(c.name_pattern), &c) << c.name_pattern;
  }
}

TEST(GpuClassTest, MatchesAdvertisedNamesOnWordBoundaries) {
  struct Case {
    std::string model;
    std::string pattern;  // "" for no class
  };
  const std::vector<Case> cases = {
      {"NVIDIA H200", "H200"},
      {"NVIDIA H200 NVL", "H200"},
      {"NVIDIA GH200 480GB", "GH200"},
      {"NVIDIA H100 80GB HBM3", "H100"},
      {"NVIDIA H100 NVL", "H100"},
      {"NVIDIA H100 PCIe", "H100 PCIe"},
      {"nvidia h100 pcie", "H100 PCIe"},
      {"NVIDIA A100-SXM4-80GB", "A100"},
      {"NVIDIA A100-PCIE-40GB", "A100"},
      {"NVIDIA A100 80GB PCIe", "A100"},
      {"NVIDIA L40S", "L40S"},
      {"NVIDIA GeForce RTX 4090", "RTX 4090"},
      {"NVIDIA GeForce RTX 4090 D", "RTX 4090"},
      {"NVIDIA GeForce RTX 4090 Laptop GPU", "RTX 4090 Laptop"},
      {"NVIDIA GeForce RTX 4080", "RTX 4080"},
      {"NVIDIA GeForce RTX 4080 SUPER", "RTX 4080"},
      {"NVIDIA GeForce RTX 4080 Laptop GPU", "RTX 4080 Laptop"},
      {"NVIDIA GeForce RTX 3090 Ti", "RTX 3090"},
      {"NVIDIA GeForce RTX 3060", "RTX 3060"},
      {"NVIDIA GeForce RTX 3060 Ti", "RTX 3060 Ti"},
      {"NVIDIA GeForce RTX 3060 Laptop GPU", "RTX 3060 Laptop"},
      {"Tesla T4", "T4"},
      {"NVIDIA T400 4GB", ""},
      {"NVIDIA L40", ""},
      {"NVIDIA A10", ""},
      {"NVIDIA GeForce RTX 40900", ""},
      {"NVIDIA GeForce RTX 4070", ""},
      {"NVIDIA RTX A6000", ""},
      {"", ""},
  };
  for (const Case& c : cases) {
    const GpuClass* found = FindGpuClass(c.model);
    EXPECT_EQ(found == nullptr ? "" : found->name_pattern, c.pattern) << c.model;
  }
}

// --- JudgeGpu ---------------------------------------------------------------------------------

constexpr uint64_t kSeed = 2611923443488327891u;
constexpr uint64_t kRounds = 50;
constexpr uint64_t kChecksum = 0x63231353333fb65du;  // ExpectedGpuChecksum(kSeed, kRounds)

constexpr uint64_t kH200Memory = 150754820096u;  // 143771 MiB
constexpr uint64_t kGiB = uint64_t{1} << 30;

GpuBenchResult Reading(const std::string& name, uint64_t memory, const std::string& capability, double bandwidth_gbps) {
  GpuBenchResult r;
  r.checksum = kChecksum;
  r.rounds = kRounds;
  r.threads = kGpuBenchThreads;
  r.kernel_seconds = 0.000012;
  r.fp32_gflops = 40000;
  r.bandwidth_gbps = bandwidth_gbps;
  r.h2d_gbps = 25;
  r.d2h_gbps = 25;
  r.device_name = name;
  r.memory_bytes = memory;
  r.allocatable_bytes = memory - memory / 64;
  r.compute_capability = capability;
  return r;
}

v1::GpuDevice Claim(const std::string& name, uint64_t memory, const std::string& capability) {
  v1::GpuDevice device;
  device.set_name(name);
  device.set_memory_total_bytes(memory);
  device.set_compute_capability(capability);
  return device;
}

TEST(JudgeGpuTest, PassesOnlyHonestPlausibleResults) {
  const GpuBenchResult h200 = Reading("NVIDIA H200", kH200Memory, "9.0", 4012.345);
  const v1::GpuDevice h200_claim = Claim("NVIDIA H200", kH200Memory, "9.0");
  auto with = [&h200](auto change) {
    GpuBenchResult r = h200;
    change(r);
    return r;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    std::string name;
    GpuBenchResult result;
    v1::GpuDevice claimed;
    bool passed;
    std::string reason;  // the whole reason when it passed, else a prefix of it
  };
  const std::vector<Case> cases = {
      {"plausible H200", h200, h200_claim, true, ""},
      {"H200 exactly at the minimum", with([](GpuBenchResult& r) { r.bandwidth_gbps = 2500; }), h200_claim, true, ""},
      {"wrong checksum", with([](GpuBenchResult& r) { r.checksum = 1; }), h200_claim, false,
       "wrong checksum: got 0x0000000000000001, expected 0x63231353333fb65d"},
      {"checksum of another seed",
       with([](GpuBenchResult& r) { r.checksum = ExpectedGpuChecksum(kSeed + 1, kRounds); }), h200_claim, false,
       "wrong checksum"},
      {"CPU kernel's single-thread answer", with([](GpuBenchResult& r) { r.checksum = ig_cpu_kernel(kSeed, kRounds); }),
       h200_claim, false, "wrong checksum"},
      {"wrong rounds", with([](GpuBenchResult& r) { r.rounds = 49; }), h200_claim, false,
       "wrong round count: got 49, expected 50"},
      {"wrong threads", with([](GpuBenchResult& r) { r.threads = 32768; }), h200_claim, false,
       "wrong thread count: got 32768, expected 65536"},
      {"zero kernel time", with([](GpuBenchResult& r) { r.kernel_seconds = 0; }), h200_claim, false,
       "no plausible kernel time: kernel_seconds is 0.000000000; it must be above 0"},
      {"infinite kernel time", with([inf](GpuBenchResult& r) { r.kernel_seconds = inf; }), h200_claim, false,
       "no plausible kernel time"},
      {"zero bandwidth", with([](GpuBenchResult& r) { r.bandwidth_gbps = 0; }), h200_claim, false,
       "no plausible bandwidth: bandwidth_gbps is 0.000; it must be above 0"},
      {"NaN bandwidth", with([nan](GpuBenchResult& r) { r.bandwidth_gbps = nan; }), h200_claim, false,
       "no plausible bandwidth"},
      {"name mismatch", with([](GpuBenchResult& r) { r.device_name = "NVIDIA GeForce RTX 3060"; }), h200_claim, false,
       "device name mismatch: the benchmark ran on \"NVIDIA GeForce RTX 3060\", the node claims "
       "\"NVIDIA H200\""},
      {"names compared loosely", with([](GpuBenchResult& r) { r.device_name = "h200"; }),
       Claim("NVIDIA  H200", kH200Memory, "9.0"), true, ""},
      {"a word more is a different name", with([](GpuBenchResult& r) { r.device_name = "NVIDIA H200 NVL"; }),
       h200_claim, false, "device name mismatch"},
      {"memory mismatch", h200, Claim("NVIDIA H200", 80 * kGiB, "9.0"), false,
       "device memory mismatch: the benchmark saw 150754820096 bytes (140.4 GiB), the node claims "
       "85899345920 bytes (80 GiB); they must agree within 5%"},
      {"memory 4.9% below the claim",
       with([](GpuBenchResult& r) { r.memory_bytes = static_cast<uint64_t>(kH200Memory * 0.951); }), h200_claim, true,
       ""},
      {"memory 5.1% below the claim",
       with([](GpuBenchResult& r) { r.memory_bytes = static_cast<uint64_t>(kH200Memory * 0.949); }), h200_claim, false,
       "device memory mismatch"},
      {"no memory claimed", h200, Claim("NVIDIA H200", 0, "9.0"), false, "device memory mismatch"},
      {"compute capability mismatch", with([](GpuBenchResult& r) { r.compute_capability = "8.0"; }), h200_claim, false,
       "compute capability mismatch: the benchmark saw 8.0, the node claims \"9.0\""},
      {"no compute capability claimed", h200, Claim("NVIDIA H200", kH200Memory, ""), true, ""},
      {"zero FP32 throughput", with([](GpuBenchResult& r) { r.fp32_gflops = 0; }), h200_claim, false,
       "no plausible throughput: fp32_gflops is 0.000; it must be above 0"},
      {"NaN host copy", with([nan](GpuBenchResult& r) { r.h2d_gbps = nan; }), h200_claim, false,
       "no plausible throughput: h2d_gbps"},
      {"zero device-to-host copy", with([](GpuBenchResult& r) { r.d2h_gbps = 0; }), h200_claim, false,
       "no plausible throughput: d2h_gbps"},
      {"another process holds most of the memory", with([](GpuBenchResult& r) { r.allocatable_bytes = 40 * kGiB; }),
       h200_claim, false, "only 40 GiB of device memory could be allocated; the node offers 140.4 GiB"},
      {"the owner's reserve is not promised", with([](GpuBenchResult& r) { r.allocatable_bytes = 60 * kGiB; }),
       [&h200_claim] {
         v1::GpuDevice c = h200_claim;
         c.set_reserved_memory_bytes(30 * kGiB);
         return c;
       }(),
       true, ""},
      {"H200 name but 80 GiB", Reading("NVIDIA H200", 80 * kGiB, "9.0", 4000), Claim("NVIDIA H200", 80 * kGiB, "9.0"),
       false, "implausible for H200: 80 GiB of device memory, expected at least 119 GiB"},
      {"RTX 4090 like a laptop", Reading("NVIDIA GeForce RTX 4090", 24 * kGiB, "8.9", 310),
       Claim("NVIDIA GeForce RTX 4090", 24 * kGiB, "8.9"), false,
       "implausible for RTX 4090: 310 GB/s device bandwidth, expected at least 400"},
      {"RTX 4090 just below", Reading("NVIDIA GeForce RTX 4090", 24 * kGiB, "8.9", 399.96),
       Claim("NVIDIA GeForce RTX 4090", 24 * kGiB, "8.9"), false,
       "implausible for RTX 4090: 399.9 GB/s device bandwidth, expected at least 400"},
      {"plausible RTX 4090", Reading("NVIDIA GeForce RTX 4090", 24 * kGiB, "8.9", 905.5),
       Claim("NVIDIA GeForce RTX 4090", 24 * kGiB, "8.9"), true, ""},
      {"honest RTX 4090 Laptop GPU", Reading("NVIDIA GeForce RTX 4090 Laptop GPU", 16 * kGiB, "8.9", 480),
       Claim("NVIDIA GeForce RTX 4090 Laptop GPU", 16 * kGiB, "8.9"), true, ""},
      {"H100 like a consumer card", Reading("NVIDIA H100 80GB HBM3", 80 * kGiB, "9.0", 800),
       Claim("NVIDIA H100 80GB HBM3", 80 * kGiB, "9.0"), false,
       "implausible for H100: 800 GB/s device bandwidth, expected at least 1500"},
      {"plausible H100 PCIe", Reading("NVIDIA H100 PCIe", 80 * kGiB, "9.0", 1650),
       Claim("NVIDIA H100 PCIe", 80 * kGiB, "9.0"), true, ""},
      {"unknown model", Reading("NVIDIA RTX A6000", 48 * kGiB, "8.6", 5), Claim("NVIDIA RTX A6000", 48 * kGiB, "8.6"),
       true,
       "no plausibility figures for \"NVIDIA RTX A6000\"; passed on checksum and device identity "
       "alone"},
      {"unknown model, wrong checksum",
       [] {
         GpuBenchResult r = Reading("NVIDIA RTX A6000", 48 * kGiB, "8.6", 700);
         r.checksum ^= 1;
         return r;
       }(),
       Claim("NVIDIA RTX A6000", 48 * kGiB, "8.6"), false, "wrong checksum"},
  };
  for (const Case& c : cases) {
    GpuJudgement j = JudgeGpu(c.result, kSeed, kRounds, c.claimed);
    EXPECT_EQ(j.passed, c.passed) << c.name << ": " << j.reason;
    if (c.passed) {
      EXPECT_EQ(j.reason, c.reason) << c.name;
    } else {
      EXPECT_EQ(j.reason.rfind(c.reason, 0), 0u) << c.name << ": " << j.reason;
    }
    if (!std::isnan(c.result.bandwidth_gbps)) {
      EXPECT_EQ(j.bandwidth_gbps, c.result.bandwidth_gbps) << c.name;
    }
    EXPECT_EQ(j.kernel_seconds, c.result.kernel_seconds) << c.name;
  }
}

// --- The benchmark program, as every build makes it ------------------------------------

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// The fake driver (tests/discovery/fake_cuda.c, a FAKE GPU whose "JIT" runs
// the benchmark's real PTX on the CPU) installed as libcuda.so.1 in a
// directory of its own, for LD_LIBRARY_PATH.
class FakeDriverDir {
 public:
  FakeDriverDir() : dir_("gpu_bench_driver") {
    std::filesystem::copy_file(FAKE_CUDA_PATH, dir_.path() + "/libcuda.so.1");
  }
  std::string Env(const std::string& extra = "") const {
    return "env -i LD_LIBRARY_PATH=" + dir_.path() + " FAKE_CUDA_DEVICE_NAME='Idlegrid Fake GPU' " + extra + " ";
  }

 private:
  TempDir dir_;
};

TEST(GpuBenchProgramTest, LinksOnlyGlibcAndNeedsNoCudaLibrary) {
  CommandResult ldd = RunShell("ldd " IDLEGRID_GPU_BENCH_PATH);
  ASSERT_EQ(ldd.exit_code, 0) << ldd.output;
  for (const char* library : {"libcuda", "libcudart", "libstdc++", "libgcc_s"}) {
    EXPECT_EQ(ldd.output.find(library), std::string::npos) << library << " in\n" << ldd.output;
  }
}

TEST(GpuBenchProgramTest, RejectsBadArgumentsBeforeTouchingTheDriver) {
  TempDir out("gpu_readiness_test");
  const std::vector<std::string> bad_args = {"",
                                             "100 7",
                                             "-1 7 " + out.path(),
                                             "100 0x7 " + out.path(),
                                             "100 7 " + out.path() + " -1",
                                             "100 7 " + out.path() + " 2147483648",
                                             "100 7 " + out.path() + " 0 extra",
                                             "18446744073709551616 7 " + out.path()};
  for (const std::string& args : bad_args) {
    CommandResult run = RunShell(IDLEGRID_GPU_BENCH_PATH " " + args);
    EXPECT_EQ(run.exit_code, 2) << args << ": " << run.output;
    EXPECT_NE(run.output.find("usage:"), std::string::npos) << args << ": " << run.output;
  }
  EXPECT_FALSE(std::filesystem::exists(out.path() + "/result.txt"));
}

// No driver at all (this project's CI, a CPU-only host, a sandbox without the
// CDI spec): exit 3, the reason on stderr and in error.txt, no result.
TEST(GpuBenchProgramTest, WithoutADriverExitsWithTheReason) {
  TempDir out("gpu_readiness_test");
  TempDir empty("gpu_bench_no_driver");
  CommandResult run = RunShell("env -i LD_LIBRARY_PATH=" + empty.path() + " " IDLEGRID_GPU_BENCH_PATH " " +
                               Join(GpuBenchArgs(3, 7, out.path())));
  EXPECT_EQ(run.exit_code, 3) << run.output;
  EXPECT_NE(run.output.find("cannot load libcuda.so.1"), std::string::npos) << run.output;
  EXPECT_FALSE(std::filesystem::exists(out.path() + "/result.txt"));
  EXPECT_NE(ReadWholeFile(out.path() + "/error.txt").find("cannot load libcuda.so.1"), std::string::npos);
}

// The driver's own errors are named: a host whose driver sees no device.
TEST(GpuBenchProgramTest, NamesTheDriversError) {
  FakeDriverDir driver;
  TempDir out("gpu_readiness_test");
  CommandResult run = RunShell(driver.Env("FAKE_CUDA_INIT_ERROR=100") + IDLEGRID_GPU_BENCH_PATH " " +
                               Join(GpuBenchArgs(3, 7, out.path())));
  EXPECT_EQ(run.exit_code, 3) << run.output;
  const std::string error = ReadWholeFile(out.path() + "/error.txt");
  EXPECT_EQ(BenchErrorLine(error), "initialising the driver (cuInit): CUDA driver error CUDA_ERROR_NO_DEVICE (100)");
  EXPECT_FALSE(std::filesystem::exists(out.path() + "/result.txt"));
}

// The shipped PTX declares an ISA the drivers people run accept: the fake
// driver takes at most 7.0 (CUDA 11.0's, drivers from 450.80 on), and a
// driver older than the PTX gets the JIT's refusal in the GPU's reason.
TEST(GpuBenchProgramTest, ItsPtxIsOldEnoughForGamersDrivers) {
  FakeDriverDir driver;
  TempDir out("gpu_readiness_test");
  CommandResult old = RunShell(driver.Env("FAKE_CUDA_MAX_PTX_ISA=63") + IDLEGRID_GPU_BENCH_PATH " " +
                               Join(GpuBenchArgs(3, 7, out.path())));
  EXPECT_EQ(old.exit_code, 3) << old.output;
  EXPECT_NE(old.output.find("JIT-compiling the benchmark's PTX: CUDA driver error "
                            "CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222): ptxas fatal   : PTX ISA 7.0 is newer "
                            "than this driver's 6.3"),
            std::string::npos)
      << old.output;
  const std::string ptx = ReadWholeFile(IDLEGRID_SOURCE_DIR "/src/readiness/gpu_kernels.ptx");
  EXPECT_NE(ptx.find("\n.version 7.0\n"), std::string::npos);
  EXPECT_NE(ptx.find("\n.target sm_52\n"), std::string::npos);
}

// The whole program against the fake driver: its JIT runs the shipped PTX,
// so the checksum the coordinator recomputes checks what the kernel means,
// and the result passes JudgeGpu against the device it ran on.
TEST(GpuBenchProgramTest, ItsPtxComputesWhatTheCoordinatorRecomputes) {
  FakeDriverDir driver;
  TempDir out("gpu_readiness_test");
  constexpr uint64_t kRunSeed = 0x1d1e6a1du;
  constexpr uint64_t kRunRounds = 12;
  CommandResult run = RunShell(driver.Env("FAKE_CUDA_DEVICE_MEMORY=1342177280") + IDLEGRID_GPU_BENCH_PATH " " +
                               Join(GpuBenchArgs(kRunRounds, kRunSeed, out.path())));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string text = ReadWholeFile(out.path() + "/result.txt");
  EXPECT_EQ(run.output, text) << "stdout repeats the file";
  auto result = ParseGpuBenchResult(text);
  ASSERT_TRUE(result.ok()) << result.status().ToString() << "\n" << text;
  EXPECT_EQ(result->checksum, ExpectedGpuChecksum(kRunSeed, kRunRounds));
  EXPECT_EQ(result->device_name, "Idlegrid Fake GPU");
  EXPECT_EQ(result->memory_bytes, 1342177280u);
  EXPECT_EQ(result->allocatable_bytes, 1342177280u) << "the fake hands out all of its memory in 64 MiB blocks";
  EXPECT_GT(result->fp32_gflops, 0);
  EXPECT_GT(result->h2d_gbps, 0);
  EXPECT_GT(result->d2h_gbps, 0);
  GpuJudgement j = JudgeGpu(*result, kRunSeed, kRunRounds, Claim("Idlegrid Fake GPU", 1342177280u, "9.0"));
  EXPECT_TRUE(j.passed) << j.reason << "\n" << text;
}

// Where this host has a real NVIDIA driver, the benchmark runs on its first
// GPU and the driver's own JIT compiles the PTX: the result must pass.
TEST(GpuBenchProgramTest, OnThisHostsRealDriverPassesJudge) {
  CommandResult probe = RunShell("ldconfig -p | grep -q 'libcuda.so.1 '");
  if (probe.exit_code != 0)
    GTEST_SKIP() << "no NVIDIA driver (libcuda.so.1) on this host: the real JIT is not tried here";
  TempDir out("gpu_readiness_test");
  constexpr uint64_t kRunSeed = 0x5eed;
  CommandResult run =
      RunShell(IDLEGRID_GPU_BENCH_PATH " " + Join(GpuBenchArgs(kDefaultGpuBenchRounds, kRunSeed, out.path())));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::cout << "[ NOTE     ] gpu_bench on this host's GPU:\n" << run.output;
  auto result = ParseGpuBenchResult(ReadWholeFile(out.path() + "/result.txt"));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  GpuJudgement j = JudgeGpu(*result, kRunSeed, kDefaultGpuBenchRounds,
                            Claim(result->device_name, result->memory_bytes, result->compute_capability));
  EXPECT_TRUE(j.passed) << j.reason << "\n" << run.output;
}

// Where a CUDA toolkit happens to be installed (never needed by idlegrid),
// NVIDIA's own assembler must accept the PTX for the parts people own.
TEST(GpuBenchProgramTest, NvidiasAssemblerAcceptsThePtx) {
  std::string ptxas;
  CommandResult which = RunShell("command -v ptxas || ls /usr/local/cuda/bin/ptxas");
  if (which.exit_code == 0) ptxas = which.output.substr(0, which.output.find('\n'));
  if (ptxas.empty()) GTEST_SKIP() << "no ptxas (CUDA toolkit) here; the fake driver's JIT checked the PTX instead";
  TempDir out("gpu_ptxas");
  for (const char* arch : {"sm_75", "sm_86", "sm_89", "sm_90"}) {
    CommandResult run = RunShell(ptxas + " -arch=" + arch + " -o " + out.path() +
                                 "/k.cubin " IDLEGRID_SOURCE_DIR "/src/readiness/gpu_kernels.ptx");
    EXPECT_EQ(run.exit_code, 0) << arch << ": " << run.output;
  }
}

}  // namespace
}  // namespace idlegrid::readiness
