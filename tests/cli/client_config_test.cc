// Where the CLI finds its coordinator (cli/client.h ResolveConfig): flags win
// over the environment, the environment over the config file; what is missing
// is named with where it was looked for; a broken file names the file.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/client.h"
#include "common/test_support.h"

namespace idlegrid::cli {
namespace {

// Sets (or clears) the client's environment variables for one test and puts
// them back afterwards.
class ClientConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kVars) {
      const char* v = ::getenv(name);
      saved_.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
      ::unsetenv(name);
    }
    // No config file in the real home may leak in.
    ::setenv("HOME", dir_.path().c_str(), 1);
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name, value->c_str(), 1);
      } else {
        ::unsetenv(name);
      }
    }
  }

  std::string WriteFile(const std::string& name, const std::string& text) {
    std::string path = dir_.path() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  static constexpr const char* kVars[] = {"IDLEGRID_ADDR", "IDLEGRID_CA_FILE", "IDLEGRID_TOKEN", "IDLEGRID_CONFIG",
                                          "HOME"};
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
  idlegrid::testing::TempDir dir_{"igcli"};
};

TEST_F(ClientConfigTest, FlagsBeatEnvironmentWhichBeatsTheFile) {
  const std::string file = WriteFile("c.yaml", "address: file:1\nca_file: /file/ca.crt\ntoken: file-token\n");
  ::setenv("IDLEGRID_ADDR", "env:2", 1);
  ::setenv("IDLEGRID_TOKEN", "env-token", 1);
  ClientConfig flags;
  flags.token = "flag-token";
  auto c = ResolveConfig(flags, file);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->token, "flag-token");
  EXPECT_EQ(c->address, "env:2");
  EXPECT_EQ(c->ca_file, "/file/ca.crt");
}

TEST_F(ClientConfigTest, TheFileComesFromIdlegridConfigThenTheHomeDirectory) {
  const std::string named = WriteFile("named.yaml", "address: named:1\nca_file: /n/ca.crt\ntoken: named\n");
  ::setenv("IDLEGRID_CONFIG", named.c_str(), 1);
  auto c = ResolveConfig({}, "");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->address, "named:1");

  ::unsetenv("IDLEGRID_CONFIG");
  ASSERT_EQ(::system(("mkdir -p " + dir_.path() + "/.config/idlegrid").c_str()), 0);
  WriteFile(".config/idlegrid/config.yaml", "address: home:1\nca_file: /h/ca.crt\ntoken: home\n");
  c = ResolveConfig({}, "");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->address, "home:1");
  EXPECT_EQ(c->token, "home");
}

TEST_F(ClientConfigTest, WhatIsMissingIsNamedWithWhereItWasLookedFor) {
  ClientConfig flags;
  flags.address = "127.0.0.1:1";
  auto c = ResolveConfig(flags, dir_.path() + "/absent.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kInvalidArgument);
  const std::string& m = c.status().message();
  EXPECT_NE(m.find("CA file (--ca-file, IDLEGRID_CA_FILE)"), std::string::npos) << m;
  EXPECT_NE(m.find("token (--token, IDLEGRID_TOKEN)"), std::string::npos) << m;
  EXPECT_EQ(m.find("address (--addr"), std::string::npos) << "the address was given: " << m;
  EXPECT_NE(m.find("absent.yaml"), std::string::npos) << m;
}

TEST_F(ClientConfigTest, ABrokenFileIsAnErrorNamingIt) {
  const std::string file = WriteFile("broken.yaml", "address: [unclosed\n");
  auto c = ResolveConfig({}, file);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kInvalidArgument);
  EXPECT_NE(c.status().message().find("broken.yaml"), std::string::npos) << c.status().ToString();
}

TEST_F(ClientConfigTest, AFileIsNotReadWhenFlagsAndEnvironmentSayEverything) {
  // Broken, yet never opened: nothing was missing.
  const std::string file = WriteFile("broken.yaml", "address: [unclosed\n");
  ::setenv("IDLEGRID_CA_FILE", "/env/ca.crt", 1);
  ClientConfig flags;
  flags.address = "a:1";
  flags.token = "t";
  auto c = ResolveConfig(flags, file);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->ca_file, "/env/ca.crt");
}

}  // namespace
}  // namespace idlegrid::cli
