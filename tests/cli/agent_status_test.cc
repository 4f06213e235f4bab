// `idlegrid agent status` and `nodes` formatting (cli/agent_status.h) on plain data.
#include <gtest/gtest.h>

#include "cli/agent_status.h"

namespace idlegrid::cli {
namespace {

TEST(FormatNodePause, AnOwnersCommandSaysWhenItEnds) {
  v1::NodePause p;
  p.set_paused(true);
  p.set_pauses(1);
  p.set_cause("owner-command");
  p.set_reason("the owner ran idlegrid agent pause --for 2h");
  p.set_since_ms(1'000'000);
  p.set_until_ms(1'000'000 + 7'200'000);
  EXPECT_EQ(FormatNodePause(p, 1'060'000),
            "owner-command since 60s ago: the owner ran idlegrid agent pause --for 2h; ends by itself in 119m "
            "(1 pause(s), 0 s in all)");
  EXPECT_NE(FormatNodePause(p, 8'190'000).find("ends by itself in 10s"), std::string::npos);
  p.set_until_ms(0);
  EXPECT_NE(FormatNodePause(p, 1'060'000).find("; until `idlegrid agent resume`"), std::string::npos);
}

TEST(FormatHandshake, EveryPartAndOwnerPausesOnlyWhenThereWereSome) {
  v1::ReliabilityComponents c;
  c.set_heartbeat_jitter_ms(41.6);
  c.set_heartbeat_lateness(0.02);
  c.set_heartbeat_loss(0.1);
  c.set_rtt_ms(3.2);
  c.set_stalls(1);
  c.set_throttle_reports(2);
  EXPECT_EQ(FormatHandshake(c),
            "heartbeat jitter 42 ms, 2% late, 10% lost; round trip 3 ms; 1 stall(s); 2 throttle report(s)");
  c.set_owner_pauses(3);
  c.set_owner_paused_ms(65'400);
  EXPECT_EQ(FormatHandshake(c),
            "heartbeat jitter 42 ms, 2% late, 10% lost; round trip 3 ms; 1 stall(s); 2 throttle report(s); owner "
            "pauses 3 (65 s, not held against it)");
}

TEST(FormatAgentStatus, ShowsThisNodesEarningsAndEstimate) {
  v1::Node node;
  node.set_id("n-1");
  node.set_name("rig");
  node.set_state("online");
  node.set_schedulable(true);
  v1::ProviderEarningsResponse earnings;
  auto* other = earnings.add_nodes();
  other->set_node_id("n-2");
  other->set_attempts(99);
  auto* mine = earnings.add_nodes();
  mine->set_node_id("n-1");
  mine->set_attempts(4);
  mine->set_metered_credits(1.25);
  mine->set_estimate_per_hour(0.43);
  mine->set_estimate_basis("fully used, at its asks: 8 x cpu-core at 0.0100/h");
  AgentStatusView v;
  v.node_id = "n-1";
  v.node = &node;
  v.balance_error = "no ledger";
  v.earnings = &earnings;
  const std::string text = FormatAgentStatus(v);
  EXPECT_NE(text.find("this node    4 accepted attempt(s) worth 1.2500 credits at their placement prices"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("estimate     0.4300 credits/hour if fully used; fully used, at its asks: 8 x cpu-core"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("99 accepted"), std::string::npos) << "another node's figures are not this node's";
  EXPECT_NE(text.find("handshake    heartbeat jitter 0 ms"), std::string::npos) << text;
}

v1::Advertisement AdvertisementWith(const std::vector<std::string>& gpus,
                                    const std::vector<std::pair<std::string, double>>& asks) {
  v1::Advertisement ad;
  for (size_t i = 0; i < gpus.size(); ++i) {
    auto* d = ad.mutable_inventory()->mutable_gpus()->add_devices();
    d->set_index(static_cast<uint32_t>(i));
    d->set_name(gpus[i]);
  }
  for (const auto& [device_class, price] : asks) {
    auto* a = ad.add_asks();
    a->set_device_class(device_class);
    a->set_per_hour(price);
  }
  return ad;
}

TEST(FormatAsks, SaysWhichGpuEachAskPricesAndWarnsOfAsksThatPriceNothing) {
  EXPECT_EQ(FormatAsks(AdvertisementWith({"NVIDIA GeForce RTX 4090"}, {})), "");
  EXPECT_EQ(FormatAsks(AdvertisementWith({"NVIDIA GeForce RTX 4090"}, {{"RTX 4090", 0.35}, {"A6000", 0.5}})),
            "\"RTX 4090\" 0.35/h matches GPU 0 (NVIDIA GeForce RTX 4090); warning: \"A6000\" matches no GPU on "
            "this node");
  EXPECT_EQ(FormatAsks(AdvertisementWith({}, {{"RTX 4090", 0.35}})),
            "warning: \"RTX 4090\" matches no GPU on this node");
  EXPECT_EQ(FormatAsks(AdvertisementWith({"NVIDIA A100-SXM4-80GB", "NVIDIA A100-PCIE-40GB"},
                                         {{"A100", 1}, {"A100 80GB", 2}, {"cpu-core", 0.01}})),
            "\"A100\" 1.00/h matches GPU 1 (NVIDIA A100-PCIE-40GB), not GPU 0 priced by \"A100 80GB\"; "
            "\"A100 80GB\" 2.00/h matches GPU 0 (NVIDIA A100-SXM4-80GB); cpu-core 0.01/core-h");
}

TEST(FormatAgentStatus, ShowsTheAsksLine) {
  v1::Node node;
  node.set_id("n-1");
  node.set_state("online");
  *node.mutable_advertisement() = AdvertisementWith({"NVIDIA GeForce RTX 4090"}, {{"A6000", 0.5}});
  AgentStatusView v;
  v.node_id = "n-1";
  v.node = &node;
  const std::string text = FormatAgentStatus(v);
  EXPECT_NE(text.find("\nasks         warning: \"A6000\" matches no GPU on this node\n"), std::string::npos) << text;
}

}  // namespace
TEST(FormatImageCache, CountsBytesAndBudgetAndTheStatusShowsIt) {
  EXPECT_EQ(FormatImageCache(2, 5, 3ull << 30, 20ull << 30),
            "2 image(s), 5 blob(s), 3 GiB of a 20 GiB budget (policy.yaml imageCache)");
  AgentStatusView v;
  v.node_id = "n-1";
  v.node_error = "not read";
  v.image_cache = FormatImageCache(0, 0, 0, 1ull << 30);
  EXPECT_NE(FormatAgentStatus(v).find("images       0 image(s), 0 blob(s), 0 GiB of a 1 GiB budget"), std::string::npos)
      << FormatAgentStatus(v);
  v.image_cache.clear();
  EXPECT_EQ(FormatAgentStatus(v).find("images "), std::string::npos) << "no line when not given";
}

}  // namespace idlegrid::cli
