#include "artifacts/artifact_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "common/digest.h"
#include "common/fs.h"

namespace idlegrid::artifacts {
namespace {

class ArtifactStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/igart-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    store_ = std::make_unique<ArtifactStore>(root_);
    ASSERT_TRUE(store_->Init().ok());
  }
  void TearDown() override { (void)RemoveTree(root_); }
  size_t TempFiles() {
    size_t n = 0;
    for (auto& e : std::filesystem::directory_iterator(root_ + "/tmp")) n += e.is_regular_file();
    return n;
  }
  std::string root_;
  std::unique_ptr<ArtifactStore> store_;
};

TEST_F(ArtifactStoreTest, BlobBecomesVisibleOnlyAfterItsDigestChecks) {
  const std::string data = "hello artifacts";
  const std::string digest = Sha256Digest(data);
  auto w = store_->NewWriter(digest, data.size());
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Append(data.data(), data.size()).ok());
  EXPECT_FALSE(store_->Has(digest)) << "visible before commit";
  auto committed = (*w)->Commit();
  ASSERT_TRUE(committed.ok()) << committed.status().ToString();
  EXPECT_EQ(*committed, digest);
  EXPECT_TRUE(store_->Has(digest));
  EXPECT_EQ(*ReadFile(store_->PathOf(digest)), data);
  EXPECT_EQ(*store_->SizeOf(digest), data.size());
  EXPECT_EQ(TempFiles(), 0u);
}

TEST_F(ArtifactStoreTest, WrongBytesAreDiscardedNotStored) {
  const std::string claimed = Sha256Digest("what was announced");
  auto w = store_->NewWriter(claimed, 0);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Append("something else", 14).ok());
  auto committed = (*w)->Commit();
  EXPECT_EQ(committed.status().code(), Code::kDataLoss);
  EXPECT_FALSE(store_->Has(claimed));
  EXPECT_FALSE(store_->Has(Sha256Digest("something else")));
  w->reset();
  EXPECT_EQ(TempFiles(), 0u) << "a failed upload left its temp file";
}

TEST_F(ArtifactStoreTest, SizeIsCheckedBothWaysAndCapped) {
  auto longer = store_->NewWriter("", 4);
  ASSERT_TRUE(longer.ok());
  EXPECT_EQ((*longer)->Append("12345", 5).code(), Code::kInvalidArgument);
  auto shorter = store_->NewWriter("", 10);
  ASSERT_TRUE(shorter.ok());
  ASSERT_TRUE((*shorter)->Append("123", 3).ok());
  EXPECT_EQ((*shorter)->Commit().status().code(), Code::kDataLoss);
  EXPECT_EQ(store_->NewWriter("", kMaxArtifactBytes + 1).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->NewWriter("sha256:nothex", 0).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->SizeOf(Sha256Digest("absent")).status().code(), Code::kNotFound);
  EXPECT_FALSE(store_->Has("../../etc/passwd"));
}

}  // namespace
}  // namespace idlegrid::artifacts
