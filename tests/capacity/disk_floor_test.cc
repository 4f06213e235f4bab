#include "capacity/disk_floor.h"

#include <gtest/gtest.h>

namespace idlegrid::capacity {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(DiskFloor, FullBelowFivePercentOrSixtyFourMibWhicheverIsLess) {
  // A small disk: 5 % of 256 MiB is 12.8 MiB.
  EXPECT_TRUE(DiskIsFull(0, 256 * kMiB));
  EXPECT_TRUE(DiskIsFull(12 * kMiB, 256 * kMiB));
  EXPECT_FALSE(DiskIsFull(13 * kMiB, 256 * kMiB));
  // A large disk: 64 MiB, not 5 % of 2 TiB.
  EXPECT_TRUE(DiskIsFull(63 * kMiB, 2048 * 1024 * kMiB));
  EXPECT_FALSE(DiskIsFull(64 * kMiB, 2048 * 1024 * kMiB));
  // Unknown size: never full (a disk that could not be read gates nothing).
  EXPECT_FALSE(DiskIsFull(0, 0));
}

TEST(DiskFloor, TheReasonSaysHowMuchIsFreeWhere) {
  EXPECT_EQ(DiskFullReason(kMiB / 2, 256 * kMiB, "/srv/agent"), "disk is full: 0 MiB free of 256 MiB at /srv/agent");
  EXPECT_EQ(DiskFullReason(100 * kMiB, 256 * kMiB, "/srv/agent"), "");
}

}  // namespace
}  // namespace idlegrid::capacity
