// Placement and market fields of a manifest: policy, constraints, bids, cost
// cap, GPU shares.
#include <gtest/gtest.h>

#include "manifest/manifest.h"

namespace idlegrid::manifest {
namespace {

const std::string kBase = "apiVersion: idlegrid/v1\nname: p\nimage: sim@sha256:" + std::string(64, 'a') + "\n";

TEST(PlacementManifest, EveryFieldIsParsed) {
  auto spec = ParseManifest(kBase +
                                "policy: cheapest\n"
                                "maxPricePerGpuHour: 1.5\n"
                                "maxPricePerCpuCoreHour: 0.02\n"
                                "maxCost: 12\n"
                                "resources: {gpus: 1, gpuMilli: 250}\n"
                                "constraints:\n"
                                "  gpuModels: [\"RTX 4090\", A10]\n"
                                "  regions: [eu-west]\n"
                                "  minComputeCapability: \"8.0\"\n"
                                "  minCudaVersion: \"12.2\"\n"
                                "  minTrustTier: 1\n",
                            "job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->policy(), "cheapest");
  EXPECT_DOUBLE_EQ(spec->max_price_per_gpu_hour(), 1.5);
  EXPECT_DOUBLE_EQ(spec->max_price_per_cpu_core_hour(), 0.02);
  EXPECT_DOUBLE_EQ(spec->max_cost(), 12);
  EXPECT_EQ(spec->resources().gpu_milli(), 250u);
  ASSERT_EQ(spec->constraints().gpu_models_size(), 2);
  EXPECT_EQ(spec->constraints().gpu_models(0), "RTX 4090");
  EXPECT_EQ(spec->constraints().regions(0), "eu-west");
  EXPECT_EQ(spec->constraints().min_compute_capability(), "8.0");
  EXPECT_EQ(spec->constraints().min_cuda_version(), "12.2");
  EXPECT_EQ(spec->constraints().min_trust_tier(), 1u);
}

TEST(PlacementManifest, DataClassIsParsed) {
  for (const char* name : {"public", "private", "regulated"}) {
    auto spec = ParseManifest(kBase + "dataClass: " + name + "\n", "job.yaml");
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    EXPECT_EQ(spec->data_class(), name);
  }
  // None named: the coordinator's data policy chooses (public unless it says otherwise).
  auto spec = ParseManifest(kBase, "job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->data_class(), "");
}

TEST(PlacementManifest, ErrorsNameTheFieldAndLine) {
  struct Case {
    std::string extra, expect;
  } cases[] = {
      {"maxPricePerGpuHour: -1\n", "job.yaml:4:21: maxPricePerGpuHour: expected a price"},
      {"maxCost: cheap\n", "maxCost: expected a price"},
      {"resources: {gpuMilli: 1000}\n", "resources.gpuMilli: must be between 1 and 999"},
      {"resources: {gpus: 2, gpuMilli: 500}\n", "is a share of one GPU, but gpus is 2"},
      {"exclusiveGpu: true\nresources: {gpuMilli: 500}\n", "exclusiveGpu: contradicts"},
      {"constraints: {gpuModel: A10}\n", "unknown field \"gpuModel\" in constraints"},
      {"dataClass: secret\n", "job.yaml:4:12: dataClass: must be public, private or regulated, got \"secret\""},
      {"dataClass: [private]\n", "job.yaml:4:12: dataClass: expected a string"},
      {"dataclass: private\n", "job.yaml:4:1: unknown field \"dataclass\""},
  };
  for (const auto& c : cases) {
    auto spec = ParseManifest(kBase + c.extra, "job.yaml");
    ASSERT_FALSE(spec.ok()) << c.extra;
    EXPECT_NE(spec.status().message().find(c.expect), std::string::npos)
        << c.extra << " -> " << spec.status().message();
  }
}

}  // namespace
}  // namespace idlegrid::manifest
