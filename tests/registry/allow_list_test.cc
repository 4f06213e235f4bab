// Who may pull from which registry (registry/allow_list.h): the operator's
// settings at submit, the owner's on the node.
#include "registry/allow_list.h"

#include <gtest/gtest.h>

#include <string>

namespace idlegrid::registry {
namespace {

const std::string kDigest = "sha256:" + std::string(64, 'c');

manifest::ImageRef Ref(const std::string& image) {
  Result<manifest::ImageRef> ref = manifest::ParseImageRef(image);
  EXPECT_TRUE(ref.ok()) << ref.status().ToString();
  return ref.ok() ? *ref : manifest::ImageRef{};
}

bool Mentions(const Status& st, const std::string& part) { return st.message().find(part) != std::string::npos; }

TEST(CheckOperatorAllowsTest, PushedImagesNeedNoRegistrySetting) {
  EXPECT_TRUE(CheckOperatorAllows(Ref("sim@" + kDigest), OperatorRegistries{}).ok());
  EXPECT_TRUE(CheckOperatorAllows(Ref(kDigest), OperatorRegistries{}).ok());
}

TEST(CheckOperatorAllowsTest, RefusesARegistryNotOnTheListNamingItAndTheFlag) {
  OperatorRegistries settings{{"ghcr.io"}, false};
  Status st = CheckOperatorAllows(Ref("127.0.0.1:5000/igtest/prog@" + kDigest), settings);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kFailedPrecondition);
  EXPECT_TRUE(Mentions(st, "registry 127.0.0.1:5000 ")) << st.message();
  EXPECT_TRUE(Mentions(st, "--allow-registry 127.0.0.1:5000")) << st.message();
  // The host must match with its port: another port is another registry.
  EXPECT_FALSE(CheckOperatorAllows(Ref("ghcr.io:8443/app@" + kDigest), settings).ok());
  EXPECT_TRUE(CheckOperatorAllows(Ref("ghcr.io/app@" + kDigest), settings).ok());
}

TEST(CheckOperatorAllowsTest, TagsOnlyWhereAllowed) {
  OperatorRegistries settings{{"ghcr.io"}, false};
  Status st = CheckOperatorAllows(Ref("ghcr.io/org/app:v1"), settings);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_TRUE(Mentions(st, "ghcr.io/org/app@sha256:<64 hex>")) << st.message();
  EXPECT_TRUE(Mentions(st, "--allow-registry-tags")) << st.message();
  // A tag with a digest runs the digest: no tag to resolve.
  EXPECT_TRUE(CheckOperatorAllows(Ref("ghcr.io/org/app:v1@" + kDigest), settings).ok());
  settings.allow_tags = true;
  EXPECT_TRUE(CheckOperatorAllows(Ref("ghcr.io/org/app:v1"), settings).ok());
  // Allowing tags allows no registry by itself.
  EXPECT_FALSE(CheckOperatorAllows(Ref("quay.io/org/app:v1"), settings).ok());
}

TEST(CheckOwnerAllowsTest, AnEmptyListAllowsNoRegistry) {
  Status st = CheckOwnerAllows(Ref("127.0.0.1:5000/igtest/prog@" + kDigest), {});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kFailedPrecondition);
  EXPECT_TRUE(Mentions(st, "registry 127.0.0.1:5000 ")) << st.message();
  EXPECT_TRUE(Mentions(st, "allowedRegistries: [127.0.0.1:5000]")) << st.message();
  EXPECT_TRUE(CheckOwnerAllows(Ref("sim@" + kDigest), {}).ok());
}

TEST(CheckOwnerAllowsTest, AllowsListedRegistriesOnly) {
  const std::vector<std::string> allowed = {"ghcr.io", "127.0.0.1:5000"};
  EXPECT_TRUE(CheckOwnerAllows(Ref("127.0.0.1:5000/igtest/prog@" + kDigest), allowed).ok());
  EXPECT_TRUE(CheckOwnerAllows(Ref("ghcr.io/app@" + kDigest), allowed).ok());
  EXPECT_FALSE(CheckOwnerAllows(Ref("127.0.0.1:5001/igtest/prog@" + kDigest), allowed).ok());
}

TEST(ParseRegistryListTest, FoldsAndRefusesWithTheSettingNamed) {
  Result<std::set<std::string>> list = ParseRegistryList({"GHCR.io", "127.0.0.1:5000", "ghcr.io"}, "--allow-registry");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(*list, (std::set<std::string>{"127.0.0.1:5000", "ghcr.io"}));
  Result<std::set<std::string>> bad = ParseRegistryList({"ghcr.io", "https://x"}, "--allow-registry");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Mentions(bad.status(), "--allow-registry")) << bad.status().message();
}

TEST(ParseRegistryCaFlagsTest, HostEqualsFile) {
  Result<std::map<std::string, std::string>> cas =
      ParseRegistryCaFlags({"127.0.0.1:5000=/etc/ca.crt", "R.io=/a=b.pem", "r.io=/c.pem"});
  ASSERT_TRUE(cas.ok()) << cas.status().ToString();
  EXPECT_EQ(cas->at("127.0.0.1:5000"), "/etc/ca.crt");
  EXPECT_EQ(cas->at("r.io"), "/c.pem");  // the last one named wins
  EXPECT_EQ(cas->size(), 2u);
  for (const char* bad : {"127.0.0.1:5000", "r.io=", "=/ca.crt", "r.io:0=/ca.crt"}) {
    Result<std::map<std::string, std::string>> refused = ParseRegistryCaFlags({bad});
    EXPECT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.status().code(), Code::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace idlegrid::registry
