// The cost-cap rules on plain values (sched/cost_cap.h); the dispatcher
// applying them is tests/coordinator/cost_cap_test.cc.
#include <gtest/gtest.h>

#include <string>

#include "sched/cost_cap.h"
#include "sched/feasibility.h"

namespace idlegrid::sched {
namespace {

TEST(CapSpentReasonTest, OnlyACapReachedStopsTheTask) {
  struct Case {
    double spent, max_cost;
    bool stops;
  } cases[] = {
      {0, 0, false},                                        // uncapped
      {100, 0, false},                                      // uncapped, however much spent
      {0, 10, false},   {9.99, 10, false}, {10, 10, true},  // reached counts
      {12.5, 10, true},
  };
  for (const auto& c : cases) {
    std::string why = CapSpentReason(c.spent, c.max_cost, 2);
    EXPECT_EQ(!why.empty(), c.stops) << "spent " << c.spent << " of " << c.max_cost;
    if (c.stops) {
      EXPECT_NE(why.find("over 2 attempt(s); not run again"), std::string::npos) << why;
    }
  }
  EXPECT_EQ(CapSpentReason(12.5, 10, 3), "spent 12.5000 of maxCost 10.0000 over 3 attempt(s); not run again");
}

TEST(BudgetLeftTest, WhatIsLeftButNeverNoCap) {
  EXPECT_EQ(BudgetLeft(0, 0), 0);  // uncapped stays uncapped
  EXPECT_EQ(BudgetLeft(0, 5), 0);
  EXPECT_DOUBLE_EQ(BudgetLeft(10, 0), 10);
  EXPECT_DOUBLE_EQ(BudgetLeft(10, 3), 7);
  EXPECT_GT(BudgetLeft(10, 10), 0) << "0 would read as no cap";
  EXPECT_GT(BudgetLeft(10, 11), 0);
  EXPECT_LT(BudgetLeft(10, 11), 1e-6);
}

sched::WaitReason Waiting(uint32_t feasible, const std::string& stage, uint32_t nodes) {
  sched::WaitReason w;
  w.summary = "some reason";
  w.feasible_nodes = feasible;
  if (nodes > 0) w.filtered_by.insert(stage);
  return w;
}

TEST(PricedOutReasonTest, OnlyAPartlySpentTaskNoOfferFitsStops) {
  const std::string cost = sched::kStageCostCap;
  // Priced out: spent part of the cap, nothing feasible, the cost stage removed a node.
  std::string why = PricedOutReason(Waiting(0, cost, 2), 8, 15);
  EXPECT_EQ(why, "spent 8.0000 of maxCost 15.0000; the 7.0000 left cannot pay for another run at the current asks");
  // Each condition missing keeps it waiting.
  EXPECT_EQ(PricedOutReason(Waiting(1, cost, 2), 8, 15), "") << "a feasible node";
  EXPECT_EQ(PricedOutReason(Waiting(0, "runtime", 2), 8, 15), "") << "removed for something else";
  EXPECT_EQ(PricedOutReason(Waiting(0, cost, 0), 8, 15), "") << "no node removed by cost";
  EXPECT_EQ(PricedOutReason(Waiting(0, cost, 2), 0, 15), "") << "nothing spent: it may wait for cheaper offers";
  EXPECT_EQ(PricedOutReason(Waiting(0, cost, 2), 8, 0), "") << "uncapped";
}

}  // namespace
}  // namespace idlegrid::sched
