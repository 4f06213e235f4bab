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

}  // namespace
}  // namespace idlegrid::store
