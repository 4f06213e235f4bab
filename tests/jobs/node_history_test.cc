// Paging a node's attempt history (jobs/node_history.h): tokens round-trip,
// anything else is refused with the parameter named, and page sizes.
#include "jobs/node_history.h"

#include <gtest/gtest.h>

namespace idlegrid::jobs {
namespace {

TEST(NodeHistoryTest, ATokenNamesTheAttemptItWasMadeFrom) {
  const AttemptCursor c{1765112400123, 42};
  auto parsed = ParseAttemptCursor(FormatAttemptCursor(c));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_TRUE(parsed->has_value());
  EXPECT_EQ(**parsed, c);
  auto first = ParseAttemptCursor("");
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->has_value()) << "no token is the newest page";
}

TEST(NodeHistoryTest, AnythingElseIsRefusedNamingThePageToken) {
  for (const char* bad : {"12", "12.", ".3", "a.b", "1.2.3", "-1.2", "1.-2", "1.2 ", "99999999999999999999.1"}) {
    auto parsed = ParseAttemptCursor(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(parsed.status().message().find("page_token"), std::string::npos) << parsed.status().message();
  }
}

TEST(NodeHistoryTest, PageSizesDefaultAndHaveACeiling) {
  EXPECT_EQ(*NodeAttemptsLimit(0), kNodeAttemptsDefaultLimit);
  EXPECT_EQ(*NodeAttemptsLimit(7), 7u);
  EXPECT_EQ(*NodeAttemptsLimit(kNodeAttemptsMaxLimit), kNodeAttemptsMaxLimit);
  auto over = NodeAttemptsLimit(kNodeAttemptsMaxLimit + 1);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace idlegrid::jobs
