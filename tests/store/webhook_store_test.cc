// Webhook rows (schema v18) in both store backends: a row registered once
// (a replayed submit keeps the first), due rows by state and time, a
// compare-and-set update that lets one of two claimants win, a subject's
// deliveries, and the upgrade from v17.
#include <gtest/gtest.h>

#include <string>

#include "store/store.h"
#include "store/store_fixture.h"

namespace idlegrid::store {
namespace {

using namespace backends;  // NOLINT: the shared fixture and helpers

class WebhookStoreTest : public StoreFixture, public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override { CreateDatabase(GetParam()); }

  static WebhookRow Waiting(const std::string& job, int64_t next_ms) {
    WebhookRow row;
    row.delivery.set_id("wh-" + job);
    row.delivery.set_subject("job");
    row.delivery.set_subject_id(job);
    row.delivery.set_url("http://127.0.0.1:9/hook");
    row.delivery.set_state("waiting");
    row.delivery.set_next_attempt_ms(next_ms);
    row.secret = "s3cret";
    return row;
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, WebhookStoreTest, ::testing::Values(BackendKind::kSqlite, BackendKind::kPostgres),
                         [](const auto& info) { return backends::BackendName(info.param); });

TEST_P(WebhookStoreTest, RegisteredOnceAndDueByStateAndTime) {
  ASSERT_TRUE(store_->AddWebhook(Waiting("j1", 1000)).ok());
  ASSERT_TRUE(store_->AddWebhook(Waiting("j2", 3000)).ok());
  WebhookRow replay = Waiting("j1", 5000);
  replay.secret = "other";
  ASSERT_TRUE(store_->AddWebhook(replay).ok());  // kept as first stored

  auto due = store_->DueWebhooks("waiting", 2000, 10);
  ASSERT_TRUE(due.ok()) << due.status().ToString();
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].delivery.subject_id(), "j1");
  EXPECT_EQ((*due)[0].secret, "s3cret");
  EXPECT_EQ((*due)[0].delivery.next_attempt_ms(), 1000);
  EXPECT_EQ(store_->DueWebhooks("waiting", 5000, 10)->size(), 2u);
  EXPECT_EQ(store_->DueWebhooks("waiting", 5000, 1)->size(), 1u);
  EXPECT_TRUE(store_->DueWebhooks("pending", 5000, 10)->empty());
}

TEST_P(WebhookStoreTest, UpdateIsACompareAndSetOnStateAndTime) {
  ASSERT_TRUE(store_->AddWebhook(Waiting("j1", 1000)).ok());
  WebhookRow pending = Waiting("j1", 1000);
  pending.delivery.set_state("pending");
  pending.delivery.set_next_attempt_ms(1500);
  pending.body = "{\"event\":\"job.succeeded\"}";
  auto won = store_->UpdateWebhook(pending, "waiting", 1000);
  ASSERT_TRUE(won.ok()) << won.status().ToString();
  EXPECT_TRUE(*won);
  // A second claimant read the same waiting row: it loses, writing nothing.
  WebhookRow late = Waiting("j1", 1000);
  late.delivery.set_state("failed");
  EXPECT_FALSE(*store_->UpdateWebhook(late, "waiting", 1000));
  auto due = store_->DueWebhooks("pending", 2000, 10);
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].body, pending.body);
  EXPECT_EQ((*due)[0].delivery.state(), "pending");
  // A stale next time loses too.
  EXPECT_FALSE(*store_->UpdateWebhook(late, "pending", 1000));

  auto of = store_->WebhooksOf("job", "j1");
  ASSERT_TRUE(of.ok());
  ASSERT_EQ(of->size(), 1u);
  EXPECT_EQ((*of)[0].state(), "pending");
  EXPECT_TRUE(store_->WebhooksOf("job", "j2")->empty());
  EXPECT_TRUE(store_->WebhooksOf("workflow", "j1")->empty());
}

TEST_P(WebhookStoreTest, UpgradesFromV17) {
  ASSERT_TRUE(store_->CreateJob("j1", Spec(), "sha256:spec", 1000).ok());
  store_.reset();
  ASSERT_TRUE(db_->Exec(kUndoV18).ok());
  ASSERT_TRUE(db_->SetSchemaVersion(17).ok());
  Open();
  EXPECT_EQ(*db_->SchemaVersion(), LatestSchemaVersion(GetParam()));
  EXPECT_GE(LatestSchemaVersion(GetParam()), 18);
  EXPECT_TRUE(store_->AddWebhook(Waiting("j1", 1000)).ok());
  EXPECT_EQ(store_->WebhooksOf("job", "j1")->size(), 1u);
}

}  // namespace
}  // namespace idlegrid::store
