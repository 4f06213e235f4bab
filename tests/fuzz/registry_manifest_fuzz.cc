// Fuzzes what an OCI registry serves for a job's image (docs/registries.md):
// registry::RunnableManifestConfig on the manifest or index bytes,
// image::ParseOciManifestBlobs (what the agent's layered image cache pulls by)
// and image::ParseImageConfig on the config blob. Invariants: a runnable
// manifest's config digest is a valid sha256 digest and the same one
// OciManifestConfigDigest and ParseOciManifestBlobs find; its layers are
// valid digests, each listed once; an index, Docker list or Docker manifest
// is FailedPrecondition, and anything else malformed InvalidArgument.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "common/digest.h"
#include "fuzz_support.h"
#include "image/image_config.h"
#include "image/oci_archive.h"
#include "registry/manifest_check.h"

namespace {

using idlegrid::Code;
namespace image = idlegrid::image;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string json = idlegrid::fuzz::AsString(data, size);
  auto config = idlegrid::registry::RunnableManifestConfig(json, "registry.example.org/team/sim:v1");
  auto blobs = image::ParseOciManifestBlobs(json, "manifest");
  if (config.ok()) {
    FUZZ_CHECK(idlegrid::IsValidDigest(config.value()));
    auto direct = image::OciManifestConfigDigest(json, "manifest");
    FUZZ_CHECK(direct.ok() && direct.value() == config.value());
    FUZZ_CHECK(blobs.ok() && blobs->config.digest == config.value());
  } else {
    const Code code = config.status().code();
    FUZZ_CHECK(code == Code::kFailedPrecondition || code == Code::kInvalidArgument);
  }
  if (blobs.ok()) {
    FUZZ_CHECK(idlegrid::IsValidDigest(blobs->config.digest));
    std::set<std::string> seen;
    for (const image::OciBlobRef& layer : blobs->layers) {
      FUZZ_CHECK(idlegrid::IsValidDigest(layer.digest));
      FUZZ_CHECK(seen.insert(layer.digest).second);
    }
  }
  (void)image::ParseImageConfig(json);
  return 0;
}
