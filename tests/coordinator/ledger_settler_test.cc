// LedgerSettler (coordinator/ledger_settler.h) on its own: a real SQLite
// store and ledger shell, a manual clock, no coordinator. A job's change is
// settled when the settler is told of it (by id or as read); a missed one is
// settled by the sweep, which runs at most every kSweepMs; without a ledger,
// or for a job that is not there, nothing moves and nothing fails.
#include "coordinator/ledger_settler.h"

#include <gtest/gtest.h>

#include <string>

#include "common/test_support.h"
#include "coordinator/ledger_requests.h"
#include "manifest/manifest.h"

namespace idlegrid::coordinator {
namespace {

constexpr ledger::Micros C = 1'000'000;

class LedgerSettlerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = store::OpenSqliteStore(dir_.path() + "/state.db");
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
    shell_ = std::make_unique<LedgerShell>(store_.get(), ledger::LedgerPolicy{});
    ASSERT_TRUE(store_->CreateAccount({"alice", "requester", clock_.NowMs()}).ok());
    ASSERT_TRUE(shell_->Transfer("alice", 10 * C, "d1", /*deposit=*/true, clock_.NowMs()).ok());
  }
  // Job `id` of alice's with 4 credits escrowed, then cancelled before it
  // ran: everything it holds is due back to her.
  void EscrowAndCancel(const std::string& id) {
    ASSERT_TRUE(shell_->EscrowAtSubmit("alice", id, 4 * C, clock_.NowMs()).ok());
    v1::JobSpec spec;
    spec.set_api_version("idlegrid/v1");
    spec.set_image("sha256:" + std::string(64, 'a'));
    spec.mutable_resources()->set_cpu(1);
    spec.mutable_resources()->set_memory_bytes(1 << 28);
    spec.set_output_path("/out");
    spec.set_runtime("runc");
    spec.set_array_count(1);
    ASSERT_TRUE(store_->CreateJob(id, spec, manifest::SpecDigest(spec), clock_.NowMs(), "alice").ok());
    ASSERT_TRUE(store_->CancelJob(id, clock_.NowMs()).ok());
  }
  ledger::Micros Available() {
    auto b = LedgerRequests(store_.get(), shell_.get(), &clock_).Balance("alice");
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? b->available_micros() : -1;
  }

  testing::TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<LedgerShell> shell_;
};

TEST_F(LedgerSettlerTest, AJobsChangeIsSettledWhenTheSettlerIsToldByIdOrAsRead) {
  LedgerSettler settler(store_.get(), shell_.get(), &clock_);
  EscrowAndCancel("j1");
  EXPECT_EQ(Available(), 6 * C);
  settler.SettleJob("j1");
  EXPECT_EQ(Available(), 10 * C) << "the cancelled job's escrow is refunded";
  EscrowAndCancel("j2");
  auto job = store_->GetJob("j2");
  ASSERT_TRUE(job.ok());
  settler.SettleJob(*job);
  EXPECT_EQ(Available(), 10 * C);
}

TEST_F(LedgerSettlerTest, TheSweepSettlesAMissedChangeAtMostEveryPeriod) {
  LedgerSettler settler(store_.get(), shell_.get(), &clock_);
  settler.Sweep();  // nothing to do yet; the period starts here
  EscrowAndCancel("j1");
  clock_.AdvanceMs(LedgerSettler::kSweepMs - 1);
  settler.Sweep();
  EXPECT_EQ(Available(), 6 * C) << "within the period the sweep does not run";
  clock_.AdvanceMs(1);
  settler.Sweep();
  EXPECT_EQ(Available(), 10 * C) << "the sweep refunds what no hook settled";
}

TEST_F(LedgerSettlerTest, WithoutALedgerOrForAMissingJobNothingMoves) {
  LedgerSettler off(store_.get(), nullptr, &clock_);
  EscrowAndCancel("j1");
  off.SettleJob("j1");
  off.Sweep();
  EXPECT_EQ(Available(), 6 * C) << "no ledger: the settler posts nothing";
  LedgerSettler on(store_.get(), shell_.get(), &clock_);
  on.SettleJob("no-such-job");  // logged; the sweep would retry
  EXPECT_EQ(Available(), 6 * C);
}

}  // namespace
}  // namespace idlegrid::coordinator
