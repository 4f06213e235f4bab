// A node's attempt history (AttemptStore::NodeAttempts, schema v19) in both
// store backends: newest first, pages that neither skip nor repeat attempts
// of one dispatch pass (which share their assignment time), only the node's
// own attempts, as GetJob shows them; and the upgrade from v18.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "store/store.h"
#include "store/store_fixture.h"

namespace idlegrid::store {
namespace {

using namespace backends;  // NOLINT: the shared fixture and helpers

class NodeHistoryStoreTest : public StoreFixture, public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override { CreateDatabase(GetParam()); }

  // Every page of n1's history, `limit` at a time, as attempt ids.
  std::vector<std::vector<std::string>> Pages(size_t limit) {
    std::vector<std::vector<std::string>> pages;
    std::optional<jobs::AttemptCursor> before;
    for (int guard = 0; guard < 20; ++guard) {
      auto rows = store_->NodeAttempts("n1", before, limit);
      EXPECT_TRUE(rows.ok()) << rows.status().ToString();
      if (!rows.ok() || rows->empty()) break;
      std::vector<std::string> ids;
      for (const auto& r : *rows) ids.push_back(r.attempt.id());
      pages.push_back(ids);
      if (rows->size() < limit) break;
      before = rows->back().cursor;
    }
    return pages;
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, NodeHistoryStoreTest,
                         ::testing::Values(BackendKind::kSqlite, BackendKind::kPostgres),
                         [](const auto& info) { return backends::BackendName(info.param); });

TEST_P(NodeHistoryStoreTest, NewestFirstInPagesThatNeitherSkipNorRepeat) {
  CreateJob("j", SpecOptions{.array_count = 8});
  // One dispatch pass places tasks 0-3 at 2000 ms, the next 4-6 at 3000 ms;
  // task 7 runs on another node.
  std::vector<NewAttempt> first, second;
  for (uint32_t i = 0; i < 4; ++i) first.push_back({"a" + std::to_string(i), "j", i, "n1", 2000});
  for (uint32_t i = 4; i < 7; ++i) second.push_back({"a" + std::to_string(i), "j", i, "n1", 3000});
  ASSERT_EQ(store_->CommitAssignments(first)->size(), 4u);
  ASSERT_EQ(store_->CommitAssignments(second)->size(), 3u);
  Assign("j", 7, "a7", "n2", 3500);

  using Ids = std::vector<std::string>;
  EXPECT_EQ(Pages(3), (std::vector<Ids>{{"a6", "a5", "a4"}, {"a3", "a2", "a1"}, {"a0"}}));
  EXPECT_EQ(Pages(2), (std::vector<Ids>{{"a6", "a5"}, {"a4", "a3"}, {"a2", "a1"}, {"a0"}}));
  EXPECT_EQ(Pages(50), (std::vector<Ids>{{"a6", "a5", "a4", "a3", "a2", "a1", "a0"}}));
  auto none = store_->NodeAttempts("n-unknown", std::nullopt, 10);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_P(NodeHistoryStoreTest, EachRowIsTheAttemptAsItsJobShowsIt) {
  CreateJob("j", SpecOptions{.array_count = 2});
  Assign("j", 1, "a1", "n1", 2000);
  ReportOk("n1", Report("a1", v1::STARTED), 2500);
  ReportOk("n1", Report("a1", v1::EXITED, 4), 4000);
  auto rows = store_->NodeAttempts("n1", std::nullopt, 10);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 1u);
  const NodeAttemptRow& row = (*rows)[0];
  EXPECT_EQ(row.job_id, "j");
  EXPECT_EQ(row.task_index, 1u);
  EXPECT_EQ(row.cursor.assigned_ms, 2000);
  auto job = store_->GetJob("j");
  ASSERT_TRUE(job.ok());
  ASSERT_EQ(job->tasks(1).attempts_size(), 1);
  EXPECT_EQ(row.attempt.SerializeAsString(), job->tasks(1).attempts(0).SerializeAsString())
      << row.attempt.DebugString() << "\nvs\n"
      << job->tasks(1).attempts(0).DebugString();
  EXPECT_EQ(row.attempt.exit_code(), 4);
  EXPECT_EQ(row.attempt.finished_at_ms(), 4000);
}

TEST_P(NodeHistoryStoreTest, UpgradesFromV18) {
  CreateJob("j");
  Assign("j", 0, "a0", "n1", 2000);
  store_.reset();
  ASSERT_TRUE(db_->Exec(kUndoV19).ok());
  ASSERT_TRUE(db_->SetSchemaVersion(18).ok());
  Open();
  EXPECT_EQ(*db_->SchemaVersion(), LatestSchemaVersion(GetParam()));
  EXPECT_GE(LatestSchemaVersion(GetParam()), 19);
  auto rows = store_->NodeAttempts("n1", std::nullopt, 10);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].attempt.id(), "a0");
}

}  // namespace
}  // namespace idlegrid::store
