// Images pushed layer by layer (docs/python.md, "Images"): the requester
// uploads only the blobs the coordinator lacks, then registers the manifest.
#include <spdlog/spdlog.h>

#include "common/digest.h"
#include "common/fs.h"
#include "coordinator/coordinator.h"
#include "image/oci_archive.h"

namespace idlegrid::coordinator {
namespace {

constexpr uint64_t kMaxManifestBytes = 4 << 20;

Result<image::OciManifestBlobs> ReadStoredManifest(artifacts::ArtifactStore* store, const std::string& digest) {
  IG_ASSIGN_OR_RETURN(uint64_t size, store->SizeOf(digest));
  if (size > kMaxManifestBytes) return Status::InvalidArgument("manifest " + digest + " is larger than 4 MiB");
  IG_ASSIGN_OR_RETURN(std::string text, ReadFile(store->PathOf(digest)));
  // The store published it under its digest; hashing again costs little and
  // catches a blob that rotted on disk before it is trusted.
  if (Sha256Digest(text) != digest) return Status::DataLoss("stored manifest " + digest + " is corrupt");
  return image::ParseOciManifestBlobs(text, "manifest " + digest);
}

}  // namespace

Result<v1::PushImageResponse> Coordinator::RegisterLayeredImage(
    const std::string& manifest_digest, const std::function<Status(const std::string&)>& may_read) {
  if (!IsValidDigest(manifest_digest)) {
    return Status::InvalidArgument("manifest digest must be sha256:<64 hex>, got '" + manifest_digest.substr(0, 80) +
                                   "'");
  }
  if (!artifacts_->Has(manifest_digest)) {
    return Status::NotFound("manifest " + manifest_digest + " was not uploaded");
  }
  IG_ASSIGN_OR_RETURN(image::OciManifestBlobs blobs, ReadStoredManifest(artifacts_.get(), manifest_digest));
  std::vector<std::pair<std::string, image::OciBlobRef>> named{{"config", blobs.config}};
  for (size_t i = 0; i < blobs.layers.size(); ++i) named.push_back({"layer " + std::to_string(i), blobs.layers[i]});
  for (const auto& [what, ref] : named) {
    if (!artifacts_->Has(ref.digest)) {
      return Status::FailedPrecondition(what + " " + ref.digest + " of manifest " + manifest_digest +
                                        " was not uploaded; push its blobs first");
    }
    IG_ASSIGN_OR_RETURN(uint64_t size, artifacts_->SizeOf(ref.digest));
    if (size != ref.size) {
      return Status::DataLoss(what + " " + ref.digest + " is " + std::to_string(size) + " bytes; the manifest says " +
                              std::to_string(ref.size));
    }
    IG_RETURN_IF_ERROR(may_read(ref.digest).WithContext(what));
  }
  IG_RETURN_IF_ERROR(store_->RegisterImage({manifest_digest, blobs.config.digest, manifest_digest}, clock_->NowMs()));
  spdlog::info("image {} registered by layers (config {}, {} layers)", manifest_digest, blobs.config.digest,
               blobs.layers.size());
  v1::PushImageResponse out;
  out.set_image(manifest_digest);
  out.set_config_digest(blobs.config.digest);
  return out;
}

Result<std::vector<v1::ArtifactRef>> Coordinator::ImageBlobsOf(const store::ImageRecord& image) {
  std::vector<v1::ArtifactRef> out;
  if (image.archive_digest != image.manifest_digest) return out;  // one archive
  if (auto known = manifest_blobs_.Get(image.manifest_digest)) return std::move(*known);
  IG_ASSIGN_OR_RETURN(uint64_t manifest_size, artifacts_->SizeOf(image.manifest_digest));
  IG_ASSIGN_OR_RETURN(image::OciManifestBlobs blobs, ReadStoredManifest(artifacts_.get(), image.manifest_digest));
  auto add = [&](const std::string& digest, uint64_t size) {
    v1::ArtifactRef ref;
    ref.set_digest(digest);
    ref.set_size(size);
    out.push_back(std::move(ref));
  };
  add(image.manifest_digest, manifest_size);
  add(blobs.config.digest, blobs.config.size);
  for (const image::OciBlobRef& layer : blobs.layers) {
    if (layer.digest != blobs.config.digest) add(layer.digest, layer.size);
  }
  manifest_blobs_.Put(image.manifest_digest, out);
  return out;
}

}  // namespace idlegrid::coordinator
