#pragma once
// SHA-256 content digests in the "sha256:<64 lowercase hex>" form used for
// every artifact, image and manifest.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace idlegrid {

// Incremental hasher; not thread-safe.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void Update(const void* data, size_t size);
  void Update(std::string_view data) { Update(data.data(), data.size()); }
  // Returns "sha256:<hex>". The hasher cannot be used afterwards.
  std::string Finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string Sha256Digest(std::string_view data);
// Hashes a file without loading it whole.
Result<std::string> Sha256File(const std::string& path);
// True for "sha256:" followed by exactly 64 lowercase hex characters.
bool IsValidDigest(std::string_view digest);
// The 64 hex characters of a valid digest.
std::string DigestHex(std::string_view digest);

}  // namespace idlegrid
