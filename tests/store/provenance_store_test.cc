// Attempts' provenance records (schema v12) in both store backends: written
// with the attempt's start, read back with the job, kept by a later report,
// and absent (not an error) for attempts stored before v12.
#include <gtest/gtest.h>
#include <google/protobuf/util/message_differencer.h>

#include <string>

#include "store/store.h"
#include "store/store_fixture.h"

namespace idlegrid::store {
namespace {

using namespace backends;  // NOLINT: the shared fixture and helpers
using google::protobuf::util::MessageDifferencer;

class ProvenanceStoreTest : public StoreFixture, public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override { CreateDatabase(GetParam()); }
};

INSTANTIATE_TEST_SUITE_P(Backends, ProvenanceStoreTest, ::testing::Values(BackendKind::kSqlite, BackendKind::kPostgres),
                         [](const auto& info) { return backends::BackendName(info.param); });

v1::Provenance Provenance(const std::string& kernel) {
  v1::Provenance p;
  p.set_image_config_digest("sha256:" + std::string(64, 'c'));
  p.set_image_manifest_digest("sha256:" + std::string(64, 'a'));
  p.set_job_spec_digest("sha256:" + std::string(64, 'd'));
  p.set_driver("runc");
  p.set_runtime("runc");
  p.set_runtime_version("runc version 1.1.12");
  p.set_seccomp_digest("sha256:" + std::string(64, 'e'));
  p.set_job_user("0:0 (host 100000)");
  p.set_kernel_release(kernel);
  p.set_node_id("n1");
  p.set_node_key_fingerprint("sha256:" + std::string(64, 'f'));
  p.add_env_names("IDLEGRID_JOB_ID");
  p.add_env_names("MODE");
  p.set_agent_version("idlegrid-agent/test");
  return p;
}

v1::ReportAttemptRequest WithProvenance(v1::ReportAttemptRequest r, const v1::Provenance& p) {
  *r.mutable_provenance() = p;
  return r;
}

TEST_P(ProvenanceStoreTest, TheProvenanceOfTheStartReadsBackAndALaterReportKeepsIt) {
  CreateJob("j1");
  Assign("j1", 0, "a1", "n1");
  EXPECT_FALSE(TaskOf("j1", 0).attempts(0).has_provenance()) << "an attempt that has not started has none";
  const v1::Provenance started = Provenance("6.1.0-18-amd64");
  ReportOk("n1", WithProvenance(Report("a1", v1::STARTED), started), 3000);
  v1::Attempt a = TaskOf("j1", 0).attempts(0);
  ASSERT_TRUE(a.has_provenance());
  EXPECT_TRUE(MessageDifferencer::Equals(a.provenance(), started)) << a.provenance().DebugString();

  // The exit's copy names the same start; a different one does not rewrite it.
  ReportOk("n1", WithProvenance(Report("a1", v1::EXITED), Provenance("other-kernel")), 4000);
  a = TaskOf("j1", 0).attempts(0);
  EXPECT_EQ(a.state(), v1::SUCCEEDED);
  EXPECT_EQ(a.provenance().kernel_release(), "6.1.0-18-amd64");
  Reopen();
  EXPECT_TRUE(MessageDifferencer::Equals(TaskOf("j1", 0).attempts(0).provenance(), started));
}

TEST_P(ProvenanceStoreTest, AnExitWhoseStartWasLostRecordsItsProvenance) {
  CreateJob("j1");
  Assign("j1", 0, "a1", "n1");
  const v1::Provenance p = Provenance("6.1.0-18-amd64");
  ReportOk("n1", WithProvenance(Report("a1", v1::EXITED), p), 4000);
  const v1::Attempt a = TaskOf("j1", 0).attempts(0);
  EXPECT_EQ(a.state(), v1::SUCCEEDED);
  EXPECT_EQ(a.started_at_ms(), 4000);
  EXPECT_TRUE(MessageDifferencer::Equals(a.provenance(), p)) << a.provenance().DebugString();
}

TEST_P(ProvenanceStoreTest, AStaleReportWritesNoProvenance) {
  CreateJob("j1");
  Assign("j1", 0, "a1", "n1");
  ReportOk("n1", Report("a1", v1::STARTED), 3000);
  ReportOk("n1", Report("a1", v1::EXITED), 4000);
  auto late = store_->ApplyAttemptReport("n1", WithProvenance(Report("a1", v1::STARTED), Provenance("x")), 5000);
  EXPECT_FALSE(late.ok() && late->outcome.changed);
  EXPECT_FALSE(TaskOf("j1", 0).attempts(0).has_provenance());
}

// A database at v11 (before provenance) upgrades in place: its attempts keep
// everything they had and read back with an empty provenance; new ones get one.
TEST_P(ProvenanceStoreTest, UpgradingFromV11KeepsOldAttemptsWithEmptyProvenance) {
  CreateJob("j1");
  Assign("j1", 0, "a1", "n1");
  ReportOk("n1", Report("a1", v1::STARTED), 3000);
  v1::ReportAttemptRequest exited = Report("a1", v1::EXITED);
  auto* out = exited.add_outputs();
  out->set_path("result.txt");
  out->set_digest("sha256:" + std::string(64, '1'));
  out->set_size(2);
  ReportOk("n1", exited, 4000);
  CreateJob("j2");
  Assign("j2", 0, "a2", "n1");
  const v1::Job before = Job("j1");
  store_.reset();
  // Back to v11: undo v14 (the attempts' receipt column) and v13 (the
  // ledger's tables); v12 added the attempts' provenance column.
  ASSERT_TRUE(db_->Exec(kUndoV18).ok());
  ASSERT_TRUE(db_->Exec(kUndoV17).ok());
  ASSERT_TRUE(db_->Exec(kUndoV16).ok());
  ASSERT_TRUE(db_->Exec(kUndoV15).ok());
  ASSERT_TRUE(db_->Exec("ALTER TABLE attempts DROP COLUMN receipt").ok());
  ASSERT_TRUE(db_->Exec("DROP TABLE ledger_entries; DROP TABLE ledger_postings; DROP TABLE ledger_balances; DROP TABLE "
                        "ledger_settlement")
                  .ok());
  ASSERT_TRUE(db_->Exec("ALTER TABLE attempts DROP COLUMN provenance").ok());
  ASSERT_TRUE(db_->SetSchemaVersion(11).ok());

  Open();
  EXPECT_EQ(*db_->SchemaVersion(), LatestSchemaVersion(GetParam()));
  EXPECT_GE(LatestSchemaVersion(GetParam()), 12);
  const v1::Job after = Job("j1");
  EXPECT_TRUE(MessageDifferencer::Equals(after, before)) << "before:\n"
                                                         << before.DebugString() << "after:\n"
                                                         << after.DebugString();
  EXPECT_FALSE(after.tasks(0).attempts(0).has_provenance());
  EXPECT_EQ(after.tasks(0).attempts(0).outputs_size(), 1);
  // An attempt stored before the upgrade records a provenance when it starts.
  const v1::Provenance p = Provenance("6.1.0-18-amd64");
  ReportOk("n1", WithProvenance(Report("a2", v1::STARTED), p), 5000);
  EXPECT_TRUE(MessageDifferencer::Equals(TaskOf("j2", 0).attempts(0).provenance(), p));
}

TEST_P(ProvenanceStoreTest, AProvenanceThatDoesNotParseIsDataLoss) {
  CreateJob("j1");
  Assign("j1", 0, "a1", "n1");
  ReportOk("n1", WithProvenance(Report("a1", v1::STARTED), Provenance("k")), 3000);
  // A length-delimited field that runs past the end of the blob.
  const std::string damage = GetParam() == BackendKind::kSqlite
                                 ? "UPDATE attempts SET provenance = x'0aff' WHERE id = 'a1'"
                                 : "UPDATE attempts SET provenance = '\\x0aff'::bytea WHERE id = 'a1'";
  ASSERT_TRUE(db_->Exec(damage).ok());
  auto job = store_->GetJob("j1");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), Code::kDataLoss) << job.status().ToString();
  EXPECT_NE(job.status().message().find("a1"), std::string::npos) << job.status().ToString();
}

}  // namespace
}  // namespace idlegrid::store
