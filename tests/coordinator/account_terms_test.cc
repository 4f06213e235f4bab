// The accounts' terms the dispatcher plans under (coordinator/account_terms.h),
// on a real SQLite store and a manual clock: an account's own running limit
// or the default, weights with the operator's overrides, re-read at most every
// kRefreshMs.
#include "coordinator/account_terms.h"

#include <gtest/gtest.h>

#include "common/test_support.h"

namespace idlegrid::coordinator {
namespace {

class AccountTermsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = store::OpenSqliteStore(dir_.path() + "/state.db");
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
  }
  Status Add(const std::string& name, double weight, uint32_t max_running) {
    store::AccountRecord a;
    a.name = name;
    a.role = "requester";
    a.created_ms = clock_.NowMs();
    a.weight = weight;
    a.max_running_tasks = max_running;
    return store_->CreateAccount(a);
  }

  testing::TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<store::Store> store_;
};

TEST_F(AccountTermsTest, OwnLimitElseTheDefaultAndTheOperatorsWeightsWin) {
  ASSERT_TRUE(Add("alice", 2, 5).ok());
  ASSERT_TRUE(Add("bob", 1, 0).ok());
  AccountTermsCache terms(store_.get(), &clock_, /*default_max_running_tasks=*/3, {{"bob", 4}});
  const AccountTerms now = terms.Current();
  EXPECT_EQ(now.running_limits.at("alice"), 5);
  EXPECT_EQ(now.running_limits.at("bob"), 3) << "no limit of its own: the default";
  EXPECT_DOUBLE_EQ(now.weights.at("alice"), 2);
  EXPECT_DOUBLE_EQ(now.weights.at("bob"), 4) << "the operator's override";

  AccountTermsCache unlimited(store_.get(), &clock_, 0, {});
  EXPECT_EQ(unlimited.Current().running_limits.count("bob"), 0u) << "no limit anywhere: not listed";
}

TEST_F(AccountTermsTest, ReReadAtMostEveryRefreshPeriod) {
  ASSERT_TRUE(Add("alice", 1, 5).ok());
  AccountTermsCache terms(store_.get(), &clock_, 0, {});
  EXPECT_EQ(terms.Current().running_limits.size(), 1u);
  ASSERT_TRUE(Add("carol", 1, 2).ok());
  clock_.AdvanceMs(AccountTermsCache::kRefreshMs - 1);
  EXPECT_EQ(terms.Current().running_limits.count("carol"), 0u) << "within the period: the terms read before";
  clock_.AdvanceMs(1);
  EXPECT_EQ(terms.Current().running_limits.at("carol"), 2);
}

}  // namespace
}  // namespace idlegrid::coordinator
