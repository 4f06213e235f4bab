#include "advert/advertisement.h"

#include <sodium.h>

#include <cstdlib>

namespace idlegrid::advert {
namespace {

Status Fail(AdvertError kind, const std::string& detail, AdvertError* error) {
  if (error != nullptr) *error = kind;
  std::string message = std::string(AdvertErrorName(kind)) + ": " + detail;
  switch (kind) {
    case AdvertError::kMalformed:
      return Status::InvalidArgument(std::move(message));
    case AdvertError::kStaleSequence:
      return Status::FailedPrecondition(std::move(message));
    default:
      return Status::PermissionDenied(std::move(message));
  }
}

}  // namespace

const char* AdvertErrorName(AdvertError error) {
  switch (error) {
    case AdvertError::kNone:
      return "ok";
    case AdvertError::kMalformed:
      return "malformed";
    case AdvertError::kBadSignature:
      return "bad signature";
    case AdvertError::kNodeIdMismatch:
      return "node id mismatch";
    case AdvertError::kStaleSequence:
      return "stale sequence";
    case AdvertError::kWrongKey:
      return "wrong key";
  }
  return "unknown";
}

v1::SignedAdvertisement SignAdvertisement(const v1::Advertisement& ad, const NodeKey& key) {
  v1::Advertisement stamped = ad;
  stamped.set_node_id(key.node_id());
  v1::SignedAdvertisement signed_ad;
  stamped.SerializeToString(signed_ad.mutable_advertisement());
  signed_ad.set_public_key(key.public_key());
  signed_ad.set_signature(key.Sign(signed_ad.advertisement()));
  return signed_ad;
}

Result<VerifiedAdvertisement> VerifyAdvertisement(const v1::SignedAdvertisement& signed_ad,
                                                  const std::string& known_public_key, uint64_t last_sequence,
                                                  AdvertError* error) {
  if (sodium_init() < 0) std::abort();
  const std::string& public_key = signed_ad.public_key();
  if (public_key.size() != crypto_sign_PUBLICKEYBYTES) {
    return Fail(AdvertError::kMalformed, "public key is " + std::to_string(public_key.size()) + " bytes, want 32",
                error);
  }
  if (signed_ad.signature().size() != crypto_sign_BYTES) {
    return Fail(AdvertError::kMalformed,
                "signature is " + std::to_string(signed_ad.signature().size()) + " bytes, want 64", error);
  }
  if (!known_public_key.empty() && known_public_key.size() != crypto_sign_PUBLICKEYBYTES) {
    return Fail(AdvertError::kMalformed,
                "registered public key is " + std::to_string(known_public_key.size()) + " bytes, want 32", error);
  }
  const std::string signer_id = NodeIdFromPublicKey(public_key);
  if (!known_public_key.empty() && known_public_key != public_key) {
    return Fail(AdvertError::kWrongKey,
                "node " + NodeIdFromPublicKey(known_public_key) +
                    " registered with a different public key (advertisement signed by key of " + signer_id + ")",
                error);
  }
  const std::string& bytes = signed_ad.advertisement();
  if (crypto_sign_verify_detached(reinterpret_cast<const unsigned char*>(signed_ad.signature().data()),
                                  reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                                  reinterpret_cast<const unsigned char*>(public_key.data())) != 0) {
    return Fail(AdvertError::kBadSignature, "advertisement bytes do not verify under the key of " + signer_id, error);
  }
  VerifiedAdvertisement verified;
  if (!verified.ad.ParseFromString(bytes)) {
    return Fail(AdvertError::kMalformed, "signed advertisement from " + signer_id + " is not a valid Advertisement",
                error);
  }
  if (verified.ad.node_id() != signer_id) {
    return Fail(AdvertError::kNodeIdMismatch,
                "advertisement says " + verified.ad.node_id() + ", key derives " + signer_id, error);
  }
  if (verified.ad.sequence() <= last_sequence) {
    const std::string seen =
        last_sequence == 0 ? "sequences start at 1" : "already accepted " + std::to_string(last_sequence);
    return Fail(AdvertError::kStaleSequence,
                "got " + std::to_string(verified.ad.sequence()) + ", " + seen + " from " + signer_id, error);
  }
  if (error != nullptr) *error = AdvertError::kNone;
  return verified;
}

}  // namespace idlegrid::advert
