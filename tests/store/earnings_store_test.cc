// Store::ProviderAttempts on both backends: a provider's nodes' succeeded
// attempts, newest first, with what earnings are computed from (placement,
// vote, node). Which of them count is market/earnings.h's to say.
#include <gtest/gtest.h>

#include <string>

#include "store/store.h"
#include "store/store_fixture.h"

namespace idlegrid::store {
namespace {

using namespace backends;  // NOLINT: the shared fixture and helpers

class EarningsStoreTest : public StoreFixture, public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override { CreateDatabase(GetParam()); }

  void RunPriced(const std::string& job, const std::string& attempt, const std::string& node, int64_t at_ms,
                 int32_t exit_code = 0) {
    CreateJob(job);
    NewAttempt a{attempt, job, 0, node, at_ms};
    a.placement.set_price_per_hour(1.5);
    auto r = store_->CommitAssignments({a});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->size(), 1u);
    ReportOk(node, Report(attempt, v1::STARTED), at_ms + 10);
    ReportOk(node, Report(attempt, v1::EXITED, exit_code), at_ms + 1000);
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, EarningsStoreTest, ::testing::Values(BackendKind::kSqlite, BackendKind::kPostgres),
                         [](const auto& info) { return backends::BackendName(info.param); });

TEST_P(EarningsStoreTest, AProvidersSucceededAttemptsNewestFirstWithTheirPlacement) {
  AddNode("n1", "alice");
  AddNode("n2", "alice");
  AddNode("n3", "bob");
  RunPriced("j1", "a1", "n1", 2000);
  RunPriced("j2", "a2", "n2", 5000);
  RunPriced("j3", "a3", "n3", 6000);              // bob's
  RunPriced("j4", "a4", "n1", 7000, /*exit=*/1);  // failed: earns nothing
  auto got = store_->ProviderAttempts("alice", 0, 10);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].id(), "a2");
  EXPECT_EQ((*got)[0].node_id(), "n2");
  EXPECT_EQ((*got)[1].id(), "a1");
  EXPECT_EQ((*got)[1].state(), v1::SUCCEEDED);
  EXPECT_EQ((*got)[1].started_at_ms(), 2010);
  EXPECT_EQ((*got)[1].finished_at_ms(), 3000);
  EXPECT_DOUBLE_EQ((*got)[1].placement().price_per_hour(), 1.5);
  EXPECT_EQ((*got)[1].vote(), "");
  // Since and limit.
  auto recent = store_->ProviderAttempts("alice", 4000, 10);
  ASSERT_TRUE(recent.ok());
  ASSERT_EQ(recent->size(), 1u);
  EXPECT_EQ((*recent)[0].id(), "a2");
  auto one = store_->ProviderAttempts("alice", 0, 1);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].id(), "a2");
  auto nobody = store_->ProviderAttempts("carol", 0, 10);
  ASSERT_TRUE(nobody.ok());
  EXPECT_TRUE(nobody->empty());
}

}  // namespace
}  // namespace idlegrid::store
