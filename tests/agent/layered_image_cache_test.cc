// The agent's image cache for images pushed layer by layer
// (agent/image_cache.h): only blobs the node lacks are fetched, each image
// is assembled and verified before it is loaded, and under a small budget
// the least recently used image goes, never one a running attempt uses.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>

#include "agent/attempt_fakes_support.h"
#include "agent/image_cache.h"
#include "common/digest.h"
#include "common/fs.h"

namespace idlegrid::agent {
namespace {

// A hand-made OCI image: the cache verifies digests and sizes; the fake
// runtime does not unpack layers, so their bytes need not be tars.
struct TestImage {
  std::string manifest_digest, config_digest;
  std::vector<std::pair<std::string, std::string>> blobs;  // digest -> bytes, manifest first
};

std::string Descriptor(const std::string& media, const std::string& bytes) {
  return R"({"mediaType":")" + media + R"(","digest":")" + Sha256Digest(bytes) + R"(","size":)" +
         std::to_string(bytes.size()) + "}";
}

TestImage MakeImage(const std::vector<std::string>& layers, const std::string& tag) {
  const std::string config = R"({"architecture":"amd64","os":"linux","tag":")" + tag + R"("})";
  std::string manifest = R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":)" +
                         Descriptor("application/vnd.oci.image.config.v1+json", config) + R"(,"layers":[)";
  for (size_t i = 0; i < layers.size(); ++i) {
    manifest += (i ? "," : "") + Descriptor("application/vnd.oci.image.layer.v1.tar", layers[i]);
  }
  manifest += "]}";
  TestImage image{Sha256Digest(manifest), Sha256Digest(config), {{Sha256Digest(manifest), manifest}}};
  image.blobs.push_back({Sha256Digest(config), config});
  for (const auto& l : layers) image.blobs.push_back({Sha256Digest(l), l});
  return image;
}

class LayeredImageCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/layered-cache-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    runtime_.has_image = false;
  }
  void TearDown() override { (void)RemoveTree(dir_); }

  v1::Assignment Assign(const TestImage& image) {
    for (const auto& [digest, bytes] : image.blobs) artifacts_.store[digest] = bytes;
    v1::Assignment a;
    a.mutable_spec()->set_image(image.manifest_digest);
    a.set_image_config_digest(image.config_digest);
    for (const auto& [digest, bytes] : image.blobs) {
      v1::ArtifactRef* ref = a.add_image_blobs();
      ref->set_digest(digest);
      ref->set_size(bytes.size());
    }
    return a;
  }
  // Digests downloaded since the last call.
  std::vector<std::string> TakeDownloads() {
    std::vector<std::string> out;
    out.swap(artifacts_.downloaded);
    return out;
  }

  std::string dir_;
  testing::FakeRuntime runtime_;
  testing::FakeArtifacts artifacts_;
  ManualClock clock_;
  const std::string base_ = std::string(200000, 'B');  // stands for python3-torch's layer
};

TEST_F(LayeredImageCacheTest, AChangedLayerIsTheOnlyBlobFetchedAgain) {
  ImageCache cache(dir_, &runtime_, &artifacts_, nullptr, &clock_);
  TestImage v1 = MakeImage({base_, "print('v1')\n"}, "v1");
  auto first = cache.Ensure(Assign(v1));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, DigestHex(v1.config_digest));
  EXPECT_EQ(TakeDownloads().size(), 4u);  // manifest, config, base, script
  EXPECT_EQ(runtime_.load_image_calls, 1);

  TestImage v2 = MakeImage({base_, "print('v2')\n"}, "v2");
  auto second = cache.Ensure(Assign(v2));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  // The base layer was on disk: the manifest, config and the changed layer only.
  std::vector<std::string> got = TakeDownloads();
  std::sort(got.begin(), got.end());
  std::vector<std::string> want{v2.manifest_digest, v2.config_digest, Sha256Digest("print('v2')\n")};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
  EXPECT_EQ(runtime_.load_image_calls, 2);
  // No assembled archive is left behind; each blob is on disk once.
  EXPECT_FALSE(PathExists(dir_ + "/" + DigestHex(v2.manifest_digest) + ".layered.tar"));
  ImageCacheUsage usage = ReadImageCacheUsage(dir_);
  EXPECT_EQ(usage.images, 2);
  EXPECT_EQ(usage.blobs, 7);  // 2 manifests, 2 configs, base, 2 scripts
}

// Blobs are verified by digest as they arrive (the agent's transport, and the
// runtime as it loads the archive); the cache itself checks that the image
// is the one the coordinator named.
TEST_F(LayeredImageCacheTest, AManifestNamingAnotherConfigIsNeverLoaded) {
  ImageCache cache(dir_, &runtime_, &artifacts_, nullptr, &clock_);
  TestImage image = MakeImage({base_}, "bad");
  v1::Assignment a = Assign(image);
  a.set_image_config_digest("sha256:" + std::string(64, 'e'));
  auto id = cache.Ensure(a);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), Code::kDataLoss) << id.status().ToString();
  EXPECT_EQ(runtime_.load_image_calls, 0);
  EXPECT_EQ(ReadImageCacheUsage(dir_).blobs, 0) << "blobs of an image that failed verification are dropped";
}

TEST_F(LayeredImageCacheTest, AnAssignmentWithoutItsManifestIsRefused) {
  ImageCache cache(dir_, &runtime_, &artifacts_, nullptr, &clock_);
  v1::Assignment a = Assign(MakeImage({base_}, "x"));
  a.mutable_image_blobs()->erase(a.mutable_image_blobs()->begin());  // the manifest
  auto id = cache.Ensure(a);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), Code::kInvalidArgument) << id.status().ToString();
  EXPECT_EQ(runtime_.load_image_calls, 0);
}

TEST_F(LayeredImageCacheTest, EvictionUnderASmallBudgetNeverRemovesALayerInUse) {
  ImageCache cache(dir_, &runtime_, &artifacts_, nullptr, &clock_);
  cache.SetBudget(base_.size() + 1000);                  // room for one image
  cache.SetEvictionGrace(std::chrono::milliseconds(0));  // the images here were all used just now
  TestImage a = MakeImage({base_, "a"}, "a");
  TestImage b = MakeImage({std::string(150000, 'b')}, "b");
  TestImage c = MakeImage({std::string(150000, 'c')}, "c");
  v1::Assignment run_a = Assign(a), run_b = Assign(b), run_c = Assign(c);

  ASSERT_TRUE(cache.Ensure(run_a).ok());  // a runs (pinned) ...
  ASSERT_TRUE(cache.Ensure(run_b).ok());  // ... while b loads: over budget, but a is in use
  EXPECT_TRUE(runtime_.removed_images.empty()) << "nothing evictable: both images are in use";
  EXPECT_TRUE(PathExists(dir_ + "/blobs/" + DigestHex(Sha256Digest(base_))));

  cache.Release(run_b);                   // b's attempt ends; a still runs
  ASSERT_TRUE(cache.Ensure(run_c).ok());  // c needs room: b goes, not a
  EXPECT_EQ(runtime_.removed_images, std::vector<std::string>{DigestHex(b.config_digest)});
  EXPECT_TRUE(PathExists(dir_ + "/blobs/" + DigestHex(Sha256Digest(base_))));
  EXPECT_FALSE(PathExists(dir_ + "/blobs/" + DigestHex(Sha256Digest(std::string(150000, 'b')))));
  EXPECT_FALSE(PathExists(dir_ + "/" + DigestHex(b.manifest_digest))) << "b's marker goes with it";

  // Once a's attempt ends too, the next load may evict a (least recently used).
  cache.Release(run_a);
  cache.Release(run_c);
  clock_.AdvanceMs(kImageRecheckMs);
  ASSERT_TRUE(cache.Ensure(run_b).ok());  // b again: fetched anew
  EXPECT_EQ(runtime_.removed_images.size(), 3u) << "a and c went to make room for b";
}

TEST_F(LayeredImageCacheTest, AnImageUsedMomentsAgoIsNotEvicted) {
  ImageCache cache(dir_, &runtime_, &artifacts_, nullptr, &clock_);
  cache.SetBudget(1);  // nothing fits
  v1::Assignment a = Assign(MakeImage({std::string(1000, 'a')}, "a"));
  v1::Assignment b = Assign(MakeImage({std::string(1000, 'b')}, "b"));
  ASSERT_TRUE(cache.Ensure(a).ok());
  cache.Release(a);  // a's attempt ended; its pilot may linger on it
  ASSERT_TRUE(cache.Ensure(b).ok());
  EXPECT_TRUE(runtime_.removed_images.empty()) << "within the default grace of 10 s nothing goes";
}

}  // namespace
}  // namespace idlegrid::agent
