// Retention and artifact collection (retention_sweeper.h).
#include "coordinator/retention_sweeper.h"

#include <spdlog/spdlog.h>

namespace idlegrid::coordinator {

void RetentionSweeper::Unlink(const store::CollectedArtifacts& collected) {
  for (const std::string& digest : collected.digests) {
    if (Status st = artifacts_->Remove(digest); !st.ok()) spdlog::warn("artifact GC: {}", st.ToString());
  }
}

void RetentionSweeper::Sweep() {
  const int64_t now = clock_->NowMs();
  if (checked_ms_ != 0 && now - checked_ms_ < kPeriodMs) return;
  checked_ms_ = now;
  auto expired = store_->ExpiredJobs(now, kJobsPerSweep);
  if (!expired.ok()) {
    spdlog::warn("retention: {}", expired.status().ToString());
    return;
  }
  for (const std::string& id : *expired) {
    auto gone = store_->DeleteJob(id, now);
    if (!gone.ok()) {
      spdlog::warn("retention: job {}: {}", id, gone.status().ToString());
      continue;
    }
    Unlink(*gone);
    spdlog::info("retention: job {} deleted; {} artifact(s), {} bytes freed", id, gone->digests.size(), gone->bytes);
  }
  auto uploads = store_->CollectArtifacts(now);
  if (!uploads.ok()) {
    spdlog::warn("artifact GC: {}", uploads.status().ToString());
    return;
  }
  Unlink(*uploads);
  if (!uploads->digests.empty()) {
    spdlog::info("artifact GC: {} unused upload(s), {} bytes freed", uploads->digests.size(), uploads->bytes);
  }
}

}  // namespace idlegrid::coordinator
