// Image references (manifest/image_ref.h): which names are pushed images and
// which come from a registry, and what each part holds.
#include "manifest/image_ref.h"

#include <gtest/gtest.h>

#include <string>

namespace idlegrid::manifest {
namespace {

const std::string kDigest = "sha256:" + std::string(64, 'a');

struct Parsed {
  const char* name;
  std::string image;
  std::string registry, repository, tag, digest, label;
};

class ParseImageRefOk : public ::testing::TestWithParam<Parsed> {};

TEST_P(ParseImageRefOk, SplitsIntoItsParts) {
  const Parsed& want = GetParam();
  Result<ImageRef> ref = ParseImageRef(want.image);
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  EXPECT_EQ(ref->registry, want.registry);
  EXPECT_EQ(ref->repository, want.repository);
  EXPECT_EQ(ref->tag, want.tag);
  EXPECT_EQ(ref->digest, want.digest);
  EXPECT_EQ(ref->label, want.label);
  EXPECT_EQ(ref->from_registry(), !want.registry.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ParseImageRefOk,
    ::testing::Values(
        Parsed{"BareDigest", kDigest, "", "", "", kDigest, ""},
        Parsed{"LabelledDigest", "sim@" + kDigest, "", "", "", kDigest, "sim"},
        // No dot or colon in the first component: a label, as before registries.
        Parsed{"LabelWithPath", "team/sim@" + kDigest, "", "", "", kDigest, "team/sim"},
        Parsed{"PodmanLocalhostStaysALabel", "localhost/sim@" + kDigest, "", "", "", kDigest, "localhost/sim"},
        Parsed{"LabelWithColonButNoSlash", "sim:v1@" + kDigest, "", "", "", kDigest, "sim:v1"},
        Parsed{"RegistryByDigest", "registry.example.org/team/sim@" + kDigest, "registry.example.org", "team/sim", "",
               kDigest, ""},
        Parsed{"RegistryWithPort", "127.0.0.1:5000/igtest/prog@" + kDigest, "127.0.0.1:5000", "igtest/prog", "",
               kDigest, ""},
        Parsed{"LocalhostWithPort", "localhost:5000/prog@" + kDigest, "localhost:5000", "prog", "", kDigest, ""},
        Parsed{"IPv6", "[::1]:5000/prog@" + kDigest, "[::1]:5000", "prog", "", kDigest, ""},
        Parsed{"Tag", "127.0.0.1:5000/igtest/prog:v1", "127.0.0.1:5000", "igtest/prog", "v1", "", ""},
        Parsed{"TagWithoutPort", "ghcr.io/org/app:1.2.3-rc_1", "ghcr.io", "org/app", "1.2.3-rc_1", "", ""},
        Parsed{"TagAndDigest", "ghcr.io/org/app:v1@" + kDigest, "ghcr.io", "org/app", "v1", kDigest, ""},
        Parsed{"RepositorySeparators", "r.io/a.b/c_d/e-f@" + kDigest, "r.io", "a.b/c_d/e-f", "", kDigest, ""}),
    [](const ::testing::TestParamInfo<Parsed>& info) { return info.param.name; });

struct Refused {
  const char* name;
  std::string image;
  std::string message_part;
};

class ParseImageRefRefuses : public ::testing::TestWithParam<Refused> {};

TEST_P(ParseImageRefRefuses, WithAReason) {
  Result<ImageRef> ref = ParseImageRef(GetParam().image);
  ASSERT_FALSE(ref.ok());
  EXPECT_EQ(ref.status().code(), Code::kInvalidArgument);
  EXPECT_NE(ref.status().message().find(GetParam().message_part), std::string::npos) << ref.status().message();
}

INSTANTIATE_TEST_SUITE_P(Cases, ParseImageRefRefuses,
                         ::testing::Values(
                             // A pushed image still needs its digest; a tag means nothing there.
                             Refused{"PushedTag", "sim:latest", "is not pinned by digest"},
                             Refused{"PushedNameOnly", "sim", "is not pinned by digest"},
                             Refused{"Empty", "", "is not pinned by digest"},
                             Refused{"RegistryNeitherDigestNorTag", "r.io/team/sim", "by neither digest nor tag"},
                             Refused{"ShortDigest", "r.io/sim@sha256:abc", "invalid digest"},
                             Refused{"OtherAlgorithm", "r.io/sim@md5:" + std::string(32, 'a'), "invalid digest"},
                             Refused{"UppercaseHost", "Registry.io/sim@" + kDigest, "lowercase"},
                             Refused{"EmptyHostLabel", "r..io/sim@" + kDigest, "single dots"},
                             Refused{"HostLabelDash", "-r.io/sim@" + kDigest, "registry host"},
                             Refused{"PortZero", "r.io:0/sim@" + kDigest, "outside 1-65535"},
                             Refused{"PortTooBig", "r.io:65536/sim@" + kDigest, "outside 1-65535"},
                             Refused{"PortNotNumber", "r.io:http/sim@" + kDigest, "no valid port"},
                             Refused{"EmptyPort", "r.io:/sim@" + kDigest, "no valid port"},
                             Refused{"BadIPv6", "[zz]:5000/sim@" + kDigest, "bracketed IPv6"},
                             Refused{"UppercaseRepository", "r.io/Team/sim@" + kDigest, "repository"},
                             Refused{"EmptyRepositoryComponent", "r.io/team//sim@" + kDigest, "repository"},
                             Refused{"RepositoryEndsWithDot", "r.io/sim.@" + kDigest, "repository"},
                             Refused{"NoRepository", "r.io/@" + kDigest, "repository"},
                             Refused{"EmptyTag", "r.io/sim:", "tag"},
                             Refused{"TagStartsWithDot", "r.io/sim:.v1", "tag"},
                             Refused{"TagTooLong", "r.io/sim:" + std::string(129, 'a'), "tag"},
                             Refused{"NameTooLong", "r.io/" + std::string(260, 'a') + "@" + kDigest, "too long"}),
                         [](const ::testing::TestParamInfo<Refused>& info) { return info.param.name; });

TEST(ImageRefTest, PinnedDropsTheTagAndKeepsTheDigest) {
  Result<ImageRef> ref = ParseImageRef("ghcr.io/org/app:v1@" + kDigest);
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(ref->Pinned(), "ghcr.io/org/app@" + kDigest);
  EXPECT_EQ(ref->Named(), "ghcr.io/org/app:v1");
  // The pinned form parses back to the same registry image, without a tag.
  Result<ImageRef> again = ParseImageRef(ref->Pinned());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->registry, "ghcr.io");
  EXPECT_EQ(again->repository, "org/app");
  EXPECT_EQ(again->tag, "");
  EXPECT_EQ(again->digest, kDigest);
}

TEST(ParseRegistryHostTest, FoldsCaseAndChecksThePort) {
  Result<std::string> host = ParseRegistryHost("Registry.Example.ORG:5000");
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  EXPECT_EQ(*host, "registry.example.org:5000");
  EXPECT_TRUE(ParseRegistryHost("127.0.0.1:5000").ok());
  EXPECT_TRUE(ParseRegistryHost("[::1]:443").ok());
  EXPECT_FALSE(ParseRegistryHost("").ok());
  EXPECT_FALSE(ParseRegistryHost("r.io:99999").ok());
  EXPECT_FALSE(ParseRegistryHost("r.io/path").ok());
  EXPECT_FALSE(ParseRegistryHost("https://r.io").ok());
}

}  // namespace
}  // namespace idlegrid::manifest
