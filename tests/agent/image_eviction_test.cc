// PlanImageEviction (agent/image_eviction.h): which cached images an agent
// drops under its owner's budget, on plain values.
#include "agent/image_eviction.h"

#include <gtest/gtest.h>

namespace idlegrid::agent {
namespace {

using Strings = std::vector<std::string>;

CachedImageEntry Image(std::string name, std::vector<CachedBlob> blobs, int64_t used, bool in_use = false) {
  return {std::move(name), std::move(blobs), used, in_use};
}

const CachedBlob kBase{"base", 100}, kA{"a", 10}, kB{"b", 10}, kC{"c", 10}, kOrphan{"orphan", 5};

TEST(PlanImageEvictionTest, WithinBudgetNothingGoes) {
  auto plan = PlanImageEviction({Image("A", {kBase, kA}, 1)}, {kBase, kA}, 110);
  EXPECT_EQ(plan.images, Strings{});
  EXPECT_EQ(plan.blobs, Strings{});
  EXPECT_EQ(plan.bytes_kept, 110u);
}

TEST(PlanImageEvictionTest, LeastRecentlyUsedGoesFirstAndSharedBaseStays) {
  // Three images on one base: 100 + 3 x 10 = 130 bytes; budget 115.
  auto plan = PlanImageEviction({Image("A", {kBase, kA}, 30), Image("B", {kBase, kB}, 10), Image("C", {kBase, kC}, 20)},
                                {kBase, kA, kB, kC}, 115);
  EXPECT_EQ(plan.images, (Strings{"B", "C"}));  // B oldest, then C; A alone fits
  EXPECT_EQ(plan.blobs, (Strings{"b", "c"}));   // the base is still A's
  EXPECT_EQ(plan.bytes_kept, 110u);
}

TEST(PlanImageEvictionTest, AnImageInUseIsNeverEvictedNorItsLayers) {
  auto plan =
      PlanImageEviction({Image("A", {kBase, kA}, 1, /*in_use=*/true), Image("B", {kBase, kB}, 2)}, {kBase, kA, kB}, 50);
  EXPECT_EQ(plan.images, Strings{"B"});
  EXPECT_EQ(plan.blobs, Strings{"b"});  // never "base" or "a": A runs on them
  EXPECT_EQ(plan.bytes_kept, 110u);     // above budget, and the plan says so
}

TEST(PlanImageEvictionTest, AllInUseEvictsNothing) {
  auto plan =
      PlanImageEviction({Image("A", {kBase, kA}, 1, true), Image("B", {kBase, kB}, 2, true)}, {kBase, kA, kB}, 0);
  EXPECT_TRUE(plan.images.empty());
  EXPECT_TRUE(plan.blobs.empty());
}

TEST(PlanImageEvictionTest, BlobsNoImageListsGoFirst) {
  auto plan = PlanImageEviction({Image("A", {kBase, kA}, 1)}, {kBase, kA, kOrphan}, 1000);
  EXPECT_EQ(plan.images, Strings{});
  EXPECT_EQ(plan.blobs, Strings{"orphan"});
  EXPECT_EQ(plan.bytes_kept, 110u);
}

TEST(PlanImageEvictionTest, TiesAreBrokenByDigestSoPlansAreDeterministic) {
  auto plan = PlanImageEviction({Image("Y", {kB}, 5), Image("X", {kA}, 5)}, {kA, kB}, 10);
  EXPECT_EQ(plan.images, Strings{"X"});
}

TEST(PlanImageEvictionTest, AnImageListingABlobTwiceCountsItOnce) {
  auto plan = PlanImageEviction({Image("A", {kA, kA}, 1), Image("B", {kB}, 2)}, {kA, kB}, 10);
  EXPECT_EQ(plan.images, Strings{"A"});
  EXPECT_EQ(plan.blobs, Strings{"a"});
  EXPECT_EQ(plan.bytes_kept, 10u);
}

}  // namespace
}  // namespace idlegrid::agent
