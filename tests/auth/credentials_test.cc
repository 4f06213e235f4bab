// Credential rules (auth/credentials.h) on plain values.
#include "auth/credentials.h"

#include <gtest/gtest.h>

namespace idlegrid::auth {
namespace {

TEST(ScopesTest, NamesParseEitherAsAListOrCommaSeparatedAndUnknownOnesAreNamed) {
  EXPECT_EQ(*ParseScopes({"submit,read"}), kSubmit | kRead);
  EXPECT_EQ(*ParseScopes({"cancel", "drain"}), kCancel | kDrain);
  EXPECT_EQ(*ParseScopes({}), kNoScope);
  auto bad = ParseScopes({"read,admin"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("\"admin\""), std::string::npos) << bad.status().message();
  EXPECT_EQ(ScopeNames(kSubmit | kCancel), (std::vector<std::string>{"submit", "cancel"}));
}

TEST(ScopesTest, ARoleBoundsWhatItsTokensMayDo) {
  EXPECT_EQ(ScopesOfRole(Role::kRequester) & kDrain, 0u) << "requesters own no nodes";
  EXPECT_EQ(ScopesOfRole(Role::kProvider) & kSubmit, 0u) << "providers do not submit";
  EXPECT_EQ(ScopesOfRole(Role::kOperator), kSubmit | kRead | kCancel | kDrain);
  EXPECT_EQ(ScopesOfRole(Role::kAgent), kNoScope);
  EXPECT_FALSE(ParseRole("admin").ok());
  EXPECT_EQ(*ParseRole("provider"), Role::kProvider);
  EXPECT_EQ(RoleName(Role::kRequester), "requester");
}

TEST(TokenTest, RevokedAndExpiredTokensAreRefusedSayingWhich) {
  EXPECT_TRUE(CheckTokenUsable({0, 0}, 5).ok());
  EXPECT_TRUE(CheckTokenUsable({10, 0}, 9).ok());
  Status expired = CheckTokenUsable({10, 0}, 10);
  EXPECT_EQ(expired.code(), Code::kUnauthenticated);
  EXPECT_NE(expired.message().find("expired"), std::string::npos);
  Status revoked = CheckTokenUsable({0, 3}, 5);
  EXPECT_EQ(revoked.code(), Code::kUnauthenticated);
  EXPECT_NE(revoked.message().find("revoked"), std::string::npos);
  EXPECT_EQ(ExpiryOf(1000, 0), 0);
  EXPECT_EQ(ExpiryOf(1000, 30), 31000);
  EXPECT_EQ(TokenIdOf("sha256:0123456789abcdef0123"), "0123456789abcdef");
  EXPECT_TRUE(SameHash("sha256:ab", "sha256:ab"));
  EXPECT_FALSE(SameHash("sha256:ab", "sha256:ac"));
  EXPECT_FALSE(SameHash("sha256:ab", "sha256:abc"));
}

TEST(TokenTest, AnAttemptTokenBindsAttemptNodeAndEpoch) {
  const std::string t = AttemptToken("key", "a-1", "node-a", 2);
  EXPECT_EQ(t.rfind("igat_", 0), 0u);
  EXPECT_EQ(t, AttemptToken("key", "a-1", "node-a", 2)) << "deterministic";
  EXPECT_NE(t, AttemptToken("key", "a-2", "node-a", 2));
  EXPECT_NE(t, AttemptToken("key", "a-1", "node-b", 2));
  EXPECT_NE(t, AttemptToken("key", "a-1", "node-a", 3)) << "a new lease needs a new token";
  EXPECT_NE(t, AttemptToken("other key", "a-1", "node-a", 2));
  // Field boundaries cannot be shifted to forge another tuple.
  EXPECT_NE(AttemptToken("key", "a", "1\nnode", 2), AttemptToken("key", "a\n1", "node", 2));
}

TEST(QuotaTest, AnAccountsOwnLimitWinsOverTheDefaultAndOverQuotaSaysWhatToDo) {
  Quota q = EffectiveQuota({0, 5, 0}, {100, 50, 1 << 20});
  EXPECT_EQ(q.max_queued_tasks, 100u);
  EXPECT_EQ(q.max_running_tasks, 5u);
  EXPECT_EQ(q.max_stored_bytes, 1u << 20);
  EXPECT_TRUE(CheckSubmitQuota("alice", q, {90, 0, 0}, 10).ok());
  Status over = CheckSubmitQuota("alice", q, {90, 0, 0}, 11);
  EXPECT_EQ(over.code(), Code::kResourceExhausted);
  EXPECT_NE(over.message().find("100 queued tasks"), std::string::npos) << over.message();
  EXPECT_NE(over.message().find("has 90"), std::string::npos) << over.message();
  EXPECT_TRUE(CheckSubmitQuota("alice", {}, {1u << 30, 0, 0}, 1000).ok()) << "0: no limit";
  EXPECT_TRUE(CheckStoreQuota("alice", q, {0, 0, 1000}, (1 << 20) - 1000).ok());
  EXPECT_EQ(CheckStoreQuota("alice", q, {0, 0, 1000}, (1 << 20) - 999).code(), Code::kResourceExhausted);
}

}  // namespace
}  // namespace idlegrid::auth
