// The agent's image cache (agent/image_cache.h) with a manual clock: how
// often it asks the runtime whether a verified image is still there; and
// registry images pulled from a real registry (e2e/registry_support.h),
// verified and cached like pushed ones.
#include "agent/image_cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "agent/attempt_fakes_support.h"
#include "common/digest.h"
#include "common/fs.h"
#include "e2e/registry_support.h"
#include "image/oci_builder.h"

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
  ImageCache cache(dir_, &runtime_, &artifacts_, nullptr, &clock_);
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
  ImageCache cache(dir_, &runtime_, &artifacts_, nullptr, &clock_);
  // The archive is not in the (fake) coordinator's store: the fetch is tried and fails.
  auto id = cache.Ensure(a_);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().message().rfind("image archive: no artifact", 0), 0u) << id.status().message();
  EXPECT_EQ(runtime_.load_image_calls, 0);
}

TEST_F(ImageCacheTest, AnArchiveThatIsNotTheImageIsNeverLoaded) {
  artifacts_.store[a_.image_archive_digest()] = "not a tar archive";
  ImageCache cache(dir_, &runtime_, &artifacts_, nullptr, &clock_);
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
  ImageCache cache(dir_, &runtime_, &artifacts_, nullptr, &clock_);
  ASSERT_TRUE(cache.Ensure(a_).ok());
  v1::Assignment swapped = a_;
  swapped.set_image_config_digest("sha256:" + std::string(64, 'e'));
  auto id = cache.Ensure(swapped);
  ASSERT_FALSE(id.ok()) << "served image " << *id;
  EXPECT_EQ(id.status().message().rfind("image archive:", 0), 0u)
      << "fetched and verified anew: " << id.status().message();
  EXPECT_EQ(runtime_.load_image_calls, 0);
}

class RegistryImageCacheTest : public ImageCacheTest {
 protected:
  void SetUp() override {
    ImageCacheTest::SetUp();
    if (std::string missing = idlegrid::testing::RegistryToolsMissing(); !missing.empty()) GTEST_SKIP() << missing;
    auto registry = idlegrid::testing::TestRegistry::Start(dir_);
    ASSERT_TRUE(registry.ok()) << registry.status().ToString();
    registry_ = std::move(*registry);
    auto built =
        image::BuildOciArchive({{"/hello", "hello\n", 0644}}, {"/hello"}, "igtest/hello:v1", dir_ + "/built.tar");
    ASSERT_TRUE(built.ok()) << built.status().ToString();
    built_ = *built;
    ASSERT_TRUE(registry_->Push(built_.archive_path, "igtest/hello:v1").ok());
    registry::SkopeoOptions options;
    options.ca_files[registry_->host()] = registry_->ca_file();
    options.work_dir = dir_ + "/registry-client";
    client_ = registry::NewSkopeoClient(options);
    a_.mutable_spec()->set_image(registry_->host() + "/igtest/hello@" + built_.manifest_digest);
    a_.set_image_config_digest(built_.config_digest);
    a_.clear_image_archive_digest();  // nothing to download from the coordinator
  }
  void TearDown() override {
    registry_.reset();
    ImageCacheTest::TearDown();
  }
  std::string Cache() const { return dir_ + "/cache"; }

  std::unique_ptr<idlegrid::testing::TestRegistry> registry_;
  std::unique_ptr<registry::RegistryClient> client_;
  image::BuiltImage built_;
};

TEST_F(RegistryImageCacheTest, PullsVerifiesLoadsAndCachesByDigest) {
  runtime_.has_image = false;  // nothing loaded yet
  ImageCache cache(Cache(), &runtime_, &artifacts_, client_.get(), &clock_);
  auto id = cache.Ensure(a_);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(*id, DigestHex(built_.config_digest));
  EXPECT_EQ(runtime_.load_image_calls, 1);
  // Marked as verified under its manifest digest, like a pushed image, and
  // the pulled archive is gone once loaded.
  EXPECT_TRUE(PathExists(Cache() + "/" + DigestHex(built_.manifest_digest)));
  EXPECT_EQ(RegularFilesUnder(Cache()), std::vector<std::string>{DigestHex(built_.manifest_digest)});
  // Cached: with the registry gone, the next attempt needs nothing from it.
  runtime_.has_image = true;
  registry_.reset();
  auto again = cache.Ensure(a_);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(runtime_.load_image_calls, 1);
}

TEST_F(RegistryImageCacheTest, AConfigOtherThanTheCoordinatorsIsNeverLoaded) {
  a_.set_image_config_digest("sha256:" + std::string(64, 'f'));
  ImageCache cache(Cache(), &runtime_, &artifacts_, client_.get(), &clock_);
  auto id = cache.Ensure(a_);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), Code::kDataLoss) << id.status().ToString();
  EXPECT_EQ(runtime_.load_image_calls, 0);
  EXPECT_TRUE(RegularFilesUnder(Cache()).empty());
}

TEST_F(RegistryImageCacheTest, ADigestTheRegistryLacksFailsWithItsNameAndLeavesNothing) {
  const std::string missing = "sha256:" + std::string(64, '0');
  a_.mutable_spec()->set_image(registry_->host() + "/igtest/hello@" + missing);
  ImageCache cache(Cache(), &runtime_, &artifacts_, client_.get(), &clock_);
  auto id = cache.Ensure(a_);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), Code::kNotFound) << id.status().ToString();
  EXPECT_NE(id.status().message().find("registry " + registry_->host()), std::string::npos) << id.status().message();
  EXPECT_NE(id.status().message().find(missing), std::string::npos) << id.status().message();
  EXPECT_EQ(runtime_.load_image_calls, 0);
  EXPECT_TRUE(RegularFilesUnder(Cache()).empty());
}

TEST_F(RegistryImageCacheTest, WithoutARegistryClientNothingIsPulled) {
  ImageCache cache(Cache(), &runtime_, &artifacts_, nullptr, &clock_);
  auto id = cache.Ensure(a_);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), Code::kFailedPrecondition) << id.status().ToString();
}

}  // namespace
}  // namespace idlegrid::agent
