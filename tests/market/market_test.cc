// The spot market: pricing rules and the order book (pure), and the market as
// the scheduler applies it: the cheapest satisfying offer wins, a bid below
// every ask waits and says so, a cost cap stops a job.
#include <gtest/gtest.h>

#include "market/market.h"
#include "sched/pipeline.h"
#include "../sched/sched_fixtures.h"

namespace idlegrid::market {
namespace {

using sched::testing::kGiB;
using sched::testing::PNode;
using sched::testing::PTask;

TEST(MarketRulesTest, AsksBidsAndCosts) {
  Asks asks = {{"A100", 2.5}, {"T4", -1}, {kCpuCoreClass, 0.1}};
  EXPECT_DOUBLE_EQ(AskFor(asks, "A100"), 2.5);
  EXPECT_DOUBLE_EQ(AskFor(asks, "T4"), 0);  // nonsense asks count as free
  EXPECT_DOUBLE_EQ(AskFor(asks, "H100"), 0);
  const std::vector<double> two = {2.5, 2.5}, one = {2.0};
  EXPECT_DOUBLE_EQ(HourlyPrice(two, 1.0, 4, 0.1), 5.4);
  EXPECT_DOUBLE_EQ(HourlyPrice(one, 0.25, 0, 0.1), 0.5);

  Bid bid;
  EXPECT_EQ(GpuBidShortfall(100, bid), "");  // no bid: no limit
  bid.max_price_per_gpu_hour = 1.5;
  EXPECT_EQ(GpuBidShortfall(1.5, bid), "");
  EXPECT_EQ(GpuBidShortfall(2.1, bid), "over max price (ask 2.10/GPU-h, bid 1.50)");

  bid.max_cost = 10;
  EXPECT_EQ(CostCapExceeded(2, bid), "maxCost needs a run timeout (price 2.00/h)");
  EXPECT_EQ(CostCapExceeded(0, bid), "");  // free is always within a cap
  bid.run_hours = 6;
  EXPECT_EQ(CostCapExceeded(2, bid), "estimated cost 12.00 (2.00/h x 6.0 h) exceeds maxCost 10.00");
  bid.run_hours = 5;
  EXPECT_EQ(CostCapExceeded(2, bid), "");
}

TEST(MarketRulesTest, OrderBookSummarisesEachClass) {
  std::vector<Offer> offers = {
      {"n1", "A100", 4, 2.0}, {"n2", "A100", 1, 1.0},       {"n3", "A100", 2, 3.0},
      {"n4", "T4", 0, 0.1},   {"n5", "cpu-core", 16, 0.02},
  };
  std::vector<OrderBookRow> rows = OrderBook(offers);
  ASSERT_EQ(rows.size(), 2u);  // T4 has nothing free
  EXPECT_EQ(rows[0].device_class, "A100");
  EXPECT_EQ(rows[0].providers, 3u);
  EXPECT_DOUBLE_EQ(rows[0].free_units, 7);
  EXPECT_DOUBLE_EQ(rows[0].min_ask, 1.0);
  EXPECT_DOUBLE_EQ(rows[0].median_ask, 2.0);  // units sorted by ask: 1, 2,2,2,2, 3,3
  EXPECT_DOUBLE_EQ(rows[0].max_ask, 3.0);
  EXPECT_EQ(rows[1].device_class, "cpu-core");
  std::reverse(offers.begin(), offers.end());
  EXPECT_EQ(FormatOrderBook(OrderBook(offers)), FormatOrderBook(rows));
  EXPECT_NE(FormatOrderBook(rows).find("A100"), std::string::npos);
}

TEST(MarketRulesTest, OffersFromNodes) {
  auto a = PNode("a", 2, "A100");
  a.asks["A100"] = 2;
  a.gpu_free_milli = {1000, 300};
  auto off = PNode("off", 4, "A100");
  off.online = false;
  std::vector<OrderBookRow> rows = OrderBook(sched::MarketOffers({a, off}));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].device_class, "A100");
  EXPECT_DOUBLE_EQ(rows[0].free_units, 1);  // a partly used device is not a free one
  EXPECT_DOUBLE_EQ(rows[0].min_ask, 2);
}

TEST(MarketRulesTest, NormalizeGpuModel) {
  EXPECT_EQ(NormalizeGpuModel("NVIDIA GeForce RTX 4090"), "RTX 4090");
  EXPECT_EQ(NormalizeGpuModel("  rtx\t 4090 "), "RTX 4090");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA A100-SXM4-80GB"), "A100 SXM4 80GB");
  EXPECT_EQ(NormalizeGpuModel("Tesla T4"), "T4");
  EXPECT_EQ(NormalizeGpuModel("Quadro RTX 6000"), "RTX 6000");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA TITAN RTX"), "TITAN RTX");
  EXPECT_EQ(NormalizeGpuModel("RTX NVIDIA"), "RTX NVIDIA");  // brand words only while they lead
  EXPECT_EQ(NormalizeGpuModel("NVIDIA"), "");
  EXPECT_EQ(NormalizeGpuModel(""), "");
}

// Each row: the owner's asks, a device's NVML name, the ask that applies
// ("" none) and so its price.
TEST(MarketRulesTest, AsksApplyByNormalisedModelName) {
  struct Row {
    Asks asks;
    std::string device;
    std::string applies;
  };
  const Row rows[] = {
      {{{"RTX 4090", 0.35}}, "NVIDIA GeForce RTX 4090", "RTX 4090"},
      {{{"rtx 4090", 0.35}}, "NVIDIA GeForce RTX 4090", "rtx 4090"},
      {{{"GeForce RTX 4090", 0.35}}, "NVIDIA GeForce RTX 4090", "GeForce RTX 4090"},
      {{{"NVIDIA GeForce RTX 4090", 0.35}}, "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090"},
      {{{"RTX 4090", 0.35}}, "NVIDIA GeForce RTX 4090 D", ""},           // another model
      {{{"RTX 4090", 0.35}}, "NVIDIA GeForce RTX 4090 Laptop GPU", ""},  // another chip
      {{{"RTX 4090", 0.35}}, "NVIDIA GeForce RTX 4080", ""},
      {{{"RTX 4090 D", 0.35}}, "NVIDIA GeForce RTX 4090", ""},
      {{{"RTX 4070", 0.2}}, "NVIDIA GeForce RTX 4070 Ti SUPER", ""},
      {{{"A100", 2}}, "NVIDIA A100-SXM4-80GB", "A100"},
      {{{"A100", 2}}, "NVIDIA A100 80GB PCIe", "A100"},
      {{{"A100", 2}}, "NVIDIA A10", ""},
      {{{"A10", 1}}, "NVIDIA A100-SXM4-80GB", ""},
      {{{"A100 80GB", 2}}, "NVIDIA A100-SXM4-80GB", "A100 80GB"},
      {{{"A100 80GB", 2}}, "NVIDIA A100-PCIE-40GB", ""},
      {{{"A100-PCIE", 2}}, "NVIDIA A100 80GB PCIe", "A100-PCIE"},
      {{{"H100", 3}}, "NVIDIA H100 80GB HBM3", "H100"},
      {{{"H100", 3}}, "NVIDIA H100 NVL", ""},  // NVL is a model of its own
      {{{"T4", 0.1}}, "Tesla T4", "T4"},
      {{{"RTX 6000", 1}}, "NVIDIA RTX 6000 Ada Generation", ""},
      {{{"RTX 6000", 1}}, "Quadro RTX 6000", "RTX 6000"},
      {{{"A6000", 1}}, "NVIDIA RTX A6000", ""},      // NVML's model is "RTX A6000"
      {{{"80GB", 1}}, "NVIDIA A100-SXM4-80GB", ""},  // a variant alone names no model
      {{{"NVIDIA", 1}}, "NVIDIA A100-SXM4-80GB", ""},
      {{{"cpu-core", 0.01}}, "NVIDIA GeForce RTX 4090", ""},  // never prices a GPU
      {{{"cpu-core", 0.01}}, "cpu-core", "cpu-core"},
      {{{"CPU-CORE", 0.01}}, "cpu-core", ""},  // cpu-core stays exact
      {{}, "NVIDIA GeForce RTX 4090", ""},
      // An exact key wins over a normalised one, whatever sorts first.
      {{{"A100", 1}, {"NVIDIA A100-SXM4-80GB", 4}}, "NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB"},
      {{{"RTX 4090", 1}, {"rtx 4090", 2}}, "rtx 4090", "rtx 4090"},
      // The ask naming more variants wins; a tie goes to the key sorted first.
      {{{"A100", 1}, {"A100 80GB", 2}}, "NVIDIA A100-SXM4-80GB", "A100 80GB"},
      {{{"A100", 1}, {"A100 80GB", 2}}, "NVIDIA A100-PCIE-40GB", "A100"},
      {{{"A100 SXM4", 3}, {"A100 80GB", 2}}, "NVIDIA A100-SXM4-80GB", "A100 80GB"},
      {{{"A100 80GB", 2}, {"A100 SXM4 80GB", 3}}, "NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.device + " / first ask " + (r.asks.empty() ? "(none)" : r.asks.begin()->first));
    const Asks::value_type* ask = MatchingAsk(r.asks, r.device);
    EXPECT_EQ(ask == nullptr ? "" : ask->first, r.applies);
    EXPECT_DOUBLE_EQ(AskFor(r.asks, r.device), r.applies.empty() ? 0 : r.asks.at(r.applies));
  }
}

TEST(MarketRulesTest, UnmatchedAsksAreThoseThatPriceNoDevice) {
  const Asks asks = {
      {"RTX 4090", 0.35},   {"A6000", 0.5}, {"A100", 1}, {"A100 80GB", 2}, {"NVIDIA GeForce RTX 4080", 0.3},
      {kCpuCoreClass, 0.01}};
  const std::vector<std::string> devices = {"NVIDIA GeForce RTX 4090", "NVIDIA A100-SXM4-80GB"};
  // "A100" applies to the A100 but loses to "A100 80GB": it is not reported.
  EXPECT_EQ(UnmatchedAsks(asks, devices), (Asks{{"A6000", 0.5}, {"NVIDIA GeForce RTX 4080", 0.3}}));
  // A node without GPUs: every GPU ask prices nothing; cpu-core is never reported.
  EXPECT_EQ(UnmatchedAsks(asks, {}).size(), asks.size() - 1);
  EXPECT_TRUE(UnmatchedAsks({{kCpuCoreClass, 0.01}}, {}).empty());
  EXPECT_TRUE(UnmatchedAsks({}, devices).empty());
}

// The scheduler prices a real card's NVML name by the owner's short ask.
TEST(MarketSchedulingTest, ShortAskPricesTheRealDeviceName) {
  auto node = PNode("gamer", 1, "NVIDIA GeForce RTX 4090", 24 * kGiB);
  node.asks["RTX 4090"] = 0.35;
  auto task = PTask();
  task.max_price_per_gpu_hour = 1;
  sched::Plan plan = sched::NewPipelineScheduler()->Schedule({node}, {task});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_DOUBLE_EQ(plan.placements[0].ask_per_gpu_hour, 0.35);
  std::vector<OrderBookRow> rows = OrderBook(sched::MarketOffers({node}));
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0].device_class, "NVIDIA GeForce RTX 4090");
  EXPECT_DOUBLE_EQ(rows[0].min_ask, 0.35);
}

std::vector<sched::NodeView> ThreeOffers() {
  auto dear = PNode("dear", 1, "A100", 80 * kGiB);
  dear.asks["A100"] = 3;
  auto mid = PNode("mid", 1, "A100", 80 * kGiB);
  mid.asks["A100"] = 2;
  auto cheap_small = PNode("cheap-small", 1, "T4", 16 * kGiB);
  cheap_small.asks["T4"] = 0.5;
  return {dear, mid, cheap_small};
}

TEST(MarketSchedulingTest, CheapestSatisfyingOfferWins) {
  auto task = PTask();
  task.resources.set_gpu_memory_bytes(40 * kGiB);  // the T4 cannot take it
  task.max_price_per_gpu_hour = 5;
  task.run_timeout_seconds = 7200;
  sched::Plan plan = sched::NewPipelineScheduler()->Schedule(ThreeOffers(), {task});
  ASSERT_EQ(plan.placements.size(), 1u);
  const sched::Placement& p = plan.placements[0];
  EXPECT_EQ(p.node_id, "mid");
  EXPECT_EQ(p.pricing_rule, kPayAsAsk);
  EXPECT_DOUBLE_EQ(p.ask_per_gpu_hour, 2);
  EXPECT_DOUBLE_EQ(p.bid_per_gpu_hour, 5);
  EXPECT_DOUBLE_EQ(p.price_per_hour, 2);
  EXPECT_DOUBLE_EQ(p.estimated_cost, 4);
  // Without the VRAM need the T4 is the cheapest that satisfies.
  task.resources.set_gpu_memory_bytes(8 * kGiB);
  plan = sched::NewPipelineScheduler()->Schedule(ThreeOffers(), {task});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].node_id, "cheap-small");
}

TEST(MarketSchedulingTest, CheapestPolicyWithoutABid) {
  auto task = PTask();
  task.policy = "cheapest";
  sched::Plan plan = sched::NewPipelineScheduler()->Schedule(ThreeOffers(), {task, PTask("j", 1)});
  ASSERT_EQ(plan.placements.size(), 2u);
  EXPECT_EQ(plan.placements[0].node_id, "cheap-small");
  EXPECT_DOUBLE_EQ(plan.placements[0].bid_per_gpu_hour, 0);
}

TEST(MarketSchedulingTest, EqualAsksAreBrokenByThePolicysOtherScorers) {
  std::vector<sched::NodeView> nodes;
  for (const char* id : {"a", "b", "c"}) {
    auto n = PNode(id, 1, "A100");
    n.asks["A100"] = 1;
    nodes.push_back(n);
  }
  nodes[2].reliability = 0.99;
  auto task = PTask();
  task.max_price_per_gpu_hour = 1;
  sched::Plan plan = sched::NewPipelineScheduler()->Schedule(nodes, {task});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].node_id, "c");
}

TEST(MarketSchedulingTest, BidBelowEveryAskWaitsAndExplainSaysSo) {
  auto task = PTask();
  task.max_price_per_gpu_hour = 0.25;
  sched::Plan plan = sched::NewPipelineScheduler()->Schedule(ThreeOffers(), {task});
  EXPECT_TRUE(plan.placements.empty());
  EXPECT_EQ(plan.waiting["j/0"].summary, "3 nodes: 3 over max price (bid 0.25/GPU-h); waiting");
  sched::Explanation e = sched::Explain(ThreeOffers(), task);
  EXPECT_EQ(e.summary, plan.waiting["j/0"].summary);
  ASSERT_EQ(e.filtered.size(), 1u);
  EXPECT_EQ(e.filtered[0].stage, "max-price");
  EXPECT_EQ(e.filtered[0].example_detail, "lowest ask here 0.50");  // cheap-small is first by id
}

TEST(MarketSchedulingTest, CostCapStopsAJob) {
  auto task = PTask();
  task.max_cost = 1;
  task.run_timeout_seconds = 4 * 3600;  // even the 0.50/h T4 would cost 2.00
  sched::Plan plan = sched::NewPipelineScheduler()->Schedule(ThreeOffers(), {task});
  EXPECT_TRUE(plan.placements.empty());
  EXPECT_EQ(plan.waiting["j/0"].summary, "3 nodes: 3 estimated cost over maxCost 1.00; waiting");
  sched::Explanation e = sched::Explain(ThreeOffers(), task);
  ASSERT_EQ(e.filtered.size(), 1u);
  EXPECT_EQ(e.filtered[0].example_detail, "estimated cost 2.00 (0.50/h x 4.0 h) exceeds maxCost 1.00");
  // A cap the cheapest offer fits under places it there.
  task.max_cost = 2;
  plan = sched::NewPipelineScheduler()->Schedule(ThreeOffers(), {task});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].node_id, "cheap-small");
  EXPECT_DOUBLE_EQ(plan.placements[0].estimated_cost, 2);
}

}  // namespace
}  // namespace idlegrid::market
