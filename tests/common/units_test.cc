// The one size formatter of user-facing messages.
#include "common/units.h"

#include <gtest/gtest.h>

namespace idlegrid {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

TEST(FormatGiBTest, WholeNumbersHaveNoFractionOthersOneDigitTruncated) {
  EXPECT_EQ(FormatGiB(0), "0 GiB");
  EXPECT_EQ(FormatGiB(80 * kGiB), "80 GiB");
  EXPECT_EQ(FormatGiB(kGiB + kGiB / 2), "1.5 GiB");
  EXPECT_EQ(FormatGiB(80 * kGiB - 1), "79.9 GiB") << "never rounded up to a minimum it does not reach";
  EXPECT_EQ(FormatGiB(150754820096), "140.4 GiB");
  EXPECT_EQ(FormatGiB(kGiB / 10 - 1), "0 GiB");
}

}  // namespace
}  // namespace idlegrid
