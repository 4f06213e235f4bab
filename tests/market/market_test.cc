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
      {"n1", "A100", 4, 2.0}, {"n2", "A100", 1, 1.0}, {"n3", "A100", 2, 3.0},
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
  EXPECT_EQ(plan.waiting["j/0"], "3 nodes: 3 over max price (bid 0.25/GPU-h); waiting");
  sched::Explanation e = sched::Explain(ThreeOffers(), task);
  EXPECT_EQ(e.summary, plan.waiting["j/0"]);
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
  EXPECT_EQ(plan.waiting["j/0"], "3 nodes: 3 estimated cost over maxCost 1.00; waiting");
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
