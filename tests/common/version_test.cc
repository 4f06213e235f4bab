// The agent/coordinator version-skew rule (common/version.h) on plain data.
#include "common/version.h"

#include <gtest/gtest.h>

namespace idlegrid {
namespace {

TEST(VersionTest, ParsesPlainPrefixedAndSuffixedVersions) {
  auto plain = ParseVersion("1.12.3");
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->major, 1);
  EXPECT_EQ(plain->minor, 12);
  EXPECT_EQ(plain->patch, 3);
  auto agent = ParseVersion("idlegrid-agent/0.4.7~rc1");
  ASSERT_TRUE(agent.has_value());
  EXPECT_EQ(agent->ToString(), "0.4.7");
  EXPECT_TRUE(ParseVersion("idlegrid-agent/0.1.0 (bench)").has_value());
  for (const char* bad : {"", "1", "1.2", "1.2.", "a.b.c", "1.2.3.4", "idlegrid-agent/", "test-agent", "-1.2.3"}) {
    EXPECT_FALSE(ParseVersion(bad).has_value()) << bad;
  }
}

TEST(VersionTest, TheBuildsOwnVersionParsesAndPassesItsOwnRule) {
  auto mine = ParseVersion(BuildVersion());
  ASSERT_TRUE(mine.has_value()) << BuildVersion();
  EXPECT_EQ(mine->ToString(), BuildVersionParts().ToString());
  EXPECT_TRUE(CheckAgentSkew(AgentVersionString(), BuildVersionParts()).ok());
}

TEST(VersionTest, AnAgentMayLagByOneMinorNeverLeadNorCrossAMajor) {
  const Version coordinator{2, 5, 1};
  EXPECT_TRUE(CheckAgentSkew("idlegrid-agent/2.5.0", coordinator).ok()) << "same minor, older patch";
  EXPECT_TRUE(CheckAgentSkew("idlegrid-agent/2.5.9", coordinator).ok()) << "same minor, newer patch";
  EXPECT_TRUE(CheckAgentSkew("idlegrid-agent/2.4.3", coordinator).ok()) << "one minor behind";

  Status behind = CheckAgentSkew("idlegrid-agent/2.3.9", coordinator);
  EXPECT_EQ(behind.code(), Code::kFailedPrecondition);
  EXPECT_NE(behind.message().find("upgrade the agent"), std::string::npos) << behind.message();

  Status ahead = CheckAgentSkew("idlegrid-agent/2.6.0", coordinator);
  EXPECT_EQ(ahead.code(), Code::kFailedPrecondition);
  EXPECT_NE(ahead.message().find("upgrade the coordinator first"), std::string::npos) << ahead.message();

  Status major_ahead = CheckAgentSkew("idlegrid-agent/3.0.0", coordinator);
  EXPECT_NE(major_ahead.message().find("upgrade the coordinator"), std::string::npos) << major_ahead.message();
  Status major_behind = CheckAgentSkew("idlegrid-agent/1.9.0", coordinator);
  EXPECT_NE(major_behind.message().find("upgrade the agent"), std::string::npos) << major_behind.message();

  Status none = CheckAgentSkew("", coordinator);
  EXPECT_EQ(none.code(), Code::kFailedPrecondition);
  EXPECT_NE(none.message().find("upgrade the agent to 2.5.1"), std::string::npos) << none.message();
}

TEST(VersionTest, AtMinorZeroNothingOlderIsAccepted) {
  const Version coordinator{1, 0, 0};
  EXPECT_TRUE(CheckAgentSkew("1.0.0", coordinator).ok());
  EXPECT_FALSE(CheckAgentSkew("0.9.0", coordinator).ok()) << "a minor of an older major is a major apart";
}

}  // namespace
}  // namespace idlegrid
