// Input locality (BOINC's locality scheduling): a node whose input cache
// holds a task's inputs ranks above one that would fetch them, and
// explanations say what each candidate holds.
#include <gtest/gtest.h>

#include "sched/pipeline.h"
#include "sched/scorers.h"
#include "sched_fixtures.h"

namespace idlegrid::sched {
namespace {

using testing::PNode;
using testing::PTask;

TEST(LocalityTest, DescribesTheImageAndTheShareOfInputsHeld) {
  NodeView node = PNode("n");
  TaskView task = PTask();
  task.image = "sha256:img";
  EXPECT_EQ(DescribeLocality(node, task), "lacks image");
  node.cached_images = {"sha256:img"};
  EXPECT_EQ(DescribeLocality(node, task), "holds image");
  task.inputs = {"sha256:a", "sha256:b"};
  node.cached_inputs = {"sha256:b", "sha256:c"};
  EXPECT_EQ(DescribeLocality(node, task), "holds image, 1/2 inputs");
}

TEST(LocalityTest, TheNodeHoldingTheShardIsChosenAndTheExplanationSaysWhy) {
  NodeView cold = PNode("a-cold");
  NodeView warm = PNode("b-warm");
  cold.cached_images = warm.cached_images = {"sha256:img"};
  warm.cached_inputs = {"sha256:shard"};
  TaskView task = PTask();
  task.image = "sha256:img";
  task.inputs = {"sha256:shard"};
  Plan plan = NewPipelineScheduler()->Schedule({cold, warm}, {task});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].node_id, "b-warm");

  Explanation e = Explain({cold, warm}, task, PolicyConfig{}, 5);
  ASSERT_EQ(e.top.size(), 2u);
  EXPECT_EQ(e.top[0].node_id, "b-warm");
  EXPECT_EQ(e.top[0].locality, "holds image, 1/1 inputs");
  EXPECT_EQ(e.top[1].locality, "holds image, 0/1 inputs");
  const std::string text = FormatExplanation(e);
  EXPECT_NE(text.find("      locality: holds image, 1/1 inputs\n"), std::string::npos) << text;

  // Without inputs, the two are alike to the cache scorer.
  task.inputs.clear();
  Explanation same = Explain({cold, warm}, task, PolicyConfig{}, 5);
  ASSERT_EQ(same.top.size(), 2u);
  EXPECT_EQ(same.top[0].locality, "holds image");
  EXPECT_DOUBLE_EQ(same.top[0].total, same.top[1].total);
}

}  // namespace
}  // namespace idlegrid::sched
