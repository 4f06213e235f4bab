#pragma once
// Signed, versioned capacity advertisements. Pure: no I/O, no clock.
//
// A node signs the exact serialized Advertisement bytes with its Ed25519 key;
// the coordinator verifies the signature, that the advertised node id derives
// from the signing key, that the key is the one the node registered with, and
// that the sequence number moves strictly forward (no replays).
#include <cstdint>
#include <string>

#include "advert/node_key.h"
#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::advert {

// Returns a copy of `ad` with node_id set to key.node_id(), serialized into
// SignedAdvertisement.advertisement and signed with `key`. The caller owns
// the sequence number and must make it strictly increasing.
v1::SignedAdvertisement SignAdvertisement(const v1::Advertisement& ad, const NodeKey& key);

// Why verification failed; distinct so logs and tests can tell them apart.
enum class AdvertError {
  kNone,
  kMalformed,       // wrong key/signature sizes, unparsable advertisement bytes
  kBadSignature,    // the signature does not verify under the carried public key
  kNodeIdMismatch,  // advertisement's node_id does not derive from the carried key
  kStaleSequence,   // sequence not greater than the last accepted one (replay)
  kWrongKey,        // the node registered with a different public key
};

// "malformed", "bad signature", ... : the prefix of the matching Status message.
const char* AdvertErrorName(AdvertError error);

struct VerifiedAdvertisement {
  v1::Advertisement ad;
};

// Verifies `signed_ad` and returns the parsed advertisement.
//
// known_public_key: the raw 32-byte key the node registered with, or "" on
//   first contact (any key is accepted; the node id must still derive from it).
// last_sequence: the highest sequence accepted so far from this node (0 =
//   none); the advertisement's sequence must be strictly greater.
//
// Checks run in this order, and the first failure is reported: sizes
// (kMalformed), registered key (kWrongKey), signature (kBadSignature), parse
// (kMalformed), node id (kNodeIdMismatch), sequence (kStaleSequence). The
// signature is checked before parsing, so tampered bytes are always
// kBadSignature, never kMalformed.
//
// On failure the Status message starts with AdvertErrorName(), e.g.
// "stale sequence: got 4, already accepted 7". Codes: InvalidArgument for
// kMalformed, FailedPrecondition for kStaleSequence, PermissionDenied for the
// rest. `error`, if not null, is set on success (kNone) and on failure.
Result<VerifiedAdvertisement> VerifyAdvertisement(const v1::SignedAdvertisement& signed_ad,
                                                  const std::string& known_public_key, uint64_t last_sequence,
                                                  AdvertError* error);

}  // namespace idlegrid::advert
