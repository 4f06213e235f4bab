#pragma once
// The blob lists of layered images (manifest, config, layers), by manifest
// digest. A stored manifest is content-addressed, so its list never changes:
// it is read and parsed once, not again on every assignment and every check
// of what a node may download. Bounded: past `capacity` entries the oldest
// goes. Thread-safe; owns its lock.
#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::coordinator {

class ManifestBlobCache {
 public:
  explicit ManifestBlobCache(size_t capacity = 1024) : capacity_(capacity) {}

  std::optional<std::vector<v1::ArtifactRef>> Get(const std::string& manifest_digest) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_digest_.find(manifest_digest);
    if (it == by_digest_.end()) return std::nullopt;
    return it->second;
  }

  void Put(const std::string& manifest_digest, std::vector<v1::ArtifactRef> blobs) {
    std::lock_guard<std::mutex> lock(mu_);
    if (capacity_ == 0) return;
    if (!by_digest_.insert_or_assign(manifest_digest, std::move(blobs)).second) return;  // already known
    order_.push_back(manifest_digest);
    while (order_.size() > capacity_) {
      by_digest_.erase(order_.front());
      order_.pop_front();
    }
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return by_digest_.size();
  }

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<v1::ArtifactRef>> by_digest_;  // guarded by mu_
  std::deque<std::string> order_;                                  // oldest first; guarded by mu_
};

}  // namespace idlegrid::coordinator
