#pragma once
// A node's Ed25519 identity. The node id is derived from the public key, so
// anyone holding a signed advertisement can check which node signed it.
#include <array>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace idlegrid::advert {

// "n-" + the first 16 hex characters of sha256(public_key): stable, derived,
// checkable by anyone. Any byte string is accepted; callers validate sizes.
std::string NodeIdFromPublicKey(const std::string& public_key);
// "sha256:<64 hex>" of the raw public key: the key's fingerprint in an
// attempt's provenance. The node id is "n-" + its first 16 hex characters.
std::string KeyFingerprint(const std::string& public_key);

// Immutable after construction; safe to share between threads for reading.
// The secret key is wiped from memory when the object is destroyed.
class NodeKey {
 public:
  // Loads <dir>/node.key, or generates a key and writes it there on first
  // start (creating `dir` with mode 0700 if it is missing).
  //
  // File format: the 64-byte libsodium secret key (32-byte seed followed by
  // the 32-byte public key) as 128 lowercase hex characters and a newline;
  // trailing whitespace is ignored on load. Written atomically with mode 0600.
  //
  // Errors: PermissionDenied if the file grants any access to group or others
  // (the message names the file and the chmod to run); DataLoss if it is not
  // 128 hex characters or its public half does not match its seed; Internal
  // for I/O failures. An existing key is never replaced: regenerating would
  // change the node id silently.
  //
  // Not safe to call concurrently for the same `dir` (callers hold the data
  // directory lock).
  static Result<NodeKey> LoadOrCreate(const std::string& dir);
  // The same for the key file at `path` (its directory created 0700 if
  // missing); errors call it `what` ("coordinator receipt key"). The
  // coordinator's receipt countersigning key is one (docs/receipts.md).
  static Result<NodeKey> LoadOrCreateFile(const std::string& path, const std::string& what);

  // A fresh random key, not persisted. Aborts if libsodium cannot initialise.
  static NodeKey Generate();

  NodeKey(const NodeKey&) = default;
  NodeKey& operator=(const NodeKey&) = default;
  NodeKey(NodeKey&&) = default;
  NodeKey& operator=(NodeKey&&) = default;
  ~NodeKey();

  // 32 raw bytes.
  const std::string& public_key() const { return public_key_; }
  // NodeIdFromPublicKey(public_key()).
  std::string node_id() const { return NodeIdFromPublicKey(public_key_); }
  // 64-byte Ed25519 detached signature over `message`.
  std::string Sign(const std::string& message) const;

 private:
  static constexpr size_t kSecretKeyBytes = 64;
  using SecretKey = std::array<unsigned char, kSecretKeyBytes>;
  explicit NodeKey(const SecretKey& secret_key);

  SecretKey secret_key_{};
  std::string public_key_;
};

}  // namespace idlegrid::advert
