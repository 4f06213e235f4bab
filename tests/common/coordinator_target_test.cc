// One gRPC target for several coordinators (common/coordinator_target.h), with
// a name lookup that is plain data.
#include "common/coordinator_target.h"

#include <gtest/gtest.h>

#include <map>

namespace idlegrid {
namespace {

ResolveHost Table(std::map<std::string, std::vector<std::string>> names) {
  return [names](const std::string& host) -> Result<std::vector<std::string>> {
    auto it = names.find(host);
    if (it == names.end()) return Status::Unavailable("cannot resolve coordinator " + host);
    return it->second;
  };
}

TEST(CoordinatorTargetTest, OneAddressIsPassedOnAsGiven) {
  auto lookups = 0;
  ResolveHost counting = [&](const std::string&) -> Result<std::vector<std::string>> {
    ++lookups;
    return std::vector<std::string>{};
  };
  EXPECT_EQ(*ChannelTarget("grid.example.org:7443", counting), "grid.example.org:7443");
  EXPECT_EQ(*ChannelTarget(" 127.0.0.1:7443 ", counting), "127.0.0.1:7443");
  EXPECT_EQ(lookups, 0) << "gRPC's own resolver follows a single name";
  EXPECT_EQ(ChannelTarget(" , ", counting).status().code(), Code::kInvalidArgument);
}

TEST(CoordinatorTargetTest, SeveralBecomeOneListInTheOrderGivenWithEveryAddressOnce) {
  auto names = Table({{"a.lab", {"10.0.0.1"}}, {"b.lab", {"10.0.0.2", "10.0.0.3"}}, {"10.0.0.9", {"10.0.0.9"}}});
  auto target = ChannelTarget("a.lab:7443,b.lab:7444, 10.0.0.9:7443,a.lab:7443", names);
  ASSERT_TRUE(target.ok()) << target.status().ToString();
  EXPECT_EQ(*target, "ipv4:10.0.0.1:7443,10.0.0.2:7444,10.0.0.3:7444,10.0.0.9:7443");

  auto v6 = ChannelTarget("[2001:db8::1]:7443,[2001:db8::2]:7443",
                          Table({{"2001:db8::1", {"2001:db8::1"}}, {"2001:db8::2", {"2001:db8::2"}}}));
  ASSERT_TRUE(v6.ok()) << v6.status().ToString();
  EXPECT_EQ(*v6, "ipv6:[2001:db8::1]:7443,[2001:db8::2]:7443");
}

TEST(CoordinatorTargetTest, MalformedEntriesUnknownNamesAndMixedFamiliesAreRefused) {
  auto names = Table({{"a.lab", {"10.0.0.1"}}, {"v6.lab", {"2001:db8::1"}}});
  for (const char* bad : {"a.lab,b.lab:7443", "a.lab:7443,b.lab:", "a.lab:7443,b.lab:http", "a.lab:7443,[::1",
                          "a.lab:7443,:7443", "a.lab:7443,2001:db8::1:7443"}) {
    auto out = ChannelTarget(bad, names);
    ASSERT_FALSE(out.ok()) << bad;
    EXPECT_EQ(out.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(out.status().message().find("HOST:PORT"), std::string::npos) << out.status().message();
  }
  auto unknown = ChannelTarget("a.lab:7443,nowhere.lab:7443", names);
  EXPECT_EQ(unknown.status().code(), Code::kUnavailable) << unknown.status().ToString();
  auto mixed = ChannelTarget("a.lab:7443,v6.lab:7443", names);
  EXPECT_EQ(mixed.status().code(), Code::kInvalidArgument);
  EXPECT_NE(mixed.status().message().find("one family"), std::string::npos) << mixed.status().message();
}

TEST(CoordinatorTargetTest, DualStackNamesTakeTheFamilyEveryNameHas) {
  auto names = Table(
      {{"localhost", {"::1", "127.0.0.1"}}, {"both.lab", {"2001:db8::2", "10.0.0.2"}}, {"v6.lab", {"2001:db8::6"}}});
  auto v4 = ChannelTarget("localhost:7443,localhost:7444,both.lab:7443", names);
  ASSERT_TRUE(v4.ok()) << v4.status().ToString();
  EXPECT_EQ(*v4, "ipv4:127.0.0.1:7443,127.0.0.1:7444,10.0.0.2:7443");
  auto v6 = ChannelTarget("both.lab:7443,v6.lab:7443", names);
  ASSERT_TRUE(v6.ok()) << v6.status().ToString();
  EXPECT_EQ(*v6, "ipv6:[2001:db8::2]:7443,[2001:db8::6]:7443");
}

TEST(CoordinatorTargetTest, TheSystemResolverFindsLoopback) {
  auto found = ResolveWithSystem("127.0.0.1");
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_FALSE(found->empty());
  EXPECT_EQ(found->front(), "127.0.0.1");
}

}  // namespace
}  // namespace idlegrid
