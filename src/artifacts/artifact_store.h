#pragma once
// Content-addressed blobs on the local filesystem: <root>/sha256/<ab>/<hex>.
// A blob becomes visible only after its bytes hash to its name, so a crash
// mid-upload leaves at most a stray temp file, never a wrong blob.
//
// Interrupted uploads: an upload that announces its digest and size keeps the
// bytes it received under <root>/partial/<hex>.<uploader> when it stops
// early, so the same uploader can resume it (NewResumableWriter with an
// offset). <uploader> is a hash of the caller's name ("account alice",
// "node n-1"): two uploaders never share a partial, and a caller resuming
// one proves nothing about anyone else's bytes. A resumed upload re-hashes
// the kept prefix and is verified whole at the end, like any other.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/digest.h"
#include "common/mutex.h"
#include "common/status.h"

namespace idlegrid::artifacts {

// Receives one blob. Not thread-safe; one writer per upload.
class BlobWriter {
 public:
  ~BlobWriter();
  BlobWriter(const BlobWriter&) = delete;
  BlobWriter& operator=(const BlobWriter&) = delete;
  // InvalidArgument past the announced size or kMaxArtifactBytes, Internal
  // when the disk refuses; either way a resumable writer then discards its
  // partial instead of keeping it.
  Status Append(const void* data, size_t size);
  // Verifies the digest (and the size, when one was announced) and publishes
  // the blob. DataLoss on mismatch (the bytes are discarded, a resumable
  // writer's partial too, so the next try starts from 0).
  Result<std::string> Commit();
  // Bytes held: the resumed prefix plus everything appended.
  uint64_t size() const { return size_; }
  // A resumable writer that holds fewer bytes than announced (the upload
  // stopped early): its partial survives this writer for a resume.
  bool keeps_partial() const { return keep_partial_ && !done_; }

 private:
  friend class ArtifactStore;
  void StartWriteback();
  // Resumable: takes over the first `offset` bytes of its partial (re-hashed,
  // never trusted) and appends after them; Internal if they cannot be read
  // back.
  Status ResumeAt(uint64_t offset);
  BlobWriter(std::string root, std::string expected_digest, uint64_t expected_size, std::string tmp_path, FILE* file);
  std::string root_;
  std::string expected_digest_;
  uint64_t expected_size_;
  std::string tmp_path_;
  FILE* file_;
  Sha256 hash_;
  uint64_t size_ = 0;
  bool done_ = false;
  // Writeback started up to here, and waited for up to here (StartWriteback).
  uint64_t writeback_started_ = 0;
  uint64_t writeback_waited_ = 0;
  bool keep_partial_ = false;      // resumable: keep tmp_path_ when destroyed uncommitted
  std::function<void()> release_;  // resumable: frees the partial for the next writer
};

// Largest blob accepted (images, inputs, outputs): an authenticated client
// still must not be able to fill the coordinator's disk with one upload. One
// uploader's interrupted uploads together are held to the same bound.
inline constexpr uint64_t kMaxArtifactBytes = 16ull << 30;
// Interrupted uploads untouched this long are removed (at Init, and lazily
// whenever a resumable upload starts).
inline constexpr int64_t kPartialMaxAgeMs = 24ll * 3600 * 1000;

class ArtifactStore {
 public:
  // `clock` (not owned; default the system's) dates partials for expiry.
  explicit ArtifactStore(std::string root, const Clock* clock = nullptr);
  // Creates the directories and removes partials older than kPartialMaxAgeMs.
  Status Init();
  // The directory blobs live under (<root>/sha256/...).
  const std::string& root() const { return root_; }
  // `expected_digest` may be empty (the digest is then whatever the bytes hash
  // to); `expected_size` 0 means unknown. Caps the upload at max_size bytes.
  // The bytes of an upload that stops early are discarded.
  Result<std::unique_ptr<BlobWriter>> NewWriter(const std::string& expected_digest, uint64_t expected_size);
  // A writer whose bytes survive an upload that stops early, for `uploader`
  // to resume. `offset` 0 starts over (dropping any kept bytes); N > 0
  // continues after the first N kept bytes, re-hashed here (so Commit still
  // verifies the whole blob): FailedPrecondition naming both sizes if fewer
  // are held. Waits (bounded) for an earlier writer of the same partial in
  // this process to finish; Unavailable if it does not, or if another process
  // holds it. Evicts this uploader's oldest other partials when they and this
  // one would exceed kMaxArtifactBytes, and any partial past its age.
  // Thread-safe.
  Result<std::unique_ptr<BlobWriter>> NewResumableWriter(const std::string& expected_digest, uint64_t expected_size,
                                                         const std::string& uploader, uint64_t offset);
  // Bytes an interrupted upload of `digest` by `uploader` holds (0: none).
  // While a writer holds that partial, waits (bounded) for it to finish.
  uint64_t PartialBytes(const std::string& digest, const std::string& uploader) const;
  // Bytes of all of `uploader`'s interrupted uploads but the one of
  // `except_digest` (which may be empty): what they hold of its quota.
  uint64_t PartialBytesOf(const std::string& uploader, const std::string& except_digest = "") const;
  // Where the partial lives (tests tamper with it; nothing else should).
  std::string PartialPathOf(const std::string& digest, const std::string& uploader) const;
  // Removes partials not written for kPartialMaxAgeMs (skipping any in use);
  // returns how many went.
  int RemoveStalePartials();

  bool Has(const std::string& digest) const;
  std::string PathOf(const std::string& digest) const;
  Result<uint64_t> SizeOf(const std::string& digest) const;
  // Unlinks the blob (Ok if it is already gone).
  Status Remove(const std::string& digest);

 private:
  struct PartialFile {
    std::string path;
    uint64_t bytes = 0;
    int64_t mtime_ms = 0;
  };
  // `suffix`: only partials of one uploader ("" = all).
  std::vector<PartialFile> ListPartials(const std::string& suffix) const;
  void ReleasePartial(const std::string& path);
  // Marks the partial at `path` busy for a new writer, waiting (bounded) for
  // an earlier one here to release it (Unavailable if it does not), and makes
  // room for `expected_size` more bytes of `uploader`'s.
  Status ClaimPartial(const std::string& path, const std::string& expected_digest, const std::string& uploader,
                      uint64_t expected_size) IG_EXCLUDES(mu_);
  // Removes `uploader`'s oldest idle partials but `path` while they and
  // `expected_size` would exceed kMaxArtifactBytes.
  void EvictOldestPartialsLocked(const std::string& uploader, const std::string& path, uint64_t expected_size)
      IG_REQUIRES(mu_);
  // Unlinks `path` unless a writer holds it here or in another process.
  bool RemoveIdlePartial(const std::string& path) IG_REQUIRES(mu_);
  int RemoveStalePartialsLocked() IG_REQUIRES(mu_);

  // Constant after construction.
  const std::string root_;
  const Clock* const clock_;

  mutable Mutex mu_;
  mutable CondVar released_;                                // a partial left busy_partials_
  std::set<std::string> busy_partials_ IG_GUARDED_BY(mu_);  // paths a writer holds
};

}  // namespace idlegrid::artifacts
