// The node table's small pure helpers (coordinator/node_views.h).
#include "coordinator/node_views.h"

#include <gtest/gtest.h>

namespace idlegrid::coordinator {
namespace {

TEST(NodeViewsTest, AMeasurementsStackNamesTheAgentAndEachRealGpusDriver) {
  v1::Advertisement ad;
  ad.set_agent_version("0.9.1");
  EXPECT_EQ(StackOf(ad), "0.9.1");
  auto* real = ad.mutable_inventory()->mutable_gpus()->add_devices();
  real->set_uuid("GPU-1");
  real->set_driver_version("550.54");
  auto* fake = ad.mutable_inventory()->mutable_gpus()->add_devices();
  fake->set_uuid("SIM-0");
  fake->set_driver_version("1");
  fake->set_simulated(true);
  EXPECT_EQ(StackOf(ad), "0.9.1|GPU-1@550.54") << "a simulated device is never measured";
  real->set_driver_version("555.42");
  EXPECT_NE(StackOf(ad), "0.9.1|GPU-1@550.54") << "a new driver is measured again";
}

TEST(NodeViewsTest, ActiveAttemptsAreGroupedByTheirNodeInOrder) {
  std::vector<store::ActiveAttempt> active(3);
  active[0].attempt_id = "a";
  active[0].node_id = "n2";
  active[1].attempt_id = "b";
  active[1].node_id = "n1";
  active[2].attempt_id = "c";
  active[2].node_id = "n2";
  const auto by_node = GroupByNode(active);
  ASSERT_EQ(by_node.size(), 2u);
  ASSERT_EQ(by_node.at("n2").size(), 2u);
  EXPECT_EQ(by_node.at("n2")[0].attempt_id, "a");
  EXPECT_EQ(by_node.at("n2")[1].attempt_id, "c");
  EXPECT_EQ(by_node.at("n1")[0].attempt_id, "b");
  EXPECT_TRUE(GroupByNode({}).empty());
}

}  // namespace
}  // namespace idlegrid::coordinator
