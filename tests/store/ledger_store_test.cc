// The ledger's books (schema v13) in both store backends: postings applied
// all or nothing and once per key, the balances they leave, history,
// pending charges and settlement cursors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ledger/plans.h"
#include "store/settlement_runner.h"
#include "store/store.h"
#include "store/store_fixture.h"

namespace idlegrid::store {
namespace {

using backends::BackendKind;
using backends::StoreFixture;
using ledger::Available;
using ledger::Escrow;
using ledger::Micros;
using ledger::Pending;
using ledger::World;

constexpr Micros C = ledger::kMicrosPerCredit;

class LedgerStoreTest : public StoreFixture, public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override { CreateDatabase(GetParam()); }

  int Apply(std::vector<ledger::Posting> postings, int64_t now_ms = 1000) {
    auto r = store_->ApplyPostings(postings, now_ms);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : -1;
  }
  Micros Balance(const ledger::AccountKey& key) {
    auto all = store_->LedgerBalances(key.owner);
    EXPECT_TRUE(all.ok()) << all.status().ToString();
    if (!all.ok()) return -1;
    auto it = all->find(key);
    return it == all->end() ? 0 : it->second;
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, LedgerStoreTest, ::testing::Values(BackendKind::kSqlite, BackendKind::kPostgres),
                         [](const auto& info) { return backends::BackendName(info.param); });

TEST_P(LedgerStoreTest, PostingsMoveBalancesOnceAndKeepEveryEntry) {
  EXPECT_TRUE(*db_->HasTable("ledger_postings"));
  EXPECT_GE(LatestSchemaVersion(GetParam()), 13);
  EXPECT_EQ(Apply({*ledger::Deposit("alice", 10 * C, "r1"), *ledger::EscrowForJob("alice", "j1", 4 * C, 10 * C)}), 2);
  // Replays (a retry, a restart redoing its plan) change nothing.
  EXPECT_EQ(Apply({*ledger::Deposit("alice", 10 * C, "r1"), *ledger::EscrowForJob("alice", "j1", 4 * C, 10 * C)}), 0);
  // Empty postings are skipped.
  EXPECT_EQ(Apply({*ledger::Refund("alice", "j9", 0)}), 0);
  EXPECT_EQ(Balance(Available("alice")), 6 * C);
  EXPECT_EQ(Balance(Escrow("alice", "j1")), 4 * C);
  EXPECT_EQ(Balance(World()), -10 * C);
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM ledger_postings"), 2);
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM ledger_entries"), 4);
  EXPECT_EQ(QueryInt("SELECT SUM(amount) FROM ledger_entries"), 0);
  auto history = store_->LedgerPostings(0, 100, std::string("alice"));
  ASSERT_TRUE(history.ok()) << history.status().ToString();
  ASSERT_EQ(history->size(), 2u);
  EXPECT_EQ((*history)[0].posting.key, "deposit:r1");
  EXPECT_EQ((*history)[0].posting.entries,
            (std::vector<ledger::Entry>{{World(), -10 * C}, {Available("alice"), 10 * C}}));
  EXPECT_EQ((*history)[1].posting.reason, ledger::Reason::kEscrow);
  EXPECT_EQ((*history)[1].posting.job_id, "j1");
  EXPECT_EQ((*history)[1].applied_ms, 1000);
  EXPECT_LT((*history)[0].seq, (*history)[1].seq);
  auto none = store_->LedgerPostings(0, 100, std::string("bob"));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_P(LedgerStoreTest, ARefusedPostingAppliesNothingOfItsBatch) {
  ASSERT_EQ(Apply({*ledger::Deposit("alice", 5 * C, "r1")}), 1);
  // Planned from a stale balance: the store's own check refuses the overdraft.
  auto r =
      store_->ApplyPostings({*ledger::Deposit("alice", C, "r2"), *ledger::Withdraw("alice", 7 * C, 7 * C, "w1")}, 2000);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("alice/available"), std::string::npos) << r.status().message();
  EXPECT_EQ(Balance(Available("alice")), 5 * C);
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM ledger_postings"), 1);
  ledger::Posting unbalanced{"bad", ledger::Reason::kDeposit, "", "", {{World(), -1}, {Available("alice"), 2}}};
  EXPECT_EQ(store_->ApplyPostings({unbalanced}, 2000).status().code(), Code::kInternal);
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM ledger_postings"), 1);
}

TEST_P(LedgerStoreTest, PendingChargesWaitForTheirWindowAndLeaveOnRelease) {
  ledger::LedgerPolicy policy;
  policy.dispute_window_ms = 500;
  policy.fee_ppm = 250'000;
  ASSERT_EQ(Apply({*ledger::Deposit("alice", 10 * C, "r1"), *ledger::EscrowForJob("alice", "j1", 4 * C, 10 * C)}), 2);
  ASSERT_EQ(Apply({*ledger::Charge({"alice", "j1", "bob", "a1", 2 * C, 4 * C, ledger::AttemptEnd::kVerified})}, 1000),
            1);
  ASSERT_EQ(Apply({*ledger::Charge({"alice", "j1", "bob", "a2", C, 2 * C, ledger::AttemptEnd::kVerified})}, 1200), 1);
  auto due = store_->PendingCharges(1100, 10);
  ASSERT_TRUE(due.ok()) << due.status().ToString();
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].provider, "bob");
  EXPECT_EQ((*due)[0].attempt_id, "a1");
  EXPECT_EQ((*due)[0].job_id, "j1");
  EXPECT_EQ((*due)[0].pending, 2 * C);
  EXPECT_EQ((*due)[0].charged_ms, 1000);
  ASSERT_EQ(Apply({*ledger::Release("bob", "a1", 2 * C, 1000, 1500, policy)}, 1500), 1);
  EXPECT_EQ(Balance(Available("bob")), 1'500'000);
  EXPECT_EQ(Balance(ledger::Fees()), 500'000);
  EXPECT_EQ(Balance(Pending("bob", "a1")), 0);
  auto later = store_->PendingCharges(5000, 10);
  ASSERT_TRUE(later.ok());
  ASSERT_EQ(later->size(), 1u);
  EXPECT_EQ((*later)[0].attempt_id, "a2");
}

TEST_P(LedgerStoreTest, SettlementCursorsPersist) {
  auto first = store_->SettlementCursor("ledger");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, 0);
  ASSERT_TRUE(store_->SetSettlementCursor("ledger", 7).ok());
  ASSERT_TRUE(store_->SetSettlementCursor("ledger", 9).ok());
  Reopen();
  EXPECT_EQ(*store_->SettlementCursor("ledger"), 9);
  EXPECT_EQ(*store_->SettlementCursor("chain"), 0);
}

// A sink that fails when told to, and records what it accepted.
class RecordingSink : public ledger::SettlementSink {
 public:
  std::string Name() const override { return "recording"; }
  Status Export(const ledger::SettledBatch& batch) override {
    if (fail) return Status::Unavailable("chain unreachable");
    for (const auto& b : batch.postings) keys.push_back(b.posting.key);
    return Status::Ok();
  }
  bool fail = false;
  std::vector<std::string> keys;
};

TEST_P(LedgerStoreTest, SettledBatchesAreExportedOnceInOrder) {
  ASSERT_EQ(Apply({*ledger::Deposit("alice", 10 * C, "r1"), *ledger::EscrowForJob("alice", "j1", 4 * C, 10 * C),
                   *ledger::EscrowForJob("alice", "j2", 1 * C, 6 * C), *ledger::Refund("alice", "j1", 4 * C),
                   *ledger::Withdraw("alice", C, 9 * C, "w1"), *ledger::Refund("alice", "j2", C)}),
            6);
  RecordingSink sink;
  sink.fail = true;
  EXPECT_EQ(ExportSettledBatch(*store_, sink, 2).status().code(), Code::kUnavailable);
  EXPECT_EQ(*store_->SettlementCursor("recording"), 0);  // not advanced past a failed export
  sink.fail = false;
  auto first = ExportSettledBatch(*store_, sink, 2);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->postings.size(), 2u);
  EXPECT_EQ(first->last_seq, first->postings.back().seq);  // stops before refund j2, which does not fit
  auto second = ExportSettledBatch(*store_, sink, 2);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->postings.size(), 1u);
  EXPECT_EQ(second->after_seq, first->last_seq);
  auto third = ExportSettledBatch(*store_, sink, 2);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->last_seq, third->after_seq);  // nothing new
  EXPECT_EQ(sink.keys, (std::vector<std::string>{"refund:j1", "withdraw:w1", "refund:j2"}));
  // The built-in sink: the books themselves.
  ledger::LedgerSettlement books;
  auto all = ExportSettledBatch(*store_, books, 100);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->postings.size(), 3u);
  EXPECT_EQ(*store_->SettlementCursor("ledger"), QueryInt("SELECT MAX(seq) FROM ledger_postings"));
}

}  // namespace
}  // namespace idlegrid::store
