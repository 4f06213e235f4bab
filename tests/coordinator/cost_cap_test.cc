// A task's cost cap (maxCost) covers all its attempts. After a failed attempt
// the dispatcher either places it again (what is left pays for another run
// at the current asks), or fails it as cost_cap_reached: at once when it
// already spent its cap, and after planning when no feasible offer fits the
// budget left. Driven through the public API on a manual clock.
//
// The node asks 3600 per core-hour: one credit per second of a 1-core task.
// The job's run timeout is 10 s, so a run is estimated at 10; its cap is 15.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "coordinator/pipeline_support.h"

namespace idlegrid::coordinator::testing {
namespace {

struct CostCase {
  const char* name;
  int run_seconds;           // how long the first attempt runs (and so spends)
  bool placed_again;         // a second attempt follows
  const char* message_part;  // in the failed task's message
};

void PrintTo(const CostCase& c, std::ostream* os) { *os << c.name << " (runs " << c.run_seconds << " s)"; }

class CostCapTest : public ::testing::TestWithParam<CostCase> {};

TEST_P(CostCapTest, FailedAttemptIsPlacedAgainOnlyWithinTheCap) {
  const CostCase& c = GetParam();
  PipelineHarness h;
  Status init = h.Init();
  ASSERT_TRUE(init.ok()) << init.ToString();
  auto node = h.AddNode("node-a", /*cpu_ask=*/3600);
  ASSERT_TRUE(node.ok()) << node.status().ToString();

  v1::JobSpec spec = CpuJob("capped");
  spec.set_run_timeout_seconds(10);
  spec.set_max_cost(15);
  spec.set_retries(3);
  auto job = h.Submit(spec);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  h.coordinator().Tick();
  auto task = h.Task(*job);
  ASSERT_TRUE(task.ok());
  ASSERT_EQ(task->attempts_size(), 1) << "estimated 10 of a cap of 15: placed";
  const std::string attempt = task->attempts(0).id();
  ASSERT_TRUE(h.Accept(*node, attempt).ok());
  ASSERT_TRUE(h.Start(*node, attempt).ok());
  for (int s = 0; s < c.run_seconds; ++s) ASSERT_TRUE(h.Pass(1000, {*node}).ok());
  ASSERT_TRUE(h.Exit(*node, attempt, 1).ok());  // a retryable failure

  // The retry backoff (1 s after a first failure), then a dispatch.
  for (int s = 0; s < 3; ++s) ASSERT_TRUE(h.Pass(1000, {*node}).ok());
  task = h.Task(*job);
  ASSERT_TRUE(task.ok());
  EXPECT_NEAR(task->cost(), c.run_seconds, 1e-6);
  if (c.placed_again) {
    EXPECT_EQ(task->attempts_size(), 2) << task->DebugString();
    EXPECT_NE(task->state(), v1::FAILED);
    return;
  }
  EXPECT_EQ(task->attempts_size(), 1) << task->DebugString();
  EXPECT_EQ(task->state(), v1::FAILED);
  EXPECT_EQ(task->failure_reason(), v1::COST_CAP_REACHED);
  EXPECT_NE(task->message().find(c.message_part), std::string::npos) << task->message();
}

INSTANTIATE_TEST_SUITE_P(Spending, CostCapTest,
                         ::testing::Values(
                             // 3 spent, 12 left: another 10-credit run fits.
                             CostCase{"RoomForAnotherRun", 3, true, ""},
                             // 8 spent, 7 left: under the cap, but no offer fits what is left.
                             CostCase{"LeftCannotPay", 8, false, "left cannot pay for another run"},
                             // 20 spent: over the cap already, never planned again.
                             CostCase{"CapSpent", 20, false, "not run again"}),
                         [](const ::testing::TestParamInfo<CostCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace idlegrid::coordinator::testing
