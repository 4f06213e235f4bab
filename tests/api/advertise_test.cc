// Where agents and users are told to dial (api/advertise.h), on plain data.
#include "api/advertise.h"

#include <gtest/gtest.h>

namespace idlegrid::api {
namespace {

TEST(AdvertiseTest, AGivenAddressWinsAndKeepsTheBoundPortUnlessItNamesOne) {
  auto plain = AdvertisedAddress({"grid.lab.example", "0.0.0.0", 7443, "box"});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->url, "https://grid.lab.example:7443");
  EXPECT_FALSE(plain->guessed);
  EXPECT_EQ(plain->local_address, "127.0.0.1:7443") << "the operator's own client dials loopback";

  auto forwarded = AdvertisedAddress({"203.0.113.7:443", "0.0.0.0", 7443, "box"});
  ASSERT_TRUE(forwarded.ok());
  EXPECT_EQ(forwarded->url, "https://203.0.113.7:443") << "a router forwarding 443 to 7443";

  auto v6 = AdvertisedAddress({"2001:db8::7", "::", 7443, "box"});
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->url, "https://[2001:db8::7]:7443");
  auto v6port = AdvertisedAddress({"[2001:db8::7]:8443", "::", 7443, "box"});
  ASSERT_TRUE(v6port.ok());
  EXPECT_EQ(v6port->url, "https://[2001:db8::7]:8443");
}

TEST(AdvertiseTest, WithoutOneASpecificListenHostIsUsedAndAWildcardFallsBackToTheHostName) {
  auto specific = AdvertisedAddress({"", "10.0.0.5", 7443, "box"});
  ASSERT_TRUE(specific.ok());
  EXPECT_EQ(specific->url, "https://10.0.0.5:7443");
  EXPECT_EQ(specific->local_address, "10.0.0.5:7443");
  EXPECT_FALSE(specific->guessed);

  for (const char* wildcard : {"0.0.0.0", "::", ""}) {
    auto guessed = AdvertisedAddress({"", wildcard, 7443, "gamer-rig"});
    ASSERT_TRUE(guessed.ok());
    EXPECT_EQ(guessed->url, "https://gamer-rig:7443") << wildcard;
    EXPECT_TRUE(guessed->guessed) << "never 0.0.0.0 in a file handed to agents";
    EXPECT_EQ(guessed->local_address, "127.0.0.1:7443");
  }
}

TEST(AdvertiseTest, AMalformedAddressIsRefusedWithWhatToGive) {
  for (const char* bad : {"https://grid:7443", "grid/path", "grid:", "grid:http", "grid:70000", "[2001:db8::7", "[]",
                          ":7443", "grid host"}) {
    auto out = AdvertisedAddress({bad, "0.0.0.0", 7443, "box"});
    ASSERT_FALSE(out.ok()) << bad;
    EXPECT_EQ(out.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(out.status().message().find("HOST:PORT"), std::string::npos) << out.status().message();
  }
}

TEST(AdvertiseTest, TheHandedOutLinesUseTheCommandsUsersRun) {
  EXPECT_EQ(AgentJoinLine("https://grid:7443", "igj_x", "sha256:ab"),
            "idlegrid agent join https://grid:7443 --token igj_x --ca-hash sha256:ab\n");
  EXPECT_EQ(LoginLine("https://grid:7443", "sha256:ab"),
            "idlegrid login https://grid:7443 --ca-hash sha256:ab --token TOKEN\n");
}

}  // namespace
}  // namespace idlegrid::api
