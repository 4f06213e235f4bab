// Artifact rights (coordinator/artifact_rights.h) on their own: a real
// SQLite store with a two-task job whose tasks read their own shards, a
// manual clock, no coordinator. A token is bound to attempt, node and lease;
// with it a node reads its attempt's image archive and own task's input,
// never the other task's, and writes only while its lease lives; an upload
// is its uploader's to use until a job holds it.
#include "coordinator/artifact_rights.h"

#include <gtest/gtest.h>

#include <string>

#include "common/digest.h"
#include "common/test_support.h"
#include "manifest/manifest.h"
#include "coordinator/service_fixture.h"

namespace idlegrid::coordinator {
namespace {

const std::string kImage = "sha256:" + std::string(64, 'a');

class ArtifactRightsTest : public ServiceTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(ServiceTest::SetUp());
    images_ = std::make_unique<ImageCatalog>(store_.get(), artifacts_.get(), nullptr, &clock_, ImageCatalog::Options{},
                                             [] {});
    rights_ = std::make_unique<ArtifactRights>(store_.get(), images_.get(), &clock_, "join secret");
    ASSERT_TRUE(store_->RegisterImage({kImage, Sha256Digest("config"), archive_}, clock_.NowMs()).ok());
    for (const char* id : {"n1", "n2"}) {
      store::NodeRecord n;
      n.id = id;
      n.name = id;
      ASSERT_TRUE(store_->UpsertNode(n, std::string("tok-") + id).ok());
    }
    v1::JobSpec spec;
    spec.set_api_version("idlegrid/v1");
    spec.set_name("shards");
    spec.set_image(kImage);
    spec.mutable_resources()->set_cpu(1);
    spec.mutable_resources()->set_memory_bytes(1 << 28);
    spec.set_output_path("/out");
    spec.set_runtime("runc");
    spec.set_array_count(2);
    spec.add_items()->mutable_values()->insert({"shard", shard0_});
    spec.add_items()->mutable_values()->insert({"shard", shard1_});
    v1::InputSpec* input = spec.add_inputs();
    input->set_artifact("{{.shard}}");
    input->set_path("/data.bin");
    ASSERT_TRUE(store_->CreateJob("j1", spec, manifest::SpecDigest(spec), clock_.NowMs()).ok());
    auto committed = store_->CommitAssignments({{"a0", "j1", 0, "n1", clock_.NowMs()}});
    ASSERT_TRUE(committed.ok() && committed->size() == 1u);
    epoch_ = (*committed)[0].lease_epoch;
    token_ = rights_->TokenFor("a0", "n1", epoch_);
  }

  std::unique_ptr<ImageCatalog> images_;
  std::unique_ptr<ArtifactRights> rights_;
  const std::string archive_ = Sha256Digest("archive");
  const std::string shard0_ = Sha256Digest("shard 0");
  const std::string shard1_ = Sha256Digest("shard 1");
  uint64_t epoch_ = 0;
  std::string token_;
};

TEST_F(ArtifactRightsTest, ATokenIsBoundToAttemptNodeAndLease) {
  EXPECT_EQ(token_, rights_->TokenFor("a0", "n1", epoch_)) << "deterministic: any coordinator with the secret agrees";
  EXPECT_NE(token_, rights_->TokenFor("a0", "n2", epoch_));
  EXPECT_NE(token_, rights_->TokenFor("a0", "n1", epoch_ + 1));
  EXPECT_NE(token_, rights_->TokenFor("a1", "n1", epoch_));
  ArtifactRights other(store_.get(), images_.get(), &clock_, "another secret");
  EXPECT_NE(token_, other.TokenFor("a0", "n1", epoch_));
}

TEST_F(ArtifactRightsTest, ANodeReadsItsAttemptsImageAndOwnShardOnlyAndWritesWhileItsLeaseLives) {
  EXPECT_TRUE(rights_->NodeMayRead("n1", "a0", token_, archive_).ok()) << "its image archive";
  EXPECT_TRUE(rights_->NodeMayRead("n1", "a0", token_, shard0_).ok()) << "its own task's input";
  EXPECT_EQ(rights_->NodeMayRead("n1", "a0", token_, shard1_).code(), Code::kNotFound) << "the other task's shard";
  EXPECT_EQ(rights_->NodeMayRead("n1", "a0", token_, Sha256Digest("anything")).code(), Code::kNotFound);
  EXPECT_EQ(rights_->NodeMayRead("n2", "a0", token_, shard0_).code(), Code::kNotFound) << "another node";
  EXPECT_EQ(rights_->NodeMayRead("n1", "a0", "igat_forged", shard0_).code(), Code::kNotFound);
  EXPECT_TRUE(rights_->NodeMayWrite("n1", "a0", token_).ok());
  EXPECT_EQ(rights_->NodeMayWrite("n2", "a0", token_).code(), Code::kNotFound);

  v1::ReportAttemptRequest r;
  r.set_attempt_id("a0");
  r.set_event(v1::STARTED);
  ASSERT_TRUE(store_->ApplyAttemptReport("n1", r, clock_.NowMs()).ok());
  r.set_event(v1::EXITED);
  ASSERT_TRUE(store_->ApplyAttemptReport("n1", r, clock_.NowMs()).ok());
  EXPECT_EQ(rights_->NodeMayWrite("n1", "a0", token_).code(), Code::kNotFound) << "the lease ended with the attempt";
  EXPECT_EQ(rights_->NodeMayRead("n1", "a0", token_, shard0_).code(), Code::kNotFound);
}

TEST_F(ArtifactRightsTest, AnUploadIsItsUploadersToUse) {
  const std::string upload = Sha256Digest("alice's data");
  ASSERT_TRUE(rights_->Record(upload, 12, "input").ok());
  EXPECT_FALSE(*MayUse(*store_, "alice", upload)) << "recorded, not yet held";
  ASSERT_TRUE(rights_->HoldUpload(upload, "alice", /*make_public=*/false).ok());
  EXPECT_TRUE(*MayUse(*store_, "alice", upload));
  EXPECT_FALSE(*MayUse(*store_, "bob", upload));
  ASSERT_TRUE(rights_->HoldUpload(upload, "alice", /*make_public=*/true).ok());
  EXPECT_TRUE(*MayUse(*store_, "bob", upload)) << "public: anyone may name it";
}

}  // namespace
}  // namespace idlegrid::coordinator
