// Image signatures in the coordinator (docs/containment.md, Signatures): adding one after
// checking it, the operator's rule at submit, and the readiness images the
// coordinator signs itself. The signatures live in ImageSignatureFiles; the
// rules over keys and bytes in image/signature.h.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/digest.h"
#include "coordinator/coordinator.h"
#include "manifest/manifest.h"

namespace idlegrid::coordinator {

namespace {
constexpr char kCoordinatorSigner[] = "coordinator";
}  // namespace

Result<v1::ImageSignature> Coordinator::AddImageSignature(const v1::AddImageSignatureRequest& request,
                                                          const std::string& account) {
  const std::string image = manifest::ImageDigestOf(request.image());
  if (!IsValidDigest(image)) {
    return Status::InvalidArgument("image \"" + request.image().substr(0, 100) +
                                   "\" is not a manifest digest (sha256:<64 hex>, as `idlegrid image push` prints it)");
  }
  IG_ASSIGN_OR_RETURN(auto stored, store_->GetImage(image));
  // Another tenant's private image reads as a missing one (no existence leak).
  if (stored) {
    IG_ASSIGN_OR_RETURN(bool usable, MayUse(account, stored->archive_digest));
    if (!usable) stored.reset();
  }
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
  IG_RETURN_IF_ERROR(image_signatures_.Put(record));
  spdlog::info("image {} signed by key {} ({}), added by {}", image, record.key_id(), record.key_name(), account);
  Notify();  // tasks waiting for a node that trusts this key may be placed now
  return record;
}

std::vector<v1::ImageSignature> Coordinator::ImageSignaturesOf(const std::string& image) const {
  return image_signatures_.Of(image);
}

Status Coordinator::CheckImageTrusted(const std::string& image) const {
  if (!options_.require_signed_images) return Status::Ok();
  const image::SignatureVerdict verdict =
      image::JudgeSignatures(image, image_signatures_.Of(image), options_.trusted_image_keys);
  if (verdict.trusted()) return Status::Ok();
  return Status::FailedPrecondition(
      image::UntrustedImageReason(image, verdict, options_.trusted_image_keys, "this coordinator's operator") +
      "; have it signed with one of those keys: `idlegrid image sign " + image + " --key KEY.key`");
}

void Coordinator::SignOwnImage(const std::string& image) {
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
    stored = image_signatures_.Put(record);
  }
  // Unsigned, the benchmark still runs wherever no signature is required.
  if (!stored.ok()) spdlog::error("readiness image {} not signed: {}", image, stored.message());
}

std::string Coordinator::ReadinessKeyUntrusted(const v1::Advertisement& ad) const {
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
