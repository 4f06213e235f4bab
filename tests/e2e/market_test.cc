// The spot market end to end: two providers ask different prices for the same
// GPU class; a bid takes the cheapest offer and the terms are recorded with
// the attempt; a bid below every ask and a cost cap wait, and --explain says
// why; `idlegrid market` shows the order book.
#include <gtest/gtest.h>
#include <google/protobuf/util/json_util.h>

#include "e2e/harness.h"
#include "jobs/task_state.h"

namespace idlegrid::testing {
namespace {

class Market : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    grid_ = std::make_unique<Grid>("market");
    ASSERT_TRUE(grid_->StartCoordinator({"--allow-simulated-gpus", "--heartbeat-interval-ms", "500"}).ok());
    const char* asks[] = {"0.80", "0.30"};
    for (int n = 1; n <= 2; ++n) {
      ASSERT_TRUE(grid_->StartAgent(n, {"--simulate-gpu", "RTX 4090:24GiB:8.9"}).ok());
      node_[n] = grid_->node_ids[n - 1];
      ASSERT_TRUE(grid_->WriteOwnerPolicy(n, std::string("asks:\n  RTX 4090: ") + asks[n - 1] + "\n").ok());
    }
    auto nodes = grid_->WaitNodes([](const v1::ListNodesResponse& list) {
      int ready = 0;
      for (const auto& n : list.nodes()) ready += n.schedulable() && n.advertisement().asks_size() == 1;
      return ready == 2;
    });
    ASSERT_TRUE(nodes.ok());
  }
  std::string Submit(const std::string& name, const std::vector<std::string>& args, const std::string& extra) {
    std::string argv;
    for (const auto& a : args) argv += (argv.empty() ? "\"" : ", \"") + a + "\"";
    std::string manifest =
        grid_->WriteFile(name + ".yaml", "apiVersion: idlegrid/v1\nname: " + name + "\nimage: igtest@" +
                                             grid_->PushTestImage() + "\ncommand: [\"/sim\"]\nargs: [" + argv +
                                             "]\nresources: {cpu: 0.5, memory: 64Mi, pids: 64, gpus: 1}\n" + extra);
    auto r = grid_->Cli({"submit", manifest});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.substr(0, r.out.find('\n'));
  }
  std::unique_ptr<Grid> grid_;
  std::map<int, std::string> node_;
};

TEST_F(Market, CheapestSatisfyingOfferWinsAndItsTermsAreRecorded) {
  std::string id = Submit("bid", {"write", "bid"}, "maxPricePerGpuHour: 1.0\n");
  auto done = grid_->WaitJob(id, [](const v1::Job& j) { return jobs::IsSettled(j); });
  ASSERT_TRUE(done.ok());
  ASSERT_EQ(done->state(), v1::SUCCEEDED) << done->DebugString();
  const auto& a = done->tasks(0).attempts(0);
  EXPECT_EQ(a.node_id(), node_[2]) << "the 0.30 ask should win over 0.80";
  EXPECT_EQ(a.placement().pricing_rule(), "pay-as-ask");
  EXPECT_DOUBLE_EQ(a.placement().ask_per_gpu_hour(), 0.30);
  EXPECT_DOUBLE_EQ(a.placement().bid_per_gpu_hour(), 1.0);
  EXPECT_DOUBLE_EQ(a.placement().price_per_hour(), 0.30);
  EXPECT_GE(done->tasks(0).cost(), 0.0);

  // A policy the coordinator does not have is refused at submit, naming the known ones.
  auto typo = grid_->Cli({"submit", grid_->Manifest("typo", {"write", "x"}, "policy: fastest\n")});
  EXPECT_EQ(typo.exit_code, 2) << typo.out << typo.err;
  EXPECT_NE(typo.err.find("unknown scheduling policy \"fastest\" (known: balanced, binpack, cheapest, spread)"),
            std::string::npos)
      << typo.err;

  auto market = grid_->Cli({"market"});
  ASSERT_EQ(market.exit_code, 0) << market.err;
  EXPECT_NE(market.out.find("pay-as-ask"), std::string::npos) << market.out;
  EXPECT_NE(market.out.find("RTX 4090"), std::string::npos) << market.out;
  v1::MarketResponse book;
  auto json = grid_->Cli({"market", "--json"});
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &book).ok()) << json.out;
  ASSERT_EQ(book.rows_size(), 2) << json.out;  // the GPU class and CPU cores
  for (const auto& row : book.rows()) {
    if (row.device_class() != "RTX 4090") continue;
    EXPECT_EQ(row.providers(), 2u);
    EXPECT_DOUBLE_EQ(row.min_ask(), 0.30);
    EXPECT_DOUBLE_EQ(row.max_ask(), 0.80);
  }
}

TEST_F(Market, BidBelowEveryAskAndCostCapWaitAndExplainSaysWhy) {
  std::string low = Submit("lowbid", {"write", "low"}, "maxPricePerGpuHour: 0.10\n");
  std::string capped = Submit("capped", {"write", "capped"}, "runTimeout: 1h\nmaxCost: 0.05\n");
  // Both stay queued with the market's reason while a job without limits runs.
  std::string free = Submit("free", {"write", "free"}, "");
  auto ran = grid_->WaitJob(free, [](const v1::Job& j) { return jobs::IsSettled(j); });
  ASSERT_TRUE(ran.ok());
  ASSERT_EQ(ran->state(), v1::SUCCEEDED);

  auto explain_low = grid_->Cli({"status", low, "--explain"});
  ASSERT_EQ(explain_low.exit_code, 0) << explain_low.err;
  EXPECT_NE(explain_low.out.find("2 over max price"), std::string::npos) << explain_low.out;
  EXPECT_NE(explain_low.out.find("waiting"), std::string::npos) << explain_low.out;
  auto explain_capped = grid_->Cli({"status", capped, "--explain"});
  ASSERT_EQ(explain_capped.exit_code, 0) << explain_capped.err;
  EXPECT_NE(explain_capped.out.find("maxCost"), std::string::npos) << explain_capped.out;
  for (const auto& id : {low, capped}) {
    auto st = grid_->Cli({"status", id, "--json"});
    v1::Job job;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(st.out, &job).ok());
    EXPECT_EQ(job.tasks(0).state(), v1::QUEUED) << st.out;
    EXPECT_EQ(job.tasks(0).attempts_size(), 0) << st.out;
  }
}

TEST_F(Market, RetriesStopWithCostCapReachedOnceWhatIsLeftCannotPayForAnotherRun) {
  // CPU cores now cost 7200/h: a 0.5-core task pays one credit a second.
  for (int n = 1; n <= 2; ++n) {
    ASSERT_TRUE(grid_->WriteOwnerPolicy(n, "asks:\n  RTX 4090: 0.30\n  cpu-core: 7200\n").ok());
  }
  ASSERT_TRUE(grid_
                  ->WaitNodes([](const v1::ListNodesResponse& list) {
                    int priced = 0;
                    for (const auto& n : list.nodes()) priced += n.advertisement().asks_size() == 2;
                    return priced == 2;
                  })
                  .ok());
  // Each run is bounded at 2 s (an estimate of 2 credits); it fails and is
  // retried until what is left of the 2.15-credit cap cannot pay for a run
  // (after the first attempt or two: each one spends its run time).
  std::string id = Submit("capped", {"exit", "1"}, "runTimeout: 2s\nretries: 20\nmaxCost: 2.15\n");
  auto done = grid_->WaitJob(id, [](const v1::Job& j) { return jobs::IsSettled(j); });
  ASSERT_TRUE(done.ok());
  const auto& task = done->tasks(0);
  ASSERT_EQ(task.state(), v1::FAILED) << done->DebugString();
  EXPECT_EQ(task.failure_reason(), v1::COST_CAP_REACHED) << done->DebugString();
  EXPECT_NE(task.message().find("maxCost 2.1500"), std::string::npos) << task.message();
  EXPECT_GE(task.attempts_size(), 1);
  EXPECT_LT(task.attempts_size(), 20) << "the cap, not the retry budget, must stop it";
  EXPECT_GT(task.cost(), 0.0);
  EXPECT_LE(task.cost(), 2.15) << "it overspent its cap";
  std::printf("cost cap: %d attempt(s), %.4f credits spent of 2.15\n", task.attempts_size(), task.cost());
}

}  // namespace
}  // namespace idlegrid::testing
