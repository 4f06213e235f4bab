// The coordinator's cache of layered images' blob lists
// (coordinator/manifest_blob_cache.h): read once per manifest, bounded.
#include "coordinator/manifest_blob_cache.h"

#include <gtest/gtest.h>

namespace idlegrid::coordinator {
namespace {

std::vector<v1::ArtifactRef> Blobs(const std::string& first, uint64_t size) {
  v1::ArtifactRef r;
  r.set_digest(first);
  r.set_size(size);
  return {r};
}

TEST(ManifestBlobCacheTest, KeepsEachListByItsManifestDigest) {
  ManifestBlobCache cache;
  EXPECT_FALSE(cache.Get("sha256:a").has_value());
  cache.Put("sha256:a", Blobs("sha256:a", 10));
  auto got = cache.Get("sha256:a");
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].size(), 10u);
  EXPECT_FALSE(cache.Get("sha256:b").has_value());
}

TEST(ManifestBlobCacheTest, PastItsCapacityTheOldestGoes) {
  ManifestBlobCache cache(2);
  cache.Put("sha256:a", Blobs("a", 1));
  cache.Put("sha256:b", Blobs("b", 2));
  cache.Put("sha256:a", Blobs("a", 1));  // known already: not a second entry
  cache.Put("sha256:c", Blobs("c", 3));
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_FALSE(cache.Get("sha256:a").has_value());
  EXPECT_TRUE(cache.Get("sha256:b").has_value());
  EXPECT_TRUE(cache.Get("sha256:c").has_value());
  ManifestBlobCache none(0);
  none.Put("sha256:a", Blobs("a", 1));
  EXPECT_EQ(none.size(), 0u);
}

}  // namespace
}  // namespace idlegrid::coordinator
