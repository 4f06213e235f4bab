#include "agent/attempt_grants.h"

#include "jobs/lease.h"

namespace idlegrid::agent {

void AttemptGrants::Add(const v1::Assignment& a) {
  Entry e;
  e.token = a.artifact_token();
  e.digests.insert(a.image_archive_digest());
  for (const auto& b : a.image_blobs()) e.digests.insert(b.digest());
  for (const auto& in : a.spec().inputs()) e.digests.insert(in.artifact());
  for (const auto& f : a.restore().files()) {
    for (const std::string& blob : jobs::CheckpointBlobs(f)) e.digests.insert(blob);
  }
  std::lock_guard<std::mutex> lock(mu_);
  attempts_[a.attempt_id()] = std::move(e);
}

void AttemptGrants::Remove(const std::string& attempt_id) {
  std::lock_guard<std::mutex> lock(mu_);
  attempts_.erase(attempt_id);
}

std::optional<AttemptGrant> AttemptGrants::ForDownload(const std::string& digest) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, e] : attempts_) {
    if (e.digests.count(digest)) return AttemptGrant{id, e.token};
  }
  return std::nullopt;
}

std::optional<AttemptGrant> AttemptGrants::ForUpload(const std::string& path, const std::string& attempts_dir) const {
  const std::string prefix = attempts_dir + "/";
  if (path.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const size_t end = path.find('/', prefix.size());
  if (end == std::string::npos) return std::nullopt;
  const std::string id = path.substr(prefix.size(), end - prefix.size());
  std::lock_guard<std::mutex> lock(mu_);
  auto it = attempts_.find(id);
  if (it == attempts_.end()) return std::nullopt;
  return AttemptGrant{id, it->second.token};
}

}  // namespace idlegrid::agent
