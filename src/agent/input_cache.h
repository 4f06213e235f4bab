#pragma once
// The node's input cache (docs/manifest.md, "The node's input cache"): each
// input artifact is fetched once, verified while it arrives, into
// <cache_dir>/<hex>; a directory input (`unpack`) is unpacked once, by the
// hostile-archive-safe image/dir_archive.h, into <cache_dir>/<hex>.d (the tar
// is then dropped). Attempts get hard links to the cached files (copies
// across filesystems) in their own scratch directory, mounted read-only; the
// cached files are read-only (0444/0555) and owned by the agent, never by a
// job's user, so no attempt can change what a later one reads. The cache is
// bounded by bytes and evicts least recently used digests that no running
// attempt has pinned; one larger than the bound stays only while pinned.
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "agent/attempt_env.h"
#include "image/dir_archive.h"

namespace idlegrid::agent {

inline constexpr uint64_t kDefaultInputCacheBytes = 10ull << 30;
// At most this many digests are advertised (the most recently used).
inline constexpr size_t kMaxAdvertisedInputs = 512;

class InputCache : public InputSource {
 public:
  // `artifacts` is not owned and must outlive the cache. What an earlier
  // agent left in `cache_dir` is taken over (partial downloads removed);
  // errors reading it leave the cache empty, never fail the agent.
  InputCache(std::string cache_dir, uint64_t max_bytes, ArtifactTransfer* artifacts,
             image::DirArchiveLimits unpack_limits = {});

  // See InputSource. Two attempts wanting one digest at once share one
  // download: the second waits for the first. Thread-safe.
  Status Provide(const std::string& attempt_id, const v1::InputSpec& input, const std::string& dest) override;
  void Release(const std::string& attempt_id) override;

  // The digests held ("sha256:<hex>"), sorted: the kMaxAdvertisedInputs
  // most recently used, the advertisement's cached_inputs.
  std::vector<std::string> CachedDigests() const;
  // Artifacts fetched from the coordinator since this cache was made.
  uint64_t downloads() const;
  // Bytes held now (files and unpacked directories).
  uint64_t bytes() const;
  // A new bound (the owner's policy.yaml inputCache); evicts down to it at once.
  void SetBudget(uint64_t max_bytes);

 private:
  struct Entry {
    uint64_t file_bytes = 0;  // <hex>, when held
    uint64_t dir_bytes = 0;   // <hex>.d, when held
    bool has_file = false;
    bool has_dir = false;
    uint64_t last_use = 0;  // use_clock_ when last provided
  };

  // Holds `hex` in the form `unpack` asks, fetching it if it is missing.
  // Called with `lock` held; unlocks while it downloads or unpacks.
  Status EnsureLocked(std::unique_lock<std::mutex>& lock, const std::string& hex, bool unpack);
  Status Fetch(const std::string& hex, bool unpack, Entry* made);
  void EvictLocked();
  void LoadExisting();

  const std::string dir_;
  ArtifactTransfer* const artifacts_;
  const image::DirArchiveLimits unpack_limits_;

  mutable std::mutex mu_;
  std::condition_variable fetched_;
  std::map<std::string, Entry> entries_;               // by hex; guarded by mu_
  std::set<std::string> fetching_;                     // hexes in flight; guarded by mu_
  std::map<std::string, std::set<std::string>> pins_;  // attempt id -> hexes; guarded by mu_
  std::map<std::string, int> pin_counts_;              // hex -> attempts pinning it; guarded by mu_
  uint64_t max_bytes_;                                 // guarded by mu_
  uint64_t use_clock_ = 0;                             // guarded by mu_
  uint64_t bytes_ = 0;                                 // guarded by mu_
  uint64_t downloads_ = 0;                             // guarded by mu_
};

}  // namespace idlegrid::agent
