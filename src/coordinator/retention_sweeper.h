#pragma once
// Retention and artifact collection (docs/tenancy.md): jobs past their
// retention are deleted with their logs, uploads past their hold and
// artifacts nothing holds any more are unlinked. The store decides what goes
// (jobs/retention.h, its references); this service asks it at its own pace
// and removes the blobs. The coordinator's loop thread only; no lock.
#include <cstdint>

#include "artifacts/artifact_store.h"
#include "common/clock.h"
#include "store/store.h"

namespace idlegrid::coordinator {

class RetentionSweeper {
 public:
  // How often Sweep asks the store at most.
  static constexpr int64_t kPeriodMs = 60'000;
  // Jobs deleted per sweep at most (the rest wait for the next).
  static constexpr uint32_t kJobsPerSweep = 100;

  RetentionSweeper(store::Store* store, artifacts::ArtifactStore* artifacts, const Clock* clock)
      : store_(store), artifacts_(artifacts), clock_(clock) {}

  // Deletes expired jobs and collects unused uploads, at most every
  // kPeriodMs (the first call always runs); errors are logged and the next
  // sweep tries again.
  void Sweep();
  // Unlinks the blobs of artifacts the store has let go (a deleted job's).
  void Unlink(const store::CollectedArtifacts& collected);

 private:
  store::Store* const store_;
  artifacts::ArtifactStore* const artifacts_;
  const Clock* const clock_;
  int64_t checked_ms_ = 0;
};

}  // namespace idlegrid::coordinator
