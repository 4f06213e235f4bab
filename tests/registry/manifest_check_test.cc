// What a registry may serve for a job's image (registry/manifest_check.h):
// a single-platform OCI image manifest, and nothing else.
#include "registry/manifest_check.h"

#include <gtest/gtest.h>

#include <string>

namespace idlegrid::registry {
namespace {

const std::string kConfig = "sha256:" + std::string(64, '1');
const std::string kLayer = "sha256:" + std::string(64, '2');

std::string OciManifest(const std::string& media_type_field) {
  return "{\"schemaVersion\":2," + media_type_field +
         "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\","
         "\"digest\":\"" +
         kConfig +
         "\",\"size\":10},\"layers\":[{\"mediaType\":"
         "\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"" +
         kLayer + "\",\"size\":20}]}";
}

TEST(RunnableManifestConfigTest, AnOciImageManifestGivesItsConfig) {
  Result<std::string> config =
      RunnableManifestConfig(OciManifest("\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","), "r.io/a@x");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(*config, kConfig);
  // mediaType is optional in an OCI manifest.
  Result<std::string> bare = RunnableManifestConfig(OciManifest(""), "r.io/a@x");
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  EXPECT_EQ(*bare, kConfig);
}

struct Refused {
  const char* name;
  std::string json;
  Code code;
  std::string message_part;
};

class RunnableManifestConfigRefuses : public ::testing::TestWithParam<Refused> {};

TEST_P(RunnableManifestConfigRefuses, SayingWhatToNameInstead) {
  Result<std::string> config = RunnableManifestConfig(GetParam().json, "r.io/a:v1");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), GetParam().code) << config.status().ToString();
  EXPECT_NE(config.status().message().find(GetParam().message_part), std::string::npos) << config.status().message();
  EXPECT_NE(config.status().message().find("r.io/a:v1"), std::string::npos) << config.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RunnableManifestConfigRefuses,
    ::testing::Values(
        Refused{"OciIndex",
                "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"manifests\":[]}",
                Code::kFailedPrecondition, "image index"},
        Refused{"IndexWithoutMediaType", "{\"schemaVersion\":2,\"manifests\":[]}", Code::kFailedPrecondition,
                "one platform's manifest"},
        Refused{"DockerList",
                "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.docker.distribution.manifest.list.v2+json\","
                "\"manifests\":[]}",
                Code::kFailedPrecondition, "image index"},
        Refused{"DockerSchema2", OciManifest("\"mediaType\":\"application/vnd.docker.distribution.manifest.v2+json\","),
                Code::kFailedPrecondition, "skopeo copy --format oci"},
        Refused{"DockerSchema1", "{\"schemaVersion\":1,\"name\":\"a\",\"fsLayers\":[]}", Code::kFailedPrecondition,
                "schema 1"},
        Refused{"NotJson", "<html>", Code::kInvalidArgument, "not a JSON object"},
        Refused{"NoConfig", "{\"schemaVersion\":2,\"layers\":[]}", Code::kInvalidArgument, "no config"}),
    [](const ::testing::TestParamInfo<Refused>& info) { return info.param.name; });

}  // namespace
}  // namespace idlegrid::registry
