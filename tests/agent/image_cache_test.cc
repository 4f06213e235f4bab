// The agent's image cache (agent/image_cache.h) with a manual clock: how
// often it asks the runtime whether a verified image is still there.
#include "agent/image_cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "agent/attempt_fakes_support.h"
#include "common/digest.h"
#include "common/fs.h"

namespace idlegrid::agent {
namespace {

class ImageCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/image-cache-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    a_.mutable_spec()->set_image("sha256:" + std::string(64, 'b'));
    a_.set_image_config_digest("sha256:" + std::string(64, 'c'));
    a_.set_image_archive_digest("sha256:" + std::string(64, 'd'));
  }
  void TearDown() override { (void)RemoveTree(dir_); }
  // The marker of an image this agent verified before.
  void MarkVerified() {
    ASSERT_TRUE(WriteFileAtomic(dir_ + "/" + std::string(64, 'b'), a_.image_config_digest()).ok());
  }

  std::string dir_;
  v1::Assignment a_;
  testing::FakeRuntime runtime_;
  testing::FakeArtifacts artifacts_;
  ManualClock clock_;
};

TEST_F(ImageCacheTest, AVerifiedImageIsRecheckedOnlyAfterTheInterval) {
  MarkVerified();
  ImageCache cache(dir_, &runtime_, &artifacts_, &clock_);
  for (int i = 0; i < 3; ++i) {
    auto id = cache.Ensure(a_);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    EXPECT_EQ(*id, std::string(64, 'c'));
  }
  EXPECT_EQ(runtime_.has_image_calls, 1);
  clock_.AdvanceMs(kImageRecheckMs - 1);
  ASSERT_TRUE(cache.Ensure(a_).ok());
  EXPECT_EQ(runtime_.has_image_calls, 1);
  clock_.AdvanceMs(1);
  ASSERT_TRUE(cache.Ensure(a_).ok());
  EXPECT_EQ(runtime_.has_image_calls, 2);
  EXPECT_EQ(runtime_.load_image_calls, 0);
}

TEST_F(ImageCacheTest, AnImageTheRuntimeLostIsFetchedAgain) {
  MarkVerified();
  runtime_.has_image = false;
  ImageCache cache(dir_, &runtime_, &artifacts_, &clock_);
  // The archive is not in the (fake) coordinator's store: the fetch is tried and fails.
  auto id = cache.Ensure(a_);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().message().rfind("image archive: no artifact", 0), 0u) << id.status().message();
  EXPECT_EQ(runtime_.load_image_calls, 0);
}

TEST_F(ImageCacheTest, AnArchiveThatIsNotTheImageIsNeverLoaded) {
  artifacts_.store[a_.image_archive_digest()] = "not a tar archive";
  ImageCache cache(dir_, &runtime_, &artifacts_, &clock_);
  auto id = cache.Ensure(a_);
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find("failed verification"), std::string::npos) << id.status().message();
  EXPECT_EQ(runtime_.load_image_calls, 0);
  EXPECT_EQ(runtime_.has_image_calls, 0);  // no marker: never verified here
  EXPECT_FALSE(PathExists(dir_ + "/" + std::string(64, 'd') + ".tar"));
}

// A coordinator naming a manifest this agent verified (and may trust, say
// for its signature) with another image's config gets nothing from the
// cache: the marker records which config the manifest was verified with.
TEST_F(ImageCacheTest, AVerifiedManifestIsNotTakenForAnotherConfig) {
  MarkVerified();
  ImageCache cache(dir_, &runtime_, &artifacts_, &clock_);
  ASSERT_TRUE(cache.Ensure(a_).ok());
  v1::Assignment swapped = a_;
  swapped.set_image_config_digest("sha256:" + std::string(64, 'e'));
  auto id = cache.Ensure(swapped);
  ASSERT_FALSE(id.ok()) << "served image " << *id;
  EXPECT_EQ(id.status().message().rfind("image archive:", 0), 0u) << "fetched and verified anew: " << id.status().message();
  EXPECT_EQ(runtime_.load_image_calls, 0);
}

}  // namespace
}  // namespace idlegrid::agent
