// Layer locality (sched/layer_locality.h, scorers.h): a node whose cached
// images hold most of a task's image bytes (the base it was built FROM)
// ranks above a node holding none, below one holding the image itself, and
// explanations say how much it holds.
#include "sched/layer_locality.h"

#include <gtest/gtest.h>

#include <map>

#include "sched/pipeline.h"
#include "sched/scorers.h"
#include "sched_fixtures.h"

namespace idlegrid::sched {
namespace {

using testing::PNode;
using testing::PTask;

// v1 and v2 of a researcher's image share a 990-byte base; each has its own
// 10-byte script layer. "other" shares nothing; "archive" has no layers.
class LayerLocalityTest : public ::testing::Test {
 protected:
  std::shared_ptr<const std::vector<ImageLayer>> Resolve(const std::string& image) {
    ++resolved_[image];
    static const std::map<std::string, std::vector<ImageLayer>> kImages = {
        {"sha256:v1", {{"sha256:base", 990}, {"sha256:script1", 10}}},
        {"sha256:v2", {{"sha256:base", 990}, {"sha256:script2", 10}}},
        {"sha256:other", {{"sha256:cuda", 5000}}},
    };
    auto it = kImages.find(image);
    if (it == kImages.end()) return nullptr;
    return std::make_shared<const std::vector<ImageLayer>>(it->second);
  }
  LayerResolver resolver() {
    return [this](const std::string& image) { return Resolve(image); };
  }
  std::map<std::string, int> resolved_;
};

TEST_F(LayerLocalityTest, NodesGetTheLayersOfTheirImagesThatSomeTaskWantsEachImageResolvedOnce) {
  std::vector<NodeView> nodes = {PNode("has-v1"), PNode("also-v1"), PNode("other"), PNode("cold"), PNode("archive")};
  nodes[0].cached_images = {"sha256:v1", "sha256:archive"};
  nodes[1].cached_images = {"sha256:v1", "sha256:archive"};
  nodes[2].cached_images = {"sha256:other"};
  nodes[4].cached_images = {"sha256:archive"};
  std::vector<TaskView> tasks = {PTask("j", 0), PTask("j", 1)};
  tasks[0].image = tasks[1].image = "sha256:v2";
  AttachImageLayers(nodes, {&tasks[0], &tasks[1]}, resolver());

  ASSERT_NE(tasks[0].image_layers, nullptr);
  EXPECT_EQ(tasks[0].image_layers, tasks[1].image_layers) << "one resolution per image";
  ASSERT_NE(nodes[0].cached_layers, nullptr);
  EXPECT_EQ(*nodes[0].cached_layers, (std::set<std::string>{"sha256:base"})) << "only layers some task wants";
  EXPECT_EQ(nodes[0].cached_layers, nodes[1].cached_layers) << "nodes holding the same images share one set";
  EXPECT_EQ(nodes[2].cached_layers, nullptr) << "nothing in common";
  EXPECT_EQ(nodes[3].cached_layers, nullptr);
  EXPECT_EQ(nodes[4].cached_layers, nullptr) << "an archive image has no layers";
  for (const auto& [image, times] : resolved_) EXPECT_EQ(times, 1) << image;
}

TEST_F(LayerLocalityTest, NothingIsAttachedWhenNoTaskImageHasLayers) {
  std::vector<NodeView> nodes = {PNode("has-v1")};
  nodes[0].cached_images = {"sha256:v1"};
  std::vector<TaskView> tasks = {PTask()};
  tasks[0].image = "sha256:archive";
  AttachImageLayers(nodes, {&tasks[0]}, resolver());
  EXPECT_EQ(tasks[0].image_layers, nullptr);
  EXPECT_EQ(nodes[0].cached_layers, nullptr);
  EXPECT_EQ(resolved_.count("sha256:v1"), 0u) << "nodes' images are not resolved for nothing";
}

TEST_F(LayerLocalityTest, TheNodeHoldingTheBaseIsChosenOverAColdOneAndTheExplanationSaysHowMuch) {
  std::vector<NodeView> nodes = {PNode("a-cold"), PNode("b-base")};
  nodes[1].cached_images = {"sha256:v1"};
  std::vector<TaskView> tasks = {PTask()};
  tasks[0].image = "sha256:v2";
  AttachImageLayers(nodes, {&tasks[0]}, resolver());
  EXPECT_EQ(DescribeLocality(nodes[0], tasks[0]), "lacks image");
  EXPECT_EQ(DescribeLocality(nodes[1], tasks[0]), "holds 99% of the image's layers");

  Plan plan = NewPipelineScheduler()->Schedule(nodes, tasks);
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].node_id, "b-base");

  // The image itself still ranks above its base.
  std::vector<NodeView> three = {nodes[0], nodes[1], PNode("c-image")};
  three[2].cached_images = {"sha256:v2"};
  AttachImageLayers(three, {&tasks[0]}, resolver());
  Explanation e = Explain(three, tasks[0], PolicyConfig{}, 5);
  ASSERT_EQ(e.top.size(), 3u);
  EXPECT_EQ(e.top[0].node_id, "c-image");
  EXPECT_EQ(e.top[0].locality, "holds image");
  EXPECT_EQ(e.top[1].node_id, "b-base");
  EXPECT_EQ(e.top[2].node_id, "a-cold");
  EXPECT_GT(e.top[0].total, e.top[1].total);
  EXPECT_GT(e.top[1].total, e.top[2].total);
}

}  // namespace
}  // namespace idlegrid::sched
