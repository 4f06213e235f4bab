// What only the SQLite store promises (the shared contract is in
// store_test.cc and runs here too): its file format and journal mode.
// TEST_F(SqliteStoreTest, ...) runs on SQLite only.
#include <gtest/gtest.h>

#include "store/store_fixture.h"

namespace idlegrid::store {
namespace {

using namespace backends;  // NOLINT: the shared fixture and helpers

class SqliteStoreTest : public StoreFixture, public ::testing::Test {
 protected:
  void SetUp() override { CreateDatabase(BackendKind::kSqlite); }
};

TEST_F(SqliteStoreTest, DatabaseIsInWalModeWithTheNodeIdentityColumns) {
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM pragma_journal_mode WHERE journal_mode = 'wal'"), 1);
  // v2 added node identity columns and per-attempt GPU holds.
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM pragma_table_info('nodes') WHERE name = 'public_key'"), 1);
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM pragma_table_info('attempts') WHERE name = 'devices'"), 1);
}

// v9 copied each job's reservation and queue timeout into its row and its
// order into its tasks: a database written before v9 is backfilled from the
// stored specs, so its queue keeps its order and its timeouts still fire.
TEST_F(SqliteStoreTest, MigratingToV9BackfillsJobColumnsFromStoredSpecs) {
  CreateJob("j1", {.array_count = 2, .queue_timeout_seconds = 60, .cpu = 0.5});
  CreateJob("j2", {.queue_timeout_seconds = 0, .cpu = 2});
  Assign("j1", 0, "a1", "n1");
  store_.reset();
  // Back to v8: drop what v9 to v14 added (DROP COLUMN refuses indexed columns).
  ASSERT_TRUE(db_->Exec(kUndoV18).ok());
  ASSERT_TRUE(db_->Exec(kUndoV17).ok());
  ASSERT_TRUE(db_->Exec(kUndoV16).ok());
  ASSERT_TRUE(db_->Exec(kUndoV15).ok());
  ASSERT_TRUE(db_->Exec("ALTER TABLE attempts DROP COLUMN receipt").ok());
  ASSERT_TRUE(db_->Exec("ALTER TABLE attempts DROP COLUMN provenance").ok());
  ASSERT_TRUE(
      db_->Exec("DROP INDEX jobs_by_account; DROP INDEX api_tokens_by_id; DROP INDEX artifact_refs_by_holder; "
                "DROP INDEX artifact_refs_by_account; DROP TABLE artifact_refs; DROP TABLE join_tokens; "
                "DROP TABLE accounts; ALTER TABLE jobs DROP COLUMN account; "
                "ALTER TABLE jobs DROP COLUMN retention_ms; ALTER TABLE nodes DROP COLUMN provider; "
                "ALTER TABLE artifacts DROP COLUMN public; ALTER TABLE api_tokens DROP COLUMN id; "
                "ALTER TABLE api_tokens DROP COLUMN account; ALTER TABLE api_tokens DROP COLUMN scopes; "
                "ALTER TABLE api_tokens DROP COLUMN expires_ms; ALTER TABLE api_tokens DROP COLUMN revoked_ms; "
                "ALTER TABLE api_tokens DROP COLUMN name; "
                "INSERT INTO api_tokens(hash, role, created_ms) VALUES('sha256:0123456789abcdef99', 'admin', 1)")
          .ok());
  ASSERT_TRUE(db_->Exec("DROP TABLE ledger_entries; DROP TABLE ledger_postings; DROP TABLE ledger_balances; DROP TABLE "
                        "ledger_settlement")
                  .ok());  // v13: the ledger
  ASSERT_TRUE(db_->Exec("DROP INDEX logs_by_task_part; DROP TABLE log_usage; ALTER TABLE logs DROP COLUMN part; "
                        "DROP INDEX tasks_by_state; DROP INDEX attempts_by_node; DROP INDEX attempts_by_node_assigned; "
                        "ALTER TABLE jobs DROP COLUMN cpu; ALTER TABLE jobs DROP COLUMN memory; "
                        "ALTER TABLE jobs DROP COLUMN gpus; ALTER TABLE jobs DROP COLUMN gpu_memory; "
                        "ALTER TABLE jobs DROP COLUMN runtime; ALTER TABLE jobs DROP COLUMN queue_timeout_ms; "
                        "ALTER TABLE tasks DROP COLUMN job_seq; ALTER TABLE attempts DROP COLUMN seq; "
                        "CREATE INDEX tasks_by_state ON tasks(state, queued_ms); PRAGMA user_version = 8")
                  .ok());
  Open();
  EXPECT_EQ(*db_->SchemaVersion(), LatestSchemaVersion(BackendKind::kSqlite));
  EXPECT_EQ(QueryInt("SELECT queue_timeout_ms FROM jobs WHERE id = 'j1'"), 60000);
  EXPECT_EQ(QueryInt("SELECT queue_timeout_ms FROM jobs WHERE id = 'j2'"), 0);
  EXPECT_EQ(QueryInt("SELECT CAST(cpu * 1000 AS INTEGER) FROM jobs WHERE id = 'j2'"), 2000);
  EXPECT_EQ(QueryInt("SELECT memory FROM jobs WHERE id = 'j1'"), 1 << 28);
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM tasks t JOIN jobs j ON j.id = t.job_id WHERE t.job_seq <> j.seq"), 0);
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM attempts WHERE seq = 0"), 0);
  auto queued = store_->QueuedTasks(10, 1000);
  ASSERT_TRUE(queued.ok()) << queued.status().ToString();
  ASSERT_EQ(queued->size(), 2u);
  EXPECT_EQ((*queued)[0].job_id, "j1");
  EXPECT_EQ((*queued)[1].job_id, "j2");
  auto expired = store_->ExpireQueuedTasks(1000 + 61000);
  ASSERT_TRUE(expired.ok()) << expired.status().ToString();
  EXPECT_EQ(*expired, 1) << "j1's queued task times out; j2 has no timeout";
  // v11 (tenancy): what existed belongs to the operator account, and the
  // old administrator token is the operator's, with every scope.
  EXPECT_EQ(store_->GetJob("j2")->account(), kOperatorAccount);
  auto token = store_->TokenByHash("sha256:0123456789abcdef99");
  ASSERT_TRUE(token.ok() && token->has_value()) << token.status().ToString();
  EXPECT_EQ((*token)->account, kOperatorAccount);
  EXPECT_EQ((*token)->role, "operator");
  EXPECT_EQ((*token)->scopes, 15u);
  EXPECT_EQ((*token)->id, "0123456789abcdef");
}

}  // namespace
}  // namespace idlegrid::store
