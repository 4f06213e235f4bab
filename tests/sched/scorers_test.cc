// The pipeline's scorers, each as a table over small nodes, and the device
// choice they rely on.
#include <gtest/gtest.h>

#include <functional>

#include "sched/feasibility.h"
#include "sched/scorers.h"
#include "sched_fixtures.h"

namespace idlegrid::sched {
namespace {

using testing::kGiB;
using testing::PNode;
using testing::PTask;

DeviceMask FreeDevicesForTest(const NodeState& node, const Demand& d) {
  DeviceMask eligible = 0;
  if (!StaticFeasible(node, d, &eligible, nullptr)) return 0;
  return FreeDevices(node, d, eligible);
}

struct ScorerCase {
  const char* name;
  std::function<void(std::vector<NodeView>&, TaskView&, SchedulingPolicy&)> setup;
  ScorerFn scorer;
  double want;  // the score of the first node (by id) in the snapshot
};

TEST(ScorersTest, Table) {
  const ScorerCase kCases[] = {
      {"price: cheapest of two asks",
       [](auto& n, auto&, auto&) {
         n[0].asks["NVIDIA A100"] = 1;
         n[1].asks["NVIDIA A100"] = 4;
       },
       ScorePrice, 0.75},
      {"price: dearest scores 0",
       [](auto& n, auto&, auto&) {
         n[0].asks["NVIDIA A100"] = 4;
         n[1].asks["NVIDIA A100"] = 1;
       },
       ScorePrice, 0.0},
      {"price: nobody asks anything", [](auto&, auto&, auto&) {}, ScorePrice, 1.0},
      {"price: CPU task by core ask",
       [](auto& n, auto& t, auto&) {
         t.resources.set_gpus(0);
         n[0].asks["cpu-core"] = 0.05;
         n[1].asks["cpu-core"] = 0.1;
       },
       ScorePrice, 0.5},
      {"cache: image cached",
       [](auto& n, auto& t, auto&) {
         t.image = "sha256:x";
         n[0].cached_images = {"sha256:x"};
       },
       ScoreCache, 1.0},
      {"cache: image elsewhere",
       [](auto& n, auto& t, auto&) {
         t.image = "sha256:x";
         n[1].cached_images = {"sha256:x"};
       },
       ScoreCache, 0.0},
      {"cache: image and one of two inputs held",
       [](auto& n, auto& t, auto&) {
         t.image = "sha256:x";
         t.inputs = {"sha256:in1", "sha256:in2"};
         n[0].cached_images = {"sha256:x"};
         n[0].cached_inputs = {"sha256:in1"};
       },
       ScoreCache, 0.75},
      {"cache: the image's base layer held under another image",
       [](auto& n, auto& t, auto&) {
         t.image = "sha256:x";
         t.image_layers = std::make_shared<const std::vector<ImageLayer>>(
             std::vector<ImageLayer>{{"sha256:base", 750}, {"sha256:script", 250}});
         n[0].cached_images = {"sha256:previous"};
         n[0].cached_layers = std::make_shared<const std::set<std::string>>(std::set<std::string>{"sha256:base"});
       },
       ScoreCache, 0.75},
      {"cache: every input held, image not",
       [](auto& n, auto& t, auto&) {
         t.image = "sha256:x";
         t.inputs = {"sha256:in1"};
         n[0].cached_inputs = {"sha256:in1", "sha256:other"};
       },
       ScoreCache, 0.5},
      {"cache: inputs held elsewhere",
       [](auto& n, auto& t, auto&) {
         t.inputs = {"sha256:in1"};
         n[1].cached_inputs = {"sha256:in1"};
       },
       ScoreCache, 0.0},
      {"reliability", [](auto& n, auto&, auto&) { n[0].reliability = 0.8; }, ScoreReliability, 0.8},
      {"reliability clamped", [](auto& n, auto&, auto&) { n[0].reliability = 3; }, ScoreReliability, 1.0},
      {"packing: pack likes a node that fills up",
       [](auto& n, auto&, auto& p) {
         p.packing = Packing::kPack;
         n[0].gpu_free_milli = {0, 1000};  // 2 GPUs, one taken: full after
       },
       ScorePacking, 1.0},
      {"packing: spread likes an empty node",
       [](auto& n, auto&, auto& p) {
         p.packing = Packing::kSpread;
         n[0].gpu_free_milli = {1000, 1000};
       },
       ScorePacking, 0.5},
      {"packing: CPU task by cores",
       [](auto& n, auto& t, auto& p) {
         p.packing = Packing::kPack;
         t.resources.set_gpus(0);
         t.resources.set_cpu(4);
         n[0].cpu_free = 12;  // of 16: 16 - (12 - 4) = 8 used after
       },
       ScorePacking, 0.5},
      {"energy: node headroom", [](auto& n, auto&, auto&) { n[0].energy_headroom = 0.7; }, ScoreEnergy, 0.7},
      {"energy: from the chosen device's power",
       [](auto& n, auto&, auto&) {
         for (auto& g : n[0].gpus) {
           g.set_power_limit_mw(200000);
           g.set_power_draw_mw(50000);
         }
       },
       ScoreEnergy, 0.75},
      {"energy: unknown", [](auto&, auto&, auto&) {}, ScoreEnergy, 0.5},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    std::vector<NodeView> nodes = {PNode("a", 2), PNode("b", 2)};
    TaskView task = PTask();
    SchedulingPolicy policy{"test", {}, Packing::kSpread, false};
    c.setup(nodes, task, policy);
    Snapshot snap = BuildSnapshot(nodes, 0);
    Demand d = MakeDemand(task, policy, snap);
    const NodeState& node = snap.nodes[0];
    DeviceChoice choice = ChooseDevices(node, d, FreeDevicesForTest(node, d), {});
    EXPECT_NEAR(c.scorer({snap, node, d, choice}), c.want, 1e-9);
  }
}

// FGD: a share goes where it fills a partly used device rather than break a
// whole one, because the workload still needs whole GPUs.
TEST(ScorersTest, FragmentationPrefersThePartlyUsedDevice) {
  NodeView n = PNode("a", 2);
  n.gpu_free_milli = {1000, 500};
  std::vector<TaskView> mix;
  for (int i = 0; i < 4; ++i) mix.push_back(PTask("whole", i));
  TaskView half = PTask("half");
  half.gpu_milli = 500;
  mix.push_back(half);
  const Workload workload = BuildWorkload(mix);
  ASSERT_EQ(workload.size(), 2u);
  EXPECT_DOUBLE_EQ(workload[0].weight, 0.8);
  SchedulingPolicy policy{"test", {{kScoreFragmentation, 1}}, Packing::kPack, false};
  Snapshot snap = BuildSnapshot({n}, 0);
  Demand d = MakeDemand(half, policy, snap);
  const NodeState& node = snap.nodes[0];
  DeviceChoice choice = ChooseDevices(node, d, FreeDevicesForTest(node, d), workload);
  EXPECT_EQ(choice.devices, DeviceMask{2});  // device 1
  // Before: whole tasks cannot use the 500 left on device 1 (0.8 x 500 = 400
  // milli fragmented); after, nothing is left on it.
  EXPECT_NEAR(choice.fragmentation, -0.4, 1e-9);
  EXPECT_NEAR(ScoreFragmentation({snap, node, d, choice}), 0.4, 1e-9);
}

TEST(ScorersTest, FragmentationOfANodeThatCannotHostAClass) {
  NodeView n = PNode("a", 1);
  n.gpu_free_milli = {300};
  const Workload workload = {{1, 1000, 0, 0, 1.0}};
  Snapshot snap = BuildSnapshot({n}, 0);
  const uint32_t none[kMaxDevicesPerNode] = {};
  EXPECT_DOUBLE_EQ(NodeFragmentation(snap.nodes[0], workload, none, 0, 0), 300);
  // A class that fits has nothing fragmented on a device it can use.
  const Workload small = {{1, 200, 0, 0, 1.0}};
  EXPECT_DOUBLE_EQ(NodeFragmentation(snap.nodes[0], small, none, 0, 0), 0);
  // ...unless the host's cores are gone.
  EXPECT_DOUBLE_EQ(NodeFragmentation(snap.nodes[0], {{1, 200, 32, 0, 1.0}}, none, 0, 0), 300);
}

TEST(ScorersTest, WholeDevicesTightestVramFirstAndCheapestFirst) {
  NodeView n = PNode("a", 0);
  n.gpus.push_back(testing::Gpu("big", "NVIDIA A100", 80 * kGiB));
  n.gpus.push_back(testing::Gpu("small", "NVIDIA A100", 24 * kGiB));
  n.gpus.push_back(testing::Gpu("cheap", "NVIDIA T4", 16 * kGiB));
  n.asks["NVIDIA A100"] = 2;
  n.asks["NVIDIA T4"] = 1;
  SchedulingPolicy policy{"test", {}, Packing::kPack, false};
  TaskView task = PTask();
  task.resources.set_gpu_memory_bytes(20 * kGiB);
  Snapshot snap = BuildSnapshot({n}, 0);
  Demand d = MakeDemand(task, policy, snap);
  DeviceChoice choice = ChooseDevices(snap.nodes[0], d, FreeDevicesForTest(snap.nodes[0], d), {});
  EXPECT_EQ(choice.devices, DeviceMask{2});  // "small": T4 lacks VRAM, 24 GiB fits tighter than 80
  EXPECT_DOUBLE_EQ(choice.price_per_hour, 2);
  task.resources.set_gpu_memory_bytes(8 * kGiB);
  d = MakeDemand(task, policy, snap);
  choice = ChooseDevices(snap.nodes[0], d, FreeDevicesForTest(snap.nodes[0], d), {});
  EXPECT_EQ(choice.devices, DeviceMask{4});  // the cheap T4
  EXPECT_DOUBLE_EQ(choice.price_per_hour, 1);
}

}  // namespace
}  // namespace idlegrid::sched
