// FleetReports (coordinator/fleet_reports.h) on its own: a real SQLite
// store, the event counters and a manual clock; the jobs, nodes and market
// it reports come from plain values its sources return. /metrics counts the
// tasks by state and shows each node's longest heartbeat gap; a load sample
// is taken at most every period, and a failing source leaves a gap rather
// than a wrong point; earnings need a provider and show balances only with
// the ledger.
#include "coordinator/fleet_reports.h"

#include <gtest/gtest.h>

#include <string>

#include "common/test_support.h"

namespace idlegrid::coordinator {
namespace {

class FleetReportsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = store::OpenSqliteStore(dir_.path() + "/state.db");
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
    v1::Job* job = jobs_.add_jobs();
    job->set_id("j1");
    (*job->mutable_task_counts())["queued"] = 2;
    (*job->mutable_task_counts())["running"] = 1;
    v1::Node* node = nodes_.add_nodes();
    node->set_id("n1");
    node->set_provider("pat");
    node->set_state("online");
    v1::GpuDevice* gpu = node->add_gpus();
    gpu->set_uuid("GPU-1");
    gpu->set_memory_total_bytes(8ull << 30);
    gpu->set_allocatable_memory_bytes(4ull << 30);  // half of it held
    v1::MarketRow* row = market_.add_rows();
    row->set_device_class("RTX 4090");
    row->set_min_ask(0.5);
  }
  FleetReports::Sources Sources() {
    FleetReports::Sources s;
    s.jobs = [this]() -> Result<v1::ListJobsResponse> {
      if (!jobs_ok_) return Status::Unavailable("store gone");
      return jobs_;
    };
    s.nodes = [this]() -> Result<v1::ListNodesResponse> { return nodes_; };
    s.market = [this]() -> Result<v1::MarketResponse> { return market_; };
    s.heartbeat_gaps = [] { return std::map<std::string, int64_t>{{"n1", 3000}, {"n2", 0}}; };
    s.recent_prices = [](int64_t) { return std::map<std::string, market::RecentPrice>{}; };
    return s;
  }

  testing::TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<store::Store> store_;
  EventCounters counters_;
  v1::ListJobsResponse jobs_;
  v1::ListNodesResponse nodes_;
  v1::MarketResponse market_;
  bool jobs_ok_ = true;
};

TEST_F(FleetReportsTest, MetricsCountTasksByStateAndShowEachNodesLongestHeartbeatGap) {
  FleetReports reports(store_.get(), &counters_, nullptr, &clock_, Sources());
  auto text = reports.Metrics();
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE(text->find("idlegrid_tasks{state=\"queued\"} 2\n"), std::string::npos) << *text;
  EXPECT_NE(text->find("idlegrid_heartbeat_gap_max_seconds{node=\"n1\"} 3\n"), std::string::npos) << *text;
  EXPECT_EQ(text->find("idlegrid_heartbeat_gap_max_seconds{node=\"n2\"}"), std::string::npos)
      << "a node with no gap seen has no sample";
  jobs_ok_ = false;
  EXPECT_EQ(reports.Metrics().status().code(), Code::kUnavailable) << "a failing source is the answer's error";
}

TEST_F(FleetReportsTest, ALoadSampleIsTakenAtMostEveryPeriodAndAFailingSourceLeavesAGap) {
  FleetReports reports(store_.get(), &counters_, nullptr, &clock_, Sources());
  reports.SampleLoad();
  reports.SampleLoad();  // same instant: not due
  auto samples = reports.LoadSamples();
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].at_ms, clock_.NowMs());
  EXPECT_EQ(samples[0].queued_tasks, 2u);
  EXPECT_EQ(samples[0].running_tasks, 1u);
  EXPECT_EQ(samples[0].gpus_total, 1u);
  EXPECT_EQ(samples[0].gpus_allocated, 1u);
  EXPECT_EQ(samples[0].lowest_ask_micros.at("RTX 4090"), 500'000);
  clock_.AdvanceMs(FleetReports::kLoadSamplePeriodMs - 1);
  reports.SampleLoad();
  EXPECT_EQ(reports.LoadSamples().size(), 1u) << "within the period";
  clock_.AdvanceMs(1);
  jobs_ok_ = false;
  reports.SampleLoad();
  EXPECT_EQ(reports.LoadSamples().size(), 1u) << "a failing source: no point rather than a wrong one";
  jobs_ok_ = true;
  reports.SampleLoad();
  EXPECT_EQ(reports.LoadSamples().size(), 2u) << "the next pass takes the due sample";
}

TEST_F(FleetReportsTest, EarningsNeedAProviderAndShowBalancesOnlyWithTheLedger) {
  FleetReports off(store_.get(), &counters_, nullptr, &clock_, Sources());
  EXPECT_EQ(off.ProviderEarnings("").status().code(), Code::kInvalidArgument);
  auto earnings = off.ProviderEarnings("pat");
  ASSERT_TRUE(earnings.ok()) << earnings.status().ToString();
  EXPECT_FALSE(earnings->ledger());
  LedgerShell shell(store_.get(), ledger::LedgerPolicy{});
  ASSERT_TRUE(store_->CreateAccount({"pat", "provider", clock_.NowMs()}).ok());
  ASSERT_TRUE(shell.Transfer("pat", 2'000'000, "d1", /*deposit=*/true, clock_.NowMs()).ok());
  LedgerRequests ledger(store_.get(), &shell, &clock_);
  FleetReports on(store_.get(), &counters_, &ledger, &clock_, Sources());
  earnings = on.ProviderEarnings("pat");
  ASSERT_TRUE(earnings.ok()) << earnings.status().ToString();
  EXPECT_TRUE(earnings->ledger());
  EXPECT_EQ(earnings->available_micros(), 2'000'000);
}

}  // namespace
}  // namespace idlegrid::coordinator
