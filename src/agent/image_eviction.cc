#include "agent/image_eviction.h"

#include <algorithm>
#include <map>
#include <set>

namespace idlegrid::agent {

EvictionPlan PlanImageEviction(const std::vector<CachedImageEntry>& images, const std::vector<CachedBlob>& all_blobs,
                               uint64_t budget_bytes) {
  std::map<std::string, uint64_t> size_of;
  for (const CachedBlob& b : all_blobs) size_of[b.digest] = b.size;
  // How many kept images use each blob on disk.
  std::map<std::string, int> users;
  for (const CachedImageEntry& image : images) {
    std::set<std::string> distinct;
    for (const CachedBlob& b : image.blobs) distinct.insert(b.digest);
    for (const std::string& d : distinct) ++users[d];
  }
  EvictionPlan plan;
  uint64_t kept = 0;
  for (const auto& [digest, size] : size_of) {
    if (users[digest] > 0) {
      kept += size;
    } else {
      plan.blobs.push_back(digest);  // listed by no image
    }
  }
  std::vector<const CachedImageEntry*> order;
  for (const CachedImageEntry& image : images) order.push_back(&image);
  std::sort(order.begin(), order.end(), [](const CachedImageEntry* a, const CachedImageEntry* b) {
    return a->last_used_ms != b->last_used_ms ? a->last_used_ms < b->last_used_ms
                                              : a->manifest_digest < b->manifest_digest;
  });
  for (const CachedImageEntry* image : order) {
    if (kept <= budget_bytes) break;
    if (image->in_use) continue;
    plan.images.push_back(image->manifest_digest);
    std::set<std::string> distinct;
    for (const CachedBlob& b : image->blobs) distinct.insert(b.digest);
    for (const std::string& d : distinct) {
      if (--users[d] > 0 || !size_of.count(d)) continue;
      plan.blobs.push_back(d);
      kept -= size_of[d];
    }
  }
  plan.bytes_kept = kept;
  return plan;
}

}  // namespace idlegrid::agent
