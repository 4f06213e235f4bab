// The ledger's requester operations (coordinator/ledger_requests.h) on their
// own: a real SQLite store and ledger shell, a manual clock, no coordinator.
// Without a ledger every call says how to start one; an unknown account is
// NotFound; deposits are replay-safe by request id; an account's history
// shows its own postings only, after a sequence number and within a limit.
#include "coordinator/ledger_requests.h"

#include <gtest/gtest.h>

#include <string>

#include "common/test_support.h"

namespace idlegrid::coordinator {
namespace {

constexpr ledger::Micros C = 1'000'000;

class LedgerRequestsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = store::OpenSqliteStore(dir_.path() + "/state.db");
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
    shell_ = std::make_unique<LedgerShell>(store_.get(), ledger::LedgerPolicy{});
    for (const char* name : {"alice", "bob"}) {
      ASSERT_TRUE(store_->CreateAccount({name, "requester", clock_.NowMs()}).ok());
    }
  }
  Result<v1::LedgerBalanceResponse> Deposit(LedgerRequests& r, const std::string& account, ledger::Micros micros,
                                            const std::string& request_id) {
    v1::LedgerTransferRequest req;
    req.set_account(account);
    req.set_micros(micros);
    req.set_request_id(request_id);
    return r.Transfer(req, /*deposit=*/true);
  }

  testing::TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<LedgerShell> shell_;
};

TEST_F(LedgerRequestsTest, WithoutALedgerEveryCallSaysHowToStartOne) {
  LedgerRequests off(store_.get(), nullptr, &clock_);
  auto balance = off.Balance("alice");
  EXPECT_EQ(balance.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(balance.status().message().find("--ledger"), std::string::npos) << balance.status().message();
  EXPECT_EQ(off.History("alice", 0, 0).status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(Deposit(off, "alice", C, "r1").status().code(), Code::kFailedPrecondition);
  v1::LedgerStakeRequest stake;
  stake.set_account("alice");
  EXPECT_EQ(off.Stake(stake).status().code(), Code::kFailedPrecondition);
}

TEST_F(LedgerRequestsTest, DepositsAreReplaySafeAndAnUnknownAccountIsNotFound) {
  LedgerRequests on(store_.get(), shell_.get(), &clock_);
  EXPECT_EQ(on.Balance("nobody").status().code(), Code::kNotFound);
  EXPECT_EQ(Deposit(on, "nobody", C, "r0").status().code(), Code::kNotFound);
  auto after = Deposit(on, "alice", 3 * C, "r1");
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->account(), "alice");
  EXPECT_EQ(after->available_micros(), 3 * C);
  after = Deposit(on, "alice", 3 * C, "r1");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->available_micros(), 3 * C) << "the same request id moves nothing twice";
  EXPECT_EQ(on.Balance("bob")->available_micros(), 0);
}

TEST_F(LedgerRequestsTest, AnAccountsHistoryIsItsOwnAfterASequenceAndWithinALimit) {
  LedgerRequests on(store_.get(), shell_.get(), &clock_);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Deposit(on, "alice", C, "a" + std::to_string(i)).ok());
  ASSERT_TRUE(Deposit(on, "bob", C, "b0").ok());
  auto all = on.History("alice", 0, 0);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->postings_size(), 3) << "bob's deposit is not alice's";
  EXPECT_EQ(all->postings(0).reason(), "deposit");
  auto later = on.History("alice", all->postings(0).seq(), 0);
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later->postings_size(), 2);
  auto one = on.History("alice", 0, 1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->postings_size(), 1);
}

}  // namespace
}  // namespace idlegrid::coordinator
