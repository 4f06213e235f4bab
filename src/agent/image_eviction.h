#pragma once
// Which cached images an agent drops to stay within its owner's disk budget
// for images (policy.yaml imageCache). Pure: the image cache (image_cache.h)
// reads its directory into these values and carries the plan out.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace idlegrid::agent {

struct CachedBlob {
  std::string digest;
  uint64_t size = 0;
};

struct CachedImageEntry {
  std::string manifest_digest;
  std::vector<CachedBlob> blobs;  // what it is made of (manifest, config, layers)
  int64_t last_used_ms = 0;
  bool in_use = false;  // a running attempt (or the load now under way) uses it
};

struct EvictionPlan {
  std::vector<std::string> images;  // manifest digests, least recently used first
  std::vector<std::string> blobs;   // blobs no kept image uses any more
  uint64_t bytes_kept = 0;          // distinct blob bytes after the plan
};

// Drops blobs no image lists (a download a crash interrupted) first, then
// whole images, least recently used first (ties by digest, so the plan is
// deterministic), until the distinct bytes of the kept images' blobs fit
// `budget_bytes`. Never an image in use, and never a blob a kept image still
// uses (images share base layers): a plan may therefore end above budget,
// which bytes_kept shows. `all_blobs` is every blob on disk.
EvictionPlan PlanImageEviction(const std::vector<CachedImageEntry>& images, const std::vector<CachedBlob>& all_blobs,
                               uint64_t budget_bytes);

}  // namespace idlegrid::agent
