// The coordinator's side of fair share: the dispatcher hands the scheduler
// each task's account and what each account's active attempts hold, so a
// slot that opens goes to the account holding less; `status --explain` tells
// each queued task where its account stands. (The order itself is tested on
// the pure core, tests/sched/fair_share_test.cc.) Driven by hand
// (pipeline_support.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "coordinator/pipeline_support.h"

namespace idlegrid::coordinator::testing {
namespace {

std::string TwoDecimals(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", x);
  return buf;
}

class FairShareTest : public ::testing::Test {
 protected:
  void Start(Options options) {
    h_ = std::make_unique<PipelineHarness>(options);
    Status init = h_->Init();
    ASSERT_TRUE(init.ok()) << init.ToString();
    for (const char* name : {"big", "small"}) {
      v1::Account a;
      a.set_name(name);
      a.set_role("requester");
      ASSERT_TRUE(h_->coordinator().tenancy().CreateAccount(a).ok()) << name;
    }
    // The harness's image is the operator's; tenants may use it once public.
    ASSERT_TRUE(h_->coordinator().store()->RecordArtifact("sha256:archive", 10, "image", 1).ok());
    ASSERT_TRUE(h_->coordinator().store()->SetArtifactPublic("sha256:archive").ok());
    auto node = h_->AddNode("node-a");  // 4 cores, 8 GiB
    ASSERT_TRUE(node.ok()) << node.status().ToString();
    node_ = *node;
  }

  // Submits `tasks` one-core tasks for `account`.
  std::string SubmitFor(const std::string& account, uint32_t tasks) {
    v1::JobSpec spec = CpuJob(account);
    spec.set_array_count(tasks);
    auto job = h_->Submit(spec, account);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return job.ok() ? *job : "";
  }

  // Tasks of `job` (of `tasks`) with an attempt.
  int Started(const std::string& job, uint32_t tasks) {
    int n = 0;
    for (uint32_t i = 0; i < tasks; ++i) {
      auto t = h_->Task(job, i);
      if (t.ok() && t->attempts_size() > 0) ++n;
    }
    return n;
  }

  std::unique_ptr<PipelineHarness> h_;
  std::string node_;
};

TEST_F(FairShareTest, ASlotThatOpensGoesToTheAccountHoldingLess) {
  Start(Options());
  // big fills the node first and queues many more; small queues 2 behind them.
  const std::string big = SubmitFor("big", 40);
  h_->coordinator().Tick();
  const int full = Started(big, 40);
  ASSERT_GT(full, 0);
  ASSERT_LT(full, 40);
  const std::string small = SubmitFor("small", 2);
  h_->coordinator().Tick();
  ASSERT_EQ(Started(small, 2), 0) << "the node is full";

  // One of big's attempts ends: the next round gives its slot to small,
  // although 40 - full of big's tasks were queued first.
  auto first = h_->Task(big, 0);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->attempts_size(), 1);
  const std::string attempt = first->attempts(0).id();
  ASSERT_TRUE(h_->Accept(node_, attempt).ok());
  ASSERT_TRUE(h_->Start(node_, attempt).ok());
  ASSERT_TRUE(h_->Exit(node_, attempt, 0).ok());
  h_->coordinator().Tick();
  EXPECT_EQ(Started(small, 2), 1);
  EXPECT_EQ(Started(big, 40), full);
}

TEST_F(FairShareTest, ExplainShowsTheAccountsShareWeightAndPlaceInLine) {
  Options options;
  options.account_weights["big"] = 2;
  Start(options);
  const std::string big = SubmitFor("big", 40);
  h_->coordinator().Tick();
  const int full = Started(big, 40);
  ASSERT_GT(full, 0);
  const std::string small = SubmitFor("small", 1);

  auto explained = h_->coordinator().dispatcher().Explain(small);
  ASSERT_TRUE(explained.ok()) << explained.status().ToString();
  ASSERT_EQ(explained->tasks_size(), 1);
  const v1::TaskExplanation& t = explained->tasks(0);
  EXPECT_EQ(t.fair_share(),
            "account small: dominant share 0.00 (nothing held) / weight 1 = 0.00; 2 accounts waiting; next in line");
  EXPECT_NE(t.text().find("\n  fair share: " + t.fair_share() + "\n"), std::string::npos) << t.text();

  // big holds `full` of the node's 4 cores, its larger fraction; weight 2.
  explained = h_->coordinator().dispatcher().Explain(big);
  ASSERT_TRUE(explained.ok()) << explained.status().ToString();
  ASSERT_GT(explained->tasks_size(), 0);
  EXPECT_EQ(explained->tasks(0).fair_share(), "account big: dominant share " + TwoDecimals(full / 4.0) +
                                                  " (cpu) / weight 2 = " + TwoDecimals(full / 8.0) +
                                                  "; 2 accounts waiting; position 2 of " +
                                                  std::to_string(40 - full + 1) + " in line");
}

}  // namespace
}  // namespace idlegrid::coordinator::testing
