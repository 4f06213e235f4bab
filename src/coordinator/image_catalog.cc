// The images jobs may name (image_catalog.h).
#include "coordinator/image_catalog.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <utility>

#include "common/digest.h"
#include "common/fs.h"
#include "image/oci_archive.h"
#include "manifest/manifest.h"

namespace idlegrid::coordinator {
namespace {

constexpr char kCoordinatorSigner[] = "coordinator";
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

Result<bool> MayUse(store::Store& store, const std::string& account, const std::string& digest) {
  if (account == store::kOperatorAccount) return true;
  IG_ASSIGN_OR_RETURN(store::ArtifactAccess access, store.ArtifactAccessOf(digest));
  return access.is_public || access.accounts.count(account) > 0;
}

ImageCatalog::ImageCatalog(store::Store* store, artifacts::ArtifactStore* artifacts, registry::RegistryClient* registry,
                           const Clock* clock, Options options, std::function<void()> changed)
    : store_(store),
      artifacts_(artifacts),
      registry_(registry),
      clock_(clock),
      options_(std::move(options)),
      changed_(std::move(changed)),
      signatures_(artifacts->root() + "/signatures", clock) {}

Result<v1::PushImageResponse> ImageCatalog::RegisterArchive(const std::string& archive_digest) {
  if (!artifacts_->Has(archive_digest)) {
    return Status::NotFound("archive " + archive_digest + " was not uploaded");
  }
  // Verify the archive ourselves: never trust the pusher's claim of what it holds.
  IG_ASSIGN_OR_RETURN(image::OciImageInfo info, image::InspectOciArchive(artifacts_->PathOf(archive_digest)));
  IG_RETURN_IF_ERROR(
      store_->RegisterImage({info.manifest_digest, info.config_digest, archive_digest}, clock_->NowMs()));
  spdlog::info("image {} registered (config {}, archive {})", info.manifest_digest, info.config_digest, archive_digest);
  v1::PushImageResponse out;
  out.set_image(info.manifest_digest);
  out.set_config_digest(info.config_digest);
  out.set_archive_digest(archive_digest);
  return out;
}

Result<v1::PushImageResponse> ImageCatalog::RegisterLayered(const std::string& manifest_digest,
                                                            const std::function<Status(const std::string&)>& may_read) {
  if (!IsValidDigest(manifest_digest)) {
    return Status::InvalidArgument("manifest digest must be sha256:<64 hex>, got '" + manifest_digest.substr(0, 80) +
                                   "'");
  }
  if (!artifacts_->Has(manifest_digest)) {
    return Status::NotFound("manifest " + manifest_digest + " was not uploaded");
  }
  IG_ASSIGN_OR_RETURN(image::OciManifestBlobs blobs, ReadStoredManifest(artifacts_, manifest_digest));
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

Result<std::string> ImageCatalog::ImportArchive(const std::string& path) {
  IG_ASSIGN_OR_RETURN(auto writer, artifacts_->NewWriter("", 0));
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    IG_RETURN_IF_ERROR(writer->Append(buf.data(), static_cast<size_t>(in.gcount())));
  }
  IG_ASSIGN_OR_RETURN(std::string digest, writer->Commit());
  IG_RETURN_IF_ERROR(store_->RecordArtifact(digest, writer->size(), "image", clock_->NowMs()));
  IG_ASSIGN_OR_RETURN(v1::PushImageResponse image, RegisterArchive(digest));
  return image.image();
}

Result<std::vector<v1::ArtifactRef>> ImageCatalog::BlobsOf(const store::ImageRecord& image) {
  std::vector<v1::ArtifactRef> out;
  if (image.archive_digest != image.manifest_digest) return out;  // one archive
  if (auto known = manifest_blobs_.Get(image.manifest_digest)) return std::move(*known);
  IG_ASSIGN_OR_RETURN(uint64_t manifest_size, artifacts_->SizeOf(image.manifest_digest));
  IG_ASSIGN_OR_RETURN(image::OciManifestBlobs blobs, ReadStoredManifest(artifacts_, image.manifest_digest));
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

std::shared_ptr<const std::vector<sched::ImageLayer>> ImageCatalog::LayersOf(const std::string& manifest_digest) {
  // The dispatcher asks every pass: a layered image known to the blob cache
  // (content-addressed, never stale) costs no store read.
  Result<std::vector<v1::ArtifactRef>> blobs = std::vector<v1::ArtifactRef>{};
  if (auto known = manifest_blobs_.Get(manifest_digest)) {
    blobs = std::move(*known);
  } else {
    Result<std::optional<store::ImageRecord>> image = store_->GetImage(manifest_digest);
    if (!image.ok() || !*image) return nullptr;
    blobs = BlobsOf(**image);
  }
  if (!blobs.ok() || blobs->empty()) return nullptr;
  auto layers = std::make_shared<std::vector<sched::ImageLayer>>();
  // BlobsOf lists the manifest and the config first: small, and never shared.
  for (size_t i = 2; i < blobs->size(); ++i) layers->push_back({(*blobs)[i].digest(), (*blobs)[i].size()});
  if (layers->empty()) return nullptr;
  return layers;
}

Result<std::optional<store::ImageRecord>> ImageCatalog::UsableImage(const std::string& manifest_digest,
                                                                    const std::string& account) {
  IG_ASSIGN_OR_RETURN(auto image, store_->GetImage(manifest_digest));
  if (image) {
    IG_ASSIGN_OR_RETURN(bool usable, MayUse(*store_, account, image->archive_digest));
    if (!usable) image.reset();
  }
  return image;
}

Status ImageCatalog::PinRegistryImage(const manifest::ImageRef& ref, v1::JobSpec* spec) {
  IG_RETURN_IF_ERROR(registry::CheckOperatorAllows(ref, options_.registries).WithContext("spec.image"));
  if (registry_ == nullptr) {
    return Status::FailedPrecondition("spec.image: this coordinator was started without a registry client");
  }
  // Resolved once, here: a tag moved later changes no attempt of this job.
  Result<registry::ResolvedImage> resolved = registry_->Resolve(ref);
  if (!resolved.ok()) return resolved.status().WithContext("spec.image");
  manifest::ImageRef pinned = ref;
  pinned.digest = resolved->manifest_digest;
  v1::RegistryImage* record = spec->mutable_registry_image();
  record->set_registry(ref.registry);
  record->set_requested(spec->image());
  record->set_config_digest(resolved->config_digest);
  spec->set_image(pinned.Pinned());
  if (ref.digest.empty()) spdlog::info("image {} resolved to {}", ref.Named(), pinned.digest);
  return Status::Ok();
}

Result<v1::ImageSignature> ImageCatalog::AddSignature(const v1::AddImageSignatureRequest& request,
                                                      const std::string& account) {
  const std::string image = manifest::ImageDigestOf(request.image());
  if (!IsValidDigest(image)) {
    return Status::InvalidArgument("image \"" + request.image().substr(0, 100) +
                                   "\" is not a manifest digest (sha256:<64 hex>, as `idlegrid image push` prints it)");
  }
  IG_ASSIGN_OR_RETURN(auto stored, UsableImage(image, account));
  if (!stored) return Status::NotFound("image " + image + " is not in this coordinator's store");
  if (!request.key_name().empty()) {
    IG_RETURN_IF_ERROR(image::ValidateKeyName(request.key_name()));
  }
  if (Status valid = image::VerifyImageSignature(image, request.public_key(), request.signature()); !valid.ok()) {
    spdlog::info("image signature refused for {} from account {}: {}", image, account, valid.message());
    return valid.WithContext("signature refused");
  }
  v1::ImageSignature record;
  record.set_image(image);
  record.set_public_key(request.public_key());
  record.set_signature(request.signature());
  record.set_key_id(image::ImageKeyId(request.public_key()));
  record.set_key_name(request.key_name());
  record.set_added_by(account);
  record.set_added_at_ms(clock_->NowMs());
  IG_RETURN_IF_ERROR(signatures_.Put(record));
  spdlog::info("image {} signed by key {} ({}), added by {}", image, record.key_id(), record.key_name(), account);
  changed_();  // tasks waiting for a node that trusts this key may be placed now
  return record;
}

std::vector<v1::ImageSignature> ImageCatalog::SignaturesOf(const std::string& image) const {
  return signatures_.Of(image);
}

Status ImageCatalog::CheckTrusted(const std::string& image) const {
  if (!options_.require_signed_images) return Status::Ok();
  const image::SignatureVerdict verdict =
      image::JudgeSignatures(image, signatures_.Of(image), options_.trusted_image_keys);
  if (verdict.trusted()) return Status::Ok();
  return Status::FailedPrecondition(
      image::UntrustedImageReason(image, verdict, options_.trusted_image_keys, "this coordinator's operator") +
      "; have it signed with one of those keys: `idlegrid image sign " + image + " --key KEY.key`");
}

void ImageCatalog::SignOwn(const std::string& image) {
  if (!options_.readiness_image_key) return;
  const image::ImageSigningKey& key = *options_.readiness_image_key;
  auto signature = key.Sign(image);
  Status stored = signature.ok() ? Status::Ok() : signature.status();
  if (stored.ok()) {
    v1::ImageSignature record;
    record.set_image(image);
    record.set_public_key(key.public_key().key);
    record.set_signature(*signature);
    record.set_key_id(key.public_key().id());
    record.set_key_name(key.public_key().name);
    record.set_added_by(kCoordinatorSigner);
    record.set_added_at_ms(clock_->NowMs());
    stored = signatures_.Put(record);
  }
  // Unsigned, the benchmark still runs wherever no signature is required.
  if (!stored.ok()) spdlog::error("readiness image {} not signed: {}", image, stored.message());
}

std::string ImageCatalog::ReadinessKeyUntrusted(const v1::Advertisement& ad) const {
  const auto& trusted = ad.policy().trusted_image_key_ids();
  if (trusted.empty()) return "";
  if (options_.readiness_image_key &&
      std::find(trusted.begin(), trusted.end(), options_.readiness_image_key->public_key().id()) != trusted.end()) {
    return "";
  }
  const std::string key = options_.readiness_image_key
                              ? "the coordinator's readiness key " + options_.readiness_image_key->public_key().id() +
                                    " (readiness-image.pub in its shared directory)"
                              : "a key the coordinator signs its benchmark with (it has none)";
  return "its owner's trustedImageKeys do not include " + key + ", so it cannot run the readiness benchmark";
}

}  // namespace idlegrid::coordinator
