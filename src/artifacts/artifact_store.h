#pragma once
// Content-addressed blobs on the local filesystem: <root>/sha256/<ab>/<hex>.
// A blob becomes visible only after its bytes hash to its name, so a crash
// mid-upload leaves at most a stray temp file, never a wrong blob.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "common/digest.h"
#include "common/status.h"

namespace idlegrid::artifacts {

// Receives one blob. Not thread-safe; one writer per upload.
class BlobWriter {
 public:
  ~BlobWriter();
  Status Append(const void* data, size_t size);
  // Verifies the digest (and the size, when one was announced) and publishes
  // the blob. DataLoss on mismatch (the bytes are discarded).
  Result<std::string> Commit();
  uint64_t size() const { return size_; }

 private:
  friend class ArtifactStore;
  BlobWriter(std::string root, std::string expected_digest, uint64_t expected_size, std::string tmp_path, FILE* file);
  std::string root_;
  std::string expected_digest_;
  uint64_t expected_size_;
  std::string tmp_path_;
  FILE* file_;
  Sha256 hash_;
  uint64_t size_ = 0;
  bool done_ = false;
};

// Largest blob accepted (images, inputs, outputs): an authenticated client
// still must not be able to fill the coordinator's disk with one upload.
inline constexpr uint64_t kMaxArtifactBytes = 16ull << 30;

class ArtifactStore {
 public:
  explicit ArtifactStore(std::string root) : root_(std::move(root)) {}
  Status Init();
  // The directory blobs live under (<root>/sha256/...).
  const std::string& root() const { return root_; }
  // `expected_digest` may be empty (the digest is then whatever the bytes hash
  // to); `expected_size` 0 means unknown. Caps the upload at max_size bytes.
  Result<std::unique_ptr<BlobWriter>> NewWriter(const std::string& expected_digest, uint64_t expected_size);
  bool Has(const std::string& digest) const;
  std::string PathOf(const std::string& digest) const;
  Result<uint64_t> SizeOf(const std::string& digest) const;
  // Unlinks the blob (Ok if it is already gone).
  Status Remove(const std::string& digest);

 private:
  std::string root_;
};

}  // namespace idlegrid::artifacts
