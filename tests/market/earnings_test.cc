// Provider earnings and recent clearing prices (market/earnings.h,
// market/recent_prices.h) on plain data.
#include <gtest/gtest.h>

#include "market/earnings.h"
#include "market/recent_prices.h"

namespace idlegrid::market {
namespace {

constexpr int64_t kHour = 3'600'000;

v1::Attempt Ran(const std::string& node, double price_per_hour, int64_t ms, const std::string& vote = "") {
  v1::Attempt a;
  a.set_node_id(node);
  a.set_state(v1::SUCCEEDED);
  a.set_started_at_ms(1'000);
  a.set_finished_at_ms(1'000 + ms);
  a.mutable_placement()->set_price_per_hour(price_per_hour);
  a.mutable_metering()->set_cpu_millis(static_cast<uint64_t>(ms / 2));
  a.mutable_metering()->set_gpu_millis(static_cast<uint64_t>(ms));
  a.set_vote(vote);
  return a;
}

TEST(Earnings, OnlyAcceptedResultsAreEarnedAtTheirPlacementPrice) {
  EarningsInputs in;
  in.provider = "alice";
  in.now_ms = 10 * kHour;
  in.nodes.push_back({"n1", "rig", {"NVIDIA H200"}, 0, {{"NVIDIA H200", 2.0}}});
  in.attempts = {Ran("n1", 2.0, kHour / 2), Ran("n1", 2.0, kHour, "agreed"), Ran("n1", 2.0, kHour, "unverified"),
                 Ran("n1", 2.0, kHour, "wrong"), Ran("n1", 2.0, kHour, "pending")};
  auto out = SummarizeEarnings(in);
  ASSERT_EQ(out.nodes_size(), 1);
  EXPECT_EQ(out.nodes(0).attempts(), 3u) << "a wrong result and one awaiting its verdict earn nothing";
  EXPECT_DOUBLE_EQ(out.nodes(0).metered_credits(), 1.0 + 2.0 + 2.0);
  EXPECT_DOUBLE_EQ(out.metered_credits(), 5.0);
  EXPECT_EQ(out.nodes(0).gpu_millis(), static_cast<uint64_t>(kHour / 2 + 2 * kHour));
  EXPECT_EQ(out.nodes(0).cpu_millis(), static_cast<uint64_t>((kHour / 2 + 2 * kHour) / 2));
  EXPECT_FALSE(out.ledger());
}

TEST(Earnings, EstimateIsEveryOfferedUnitAtItsAskAndNamesRecentClearingPrices) {
  EarningsInputs in;
  in.provider = "alice";
  in.nodes.push_back({"n1", "rig", {"RTX 4090", "RTX 4090"}, 8, {{"RTX 4090", 0.35}, {"cpu-core", 0.01}}});
  in.nodes.push_back({"n2", "laptop", {}, 4, {}});
  in.recent["RTX 4090"] = {0.5, 0.4, 7};
  auto out = SummarizeEarnings(in);
  ASSERT_EQ(out.nodes_size(), 2);
  EXPECT_DOUBLE_EQ(out.nodes(0).estimate_per_hour(), 2 * 0.35 + 8 * 0.01);
  EXPECT_NE(out.nodes(0).estimate_basis().find("2 x RTX 4090 at 0.3500/h (recently cleared at 0.4000/h)"),
            std::string::npos)
      << out.nodes(0).estimate_basis();
  EXPECT_NE(out.nodes(0).estimate_basis().find("8 x cpu-core at 0.0100/h"), std::string::npos);
  EXPECT_DOUBLE_EQ(out.nodes(1).estimate_per_hour(), 0);
  EXPECT_NE(out.nodes(1).estimate_basis().find("it asks nothing, so it earns nothing"), std::string::npos)
      << out.nodes(1).estimate_basis();
  EXPECT_DOUBLE_EQ(out.estimate_per_hour(), 0.78);
  ASSERT_EQ(out.market_size(), 1);
  EXPECT_EQ(out.market(0).recent_placements(), 7u);
}

TEST(Earnings, WorkOfANodeNoLongerConnectedStillCounts) {
  EarningsInputs in;
  in.provider = "alice";
  in.attempts = {Ran("gone", 1.0, kHour)};
  auto out = SummarizeEarnings(in);
  ASSERT_EQ(out.nodes_size(), 1);
  EXPECT_EQ(out.nodes(0).node_id(), "gone");
  EXPECT_EQ(out.nodes(0).estimate_basis(), "not connected");
  EXPECT_DOUBLE_EQ(out.metered_credits(), 1.0);
  const std::string text = FormatEarnings(out);
  EXPECT_NE(text.find("metered work accepted: 1.0000 credits"), std::string::npos) << text;
  EXPECT_NE(text.find("ledger: not kept by this coordinator"), std::string::npos) << text;
}

TEST(Earnings, LedgerBalancesArePrintedWhenKept) {
  v1::ProviderEarningsResponse e;
  e.set_provider("alice");
  e.set_ledger(true);
  e.set_available_micros(1'500'000);
  e.set_pending_micros(250);
  e.set_stake_micros(-1);
  const std::string text = FormatEarnings(e);
  EXPECT_NE(text.find("ledger: 1.500000 available, 0.000250 pending release, -0.000001 staked"), std::string::npos)
      << text;
}

TEST(RecentPrices, MedianAndLatestInsideTheWindowOnly) {
  RecentPrices p(/*window_ms=*/1000, /*per_class=*/100);
  p.Record("gpu", 3.0, 0);
  p.Record("gpu", 1.0, 500);
  p.Record("gpu", 2.0, 900);
  p.Record("gpu", -1.0, 950);  // not a price
  auto now = p.Of("gpu", 1000);
  EXPECT_EQ(now.placements, 3u);
  EXPECT_DOUBLE_EQ(now.latest, 2.0);
  EXPECT_DOUBLE_EQ(now.median, 2.0);
  auto later = p.Of("gpu", 1600);  // the first two fell out of the window
  EXPECT_EQ(later.placements, 1u);
  EXPECT_DOUBLE_EQ(later.median, 2.0);
  EXPECT_EQ(p.Of("gpu", 5000).placements, 0u);
  EXPECT_TRUE(p.All(5000).empty());
  EXPECT_EQ(p.Of("other", 0).placements, 0u);
}

TEST(RecentPrices, KeepsAtMostPerClassSamples) {
  RecentPrices p(/*window_ms=*/1'000'000, /*per_class=*/2);
  p.Record("cpu-core", 5.0, 1);
  p.Record("cpu-core", 1.0, 2);
  p.Record("cpu-core", 2.0, 3);
  auto r = p.Of("cpu-core", 3);
  EXPECT_EQ(r.placements, 2u);
  EXPECT_DOUBLE_EQ(r.median, 1.0) << "the lower median of {1, 2}: a price that was paid";
}

TEST(RecentPricesTest, AddedIntoTheirClassRowOrARowOfTheirOwnAndDescribed) {
  google::protobuf::RepeatedPtrField<v1::MarketRow> rows;
  rows.Add()->set_device_class("cpu-core");
  rows.Add()->set_device_class("NVIDIA H200");
  const std::map<std::string, RecentPrice> recent = {{"cpu-core", {0.4, 0.35, 3}}, {"NVIDIA A100", {1.5, 1.25, 2}}};
  AddRecentPrices(recent, &rows);
  ASSERT_EQ(rows.size(), 3) << "the class with nothing free now gets a row of its own";
  EXPECT_EQ(rows[0].recent_placements(), 3u);
  EXPECT_EQ(rows[1].recent_placements(), 0u) << "no recent placement: left as it was";
  EXPECT_EQ(rows[2].device_class(), "NVIDIA A100");
  EXPECT_EQ(DescribeRecentPrice(rows[0]), "median 0.3500/h, latest 0.4000/h over 3 placement(s)");
  EXPECT_EQ(FormatCredits(1.5), "1.50");
  EXPECT_EQ(FormatCredits(0.35, 4), "0.3500");
}

}  // namespace
}  // namespace idlegrid::market
