// The retention sweeper (coordinator/retention_sweeper.h) on its own: a real
// SQLite store and artifact store, a manual clock, no coordinator. A settled
// job past its retention is deleted with the input only it held; an upload
// no job used is unlinked once its hold ends; the store is asked at most
// once a minute.
#include "coordinator/retention_sweeper.h"

#include <gtest/gtest.h>

#include <string>

#include "common/test_support.h"
#include "manifest/manifest.h"
#include "coordinator/service_fixture.h"

namespace idlegrid::coordinator {
namespace {

class RetentionSweeperTest : public ServiceTest {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(ServiceTest::SetUp()); }
  // Stores `bytes` as an upload `account` holds for `hold_ms`.
  std::string Upload(const std::string& bytes, const std::string& account, int64_t hold_ms) {
    auto writer = artifacts_->NewWriter("", bytes.size());
    EXPECT_TRUE(writer.ok());
    if (!writer.ok()) return "";
    EXPECT_TRUE((*writer)->Append(bytes.data(), bytes.size()).ok());
    auto digest = (*writer)->Commit();
    EXPECT_TRUE(digest.ok());
    EXPECT_TRUE(store_->RecordArtifact(*digest, bytes.size(), "input", clock_.NowMs()).ok());
    EXPECT_TRUE(store_->AddArtifactRefs({{*digest, "upload:" + account, account, clock_.NowMs() + hold_ms}}).ok());
    return *digest;
  }
  // A job of `account` reading `input`, kept `retention_s` after it settles, cancelled now.
  void SettledJob(const std::string& id, const std::string& input, uint32_t retention_s) {
    v1::JobSpec spec;
    spec.set_api_version("idlegrid/v1");
    spec.set_name(id);
    spec.set_image("sha256:" + std::string(64, 'a'));
    spec.mutable_resources()->set_cpu(1);
    spec.mutable_resources()->set_memory_bytes(1 << 28);
    spec.set_output_path("/out");
    spec.set_runtime("runc");
    spec.set_array_count(1);
    spec.set_retention_seconds(retention_s);
    auto* in = spec.add_inputs();
    in->set_artifact(input);
    in->set_path("/in/data");
    ASSERT_TRUE(store_->CreateJob(id, spec, manifest::SpecDigest(spec), clock_.NowMs(), "alice").ok());
    ASSERT_TRUE(store_->AddArtifactRefs({{input, "job:" + id, "alice", 0}}).ok());
    ASSERT_TRUE(store_->CancelJob(id, clock_.NowMs()).ok());
  }
};

TEST_F(RetentionSweeperTest, ASettledJobPastItsRetentionGoesWithTheInputOnlyItHeld) {
  RetentionSweeper sweeper(store_.get(), artifacts_.get(), &clock_);
  const std::string input = Upload("only this job's input", "alice", 1000);
  SettledJob("j1", input, 60);
  sweeper.Sweep();
  EXPECT_TRUE(store_->GetJob("j1").ok()) << "kept while its retention runs";
  clock_.AdvanceMs(61'000);
  sweeper.Sweep();
  EXPECT_EQ(store_->GetJob("j1").status().code(), Code::kNotFound) << "deleted once its retention ran out";
  EXPECT_FALSE(artifacts_->Has(input)) << "its upload hold had ended and nothing else held it";
}

TEST_F(RetentionSweeperTest, AnUnusedUploadIsUnlinkedOnceItsHoldEndsAndTheStoreIsAskedOnceAMinute) {
  RetentionSweeper sweeper(store_.get(), artifacts_.get(), &clock_);
  const std::string unused = Upload("never used by a job", "bob", 90'000);
  sweeper.Sweep();
  EXPECT_TRUE(artifacts_->Has(unused)) << "held for its grace period";
  clock_.AdvanceMs(RetentionSweeper::kPeriodMs);
  sweeper.Sweep();
  EXPECT_TRUE(artifacts_->Has(unused));
  clock_.AdvanceMs(RetentionSweeper::kPeriodMs - 1);  // the hold has ended, but a sweep is not due
  sweeper.Sweep();
  EXPECT_TRUE(artifacts_->Has(unused)) << "a sweep within kPeriodMs of the last asks nothing";
  clock_.AdvanceMs(1);
  sweeper.Sweep();
  EXPECT_FALSE(artifacts_->Has(unused));
}

TEST_F(RetentionSweeperTest, UnlinkRemovesExactlyTheCollectedBlobs) {
  RetentionSweeper sweeper(store_.get(), artifacts_.get(), &clock_);
  const std::string a = Upload("a", "alice", 1000);
  const std::string b = Upload("b", "alice", 1000);
  store::CollectedArtifacts collected;
  collected.digests = {a};
  sweeper.Unlink(collected);
  EXPECT_FALSE(artifacts_->Has(a));
  EXPECT_TRUE(artifacts_->Has(b));
}

}  // namespace
}  // namespace idlegrid::coordinator
