// Parsing --simulate-gpu specs.
#include "discovery/simulated.h"

#include <gtest/gtest.h>

#include <string>

namespace idlegrid::discovery {
namespace {

constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t kMiB = 1ull << 20;

struct ValidCase {
  std::string spec;
  std::string name;
  uint64_t memory_bytes;
  std::string compute_capability;
};

TEST(ParseSimulatedGpuTest, ValidSpecs) {
  const ValidCase cases[] = {
      {"RTX 4090:24GiB:8.9", "RTX 4090", 24 * kGiB, "8.9"},
      {"H100 80GB HBM3:80GiB:9.0", "H100 80GB HBM3", 80 * kGiB, "9.0"},
      {"RTX 4090:24G:8.9", "RTX 4090", 24 * kGiB, "8.9"},
      {"RTX 4090:24576MiB:8.9", "RTX 4090", 24576 * kMiB, "8.9"},
      {"A100:40960M:8.0", "A100", 40 * kGiB, "8.0"},
      {"Big:1.5TiB:10.0", "Big", 1536 * kGiB, "10.0"},
      {"B200:192GiB:10.0", "B200", 192 * kGiB, "10.0"},
      {" T4 : 16GiB : 7.5 ", "T4", 16 * kGiB, "7.5"},
      {"Tiny:512KiB:5.0", "Tiny", 512 * 1024, "5.0"},
  };
  for (const ValidCase& c : cases) {
    SCOPED_TRACE(c.spec);
    Result<v1::GpuDevice> gpu = ParseSimulatedGpu(c.spec, 3);
    ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
    EXPECT_EQ(gpu->name(), c.name);
    EXPECT_EQ(gpu->memory_total_bytes(), c.memory_bytes);
    EXPECT_EQ(gpu->memory_free_bytes(), c.memory_bytes);
    EXPECT_EQ(gpu->memory_used_bytes(), 0u);
    EXPECT_EQ(gpu->compute_capability(), c.compute_capability);
    EXPECT_EQ(gpu->index(), 3u);
    EXPECT_TRUE(gpu->simulated());
    EXPECT_EQ(gpu->driver_version(), "simulated");
    EXPECT_EQ(gpu->mig_mode(), "unsupported");
    EXPECT_TRUE(gpu->uuid().starts_with("SIM-")) << gpu->uuid();
    EXPECT_EQ(gpu->uuid().size(), 4u + 16u) << gpu->uuid();
    EXPECT_EQ(gpu->query_errors_size(), 0);
  }
}

struct InvalidCase {
  std::string spec;
  std::string expected_in_message;
};

TEST(ParseSimulatedGpuTest, InvalidSpecs) {
  const InvalidCase cases[] = {
      {"", "three parts"},
      {"RTX 4090", "three parts"},
      {"RTX 4090:24GiB", "three parts"},
      {"RTX:4090:24GiB:8.9", "three parts"},
      {":24GiB:8.9", "model is empty"},
      {"   :24GiB:8.9", "model is empty"},
      {"RTX 4090::8.9", "needs a unit"},
      {"RTX 4090:24:8.9", "needs a unit"},
      {"RTX 4090:24GB:8.9", "needs a unit"},
      {"RTX 4090:GiB:8.9", "expected a number"},
      {"RTX 4090:-24GiB:8.9", "expected a number"},
      {"RTX 4090:2.GiB:8.9", "expected a number"},
      {"RTX 4090:0GiB:8.9", "more than zero"},
      {"RTX 4090:99999999999TiB:8.9", "too large"},
      {"RTX 4090:24GiB:", "compute capability"},
      {"RTX 4090:24GiB:8", "compute capability"},
      {"RTX 4090:24GiB:8.", "compute capability"},
      {"RTX 4090:24GiB:8.10", "compute capability"},
      {"RTX 4090:24GiB:0.9", "compute capability"},
      {"RTX 4090:24GiB:x.y", "compute capability"},
  };
  for (const InvalidCase& c : cases) {
    SCOPED_TRACE(c.spec);
    Result<v1::GpuDevice> gpu = ParseSimulatedGpu(c.spec, 0);
    ASSERT_FALSE(gpu.ok());
    EXPECT_EQ(gpu.status().code(), Code::kInvalidArgument);
    EXPECT_NE(gpu.status().message().find(c.expected_in_message), std::string::npos) << gpu.status().message();
    EXPECT_NE(gpu.status().message().find("MODEL:MEMORY:CC"), std::string::npos) << gpu.status().message();
  }
}

TEST(ParseSimulatedGpuTest, UuidIsStableAndDistinguishesIndexAndSpec) {
  std::string a0 = ParseSimulatedGpu("RTX 4090:24GiB:8.9", 0)->uuid();
  EXPECT_EQ(ParseSimulatedGpu("RTX 4090:24GiB:8.9", 0)->uuid(), a0);
  // The same device written another way is the same device.
  EXPECT_EQ(ParseSimulatedGpu("RTX 4090:24G:8.9", 0)->uuid(), a0);
  EXPECT_NE(ParseSimulatedGpu("RTX 4090:24GiB:8.9", 1)->uuid(), a0);
  EXPECT_NE(ParseSimulatedGpu("RTX 4080:24GiB:8.9", 0)->uuid(), a0);
  // Pinned so that a change of hash, which would rename every simulated
  // device a coordinator knows, cannot pass unnoticed.
  EXPECT_EQ(a0, "SIM-502d5077411eeb5c");
}

TEST(SimulatedGpusTest, IndexesInOrderAndFailsOnFirstBadSpec) {
  Result<v1::GpuDiscovery> gpus = SimulatedGpus({"A:1GiB:8.0", "B:2GiB:9.0"});
  ASSERT_TRUE(gpus.ok());
  EXPECT_TRUE(gpus->available());
  ASSERT_EQ(gpus->devices_size(), 2);
  EXPECT_EQ(gpus->devices(0).index(), 0u);
  EXPECT_EQ(gpus->devices(1).name(), "B");
  EXPECT_EQ(gpus->devices(1).index(), 1u);

  Result<v1::GpuDiscovery> none = SimulatedGpus({});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->available());
  EXPECT_EQ(none->reason(), "no device");

  // After a host's real devices, simulated ones are numbered on from them.
  Result<v1::GpuDiscovery> after = SimulatedGpus({"A:1GiB:8.0"}, 2);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->devices(0).index(), 2u);
  auto same = ParseSimulatedGpu("A:1GiB:8.0", 2);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(after->devices(0).uuid(), same->uuid());

  Result<v1::GpuDiscovery> bad = SimulatedGpus({"A:1GiB:8.0", "B:2:9.0"});
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("\"B:2:9.0\""), std::string::npos);
}

}  // namespace
}  // namespace idlegrid::discovery
