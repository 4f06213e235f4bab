#include "artifacts/artifact_store.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

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

// An interrupted upload keeps its bytes for the same uploader, and a resume
// re-hashes them: the blob published is verified whole.
TEST_F(ArtifactStoreTest, AnInterruptedUploadIsKeptAndResumedByItsUploaderOnly) {
  const std::string data = "0123456789abcdefghij";
  const std::string digest = Sha256Digest(data);
  {
    auto w = store_->NewResumableWriter(digest, data.size(), "account alice", 0);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_TRUE((*w)->Append(data.data(), 8).ok());
    EXPECT_TRUE((*w)->keeps_partial());
  }  // the stream ended early
  EXPECT_EQ(store_->PartialBytes(digest, "account alice"), 8u);
  EXPECT_EQ(store_->PartialBytes(digest, "account bob"), 0u);
  EXPECT_EQ(store_->PartialBytesOf("account alice"), 8u);
  EXPECT_EQ(store_->PartialBytesOf("account alice", digest), 0u);
  EXPECT_FALSE(store_->Has(digest));

  auto resumed = store_->NewResumableWriter(digest, data.size(), "account alice", 8);
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  EXPECT_EQ((*resumed)->size(), 8u);
  ASSERT_TRUE((*resumed)->Append(data.data() + 8, data.size() - 8).ok());
  auto committed = (*resumed)->Commit();
  ASSERT_TRUE(committed.ok()) << committed.status().ToString();
  EXPECT_EQ(*ReadFile(store_->PathOf(digest)), data);
  resumed->reset();
  EXPECT_EQ(store_->PartialBytes(digest, "account alice"), 0u);
}

TEST_F(ArtifactStoreTest, AResumeNeedsTheBytesItClaimsAndTheirDigest) {
  const std::string data = "the whole of the blob";
  const std::string digest = Sha256Digest(data);
  {
    auto w = store_->NewResumableWriter(digest, data.size(), "node n-1", 0);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append(data.data(), 5).ok());
  }
  auto too_far = store_->NewResumableWriter(digest, data.size(), "node n-1", 9);
  ASSERT_EQ(too_far.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(too_far.status().message().find("offset 9"), std::string::npos) << too_far.status().ToString();
  EXPECT_NE(too_far.status().message().find("only 5 bytes"), std::string::npos) << too_far.status().ToString();
  EXPECT_EQ(store_->PartialBytes(digest, "node n-1"), 5u) << "a refused resume dropped the kept bytes";
  EXPECT_EQ(store_->NewResumableWriter(digest, data.size(), "node n-1", data.size() + 1).status().code(),
            Code::kInvalidArgument);

  // Tamper with the kept bytes: the resume goes through, the commit does not.
  ASSERT_TRUE(WriteFileAtomic(store_->PartialPathOf(digest, "node n-1"), "THE w").ok());
  auto resumed = store_->NewResumableWriter(digest, data.size(), "node n-1", 5);
  ASSERT_TRUE(resumed.ok());
  ASSERT_TRUE((*resumed)->Append(data.data() + 5, data.size() - 5).ok());
  EXPECT_EQ((*resumed)->Commit().status().code(), Code::kDataLoss);
  resumed->reset();
  EXPECT_FALSE(store_->Has(digest));
  EXPECT_EQ(store_->PartialBytes(digest, "node n-1"), 0u) << "a partial that failed verification was kept";
}

TEST_F(ArtifactStoreTest, AWriterThatFailsDropsItsPartial) {
  const std::string digest = Sha256Digest("four");
  auto w = store_->NewResumableWriter(digest, 4, "account alice", 0);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->Append("12345", 5).code(), Code::kInvalidArgument);
  w->reset();
  EXPECT_EQ(store_->PartialBytes(digest, "account alice"), 0u);
}

// A resume that arrives while the writer it replaces still holds the
// partial waits for it (a second open would be refused by its flock).
TEST_F(ArtifactStoreTest, AResumeWaitsForTheWriterItReplaces) {
  const std::string data = "waiting for the old handler";
  const std::string digest = Sha256Digest(data);
  auto old_writer = store_->NewResumableWriter(digest, data.size(), "account alice", 0);
  ASSERT_TRUE(old_writer.ok());
  ASSERT_TRUE((*old_writer)->Append(data.data(), 10).ok());
  Result<std::unique_ptr<BlobWriter>> resumed = Status::Internal("not run");
  std::thread resume([&] { resumed = store_->NewResumableWriter(digest, data.size(), "account alice", 10); });
  old_writer->reset();
  resume.join();
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  ASSERT_TRUE((*resumed)->Append(data.data() + 10, data.size() - 10).ok());
  EXPECT_TRUE((*resumed)->Commit().ok());
}

// Sparse files stand in for large partials: one uploader keeps at most
// kMaxArtifactBytes of them, its oldest going first; others' stay.
TEST_F(ArtifactStoreTest, OneUploadersPartialsStayUnderTheBlobCap) {
  const std::string a = Sha256Digest("a"), b = Sha256Digest("b");
  auto sparse = [](const std::string& path, uint64_t size) {
    int fd = ::open(path.c_str(), O_CREAT | O_WRONLY, 0600);
    ASSERT_GE(fd, 0) << path;
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(size)), 0);
    ::close(fd);
  };
  sparse(store_->PartialPathOf(a, "account alice"), 10ull << 30);
  sparse(store_->PartialPathOf(a, "account bob"), 10ull << 30);
  auto w = store_->NewResumableWriter(b, 8ull << 30, "account alice", 0);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(store_->PartialBytes(a, "account alice"), 0u) << "alice's older partial was not evicted";
  EXPECT_EQ(store_->PartialBytes(a, "account bob"), 10ull << 30) << "bob's partial went for alice's upload";
}

TEST_F(ArtifactStoreTest, StalePartialsAreRemovedAtInit) {
  const std::string digest = Sha256Digest("stale");
  {
    auto w = store_->NewResumableWriter(digest, 10, "account alice", 0);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append("stal", 4).ok());
  }
  ManualClock day_later(SystemClock::Get()->NowMs() + kPartialMaxAgeMs - 60'000);
  ArtifactStore not_yet(root_, &day_later);
  ASSERT_TRUE(not_yet.Init().ok());
  EXPECT_EQ(not_yet.PartialBytes(digest, "account alice"), 4u) << "removed before its day was up";
  day_later.AdvanceMs(120'000);
  ArtifactStore later(root_, &day_later);
  ASSERT_TRUE(later.Init().ok());
  EXPECT_EQ(later.PartialBytes(digest, "account alice"), 0u);
}

}  // namespace
}  // namespace idlegrid::artifacts
