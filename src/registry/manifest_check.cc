#include "registry/manifest_check.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "image/oci_archive.h"

namespace idlegrid::registry {
namespace {

constexpr char kOciIndex[] = "application/vnd.oci.image.index.v1+json";
constexpr char kDockerList[] = "application/vnd.docker.distribution.manifest.list.v2+json";
constexpr char kDockerManifest[] = "application/vnd.docker.distribution.manifest.v2+json";

}  // namespace

Result<std::string> RunnableManifestConfig(const std::string& manifest_json, const std::string& reference) {
  google::protobuf::Struct object;
  if (!google::protobuf::util::JsonStringToMessage(manifest_json, &object).ok()) {
    return Status::InvalidArgument("the manifest the registry served for " + reference + " is not a JSON object");
  }
  const auto& fields = object.fields();
  auto media = fields.find("mediaType");
  const std::string media_type =
      media != fields.end() && media->second.has_string_value() ? media->second.string_value() : "";
  auto schema = fields.find("schemaVersion");
  if (schema != fields.end() && schema->second.has_number_value() && schema->second.number_value() == 1) {
    return Status::FailedPrecondition(reference +
                                      " is a Docker schema 1 manifest; idlegrid runs OCI image manifests: "
                                      "convert it with `skopeo copy --format oci` and name the new digest");
  }
  if (media_type == kOciIndex || media_type == kDockerList || fields.count("manifests") > 0) {
    return Status::FailedPrecondition(reference +
                                      " is an image index (one manifest per platform); name one "
                                      "platform's manifest by its digest (`skopeo inspect --raw docker://" +
                                      reference + "` lists them)");
  }
  if (media_type == kDockerManifest) {
    return Status::FailedPrecondition(reference +
                                      " is a Docker schema 2 manifest; idlegrid runs OCI image manifests, "
                                      "whose digest the copy to a node keeps: convert it with `skopeo copy "
                                      "--format oci` and name the new digest");
  }
  return image::OciManifestConfigDigest(manifest_json, "the manifest of " + reference);
}

}  // namespace idlegrid::registry
