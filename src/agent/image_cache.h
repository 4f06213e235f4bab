#pragma once
// The agent's image cache: an image is run only after this agent downloaded
// it (from the coordinator, or for a registry image pulled by the digest the
// job names), checked it against the digests the coordinator named and had
// the runtime load it. A marker file per verified manifest
// (<cache_dir>/<manifest hex>) survives restarts; whether the runtime still
// has the image is asked again at most every kImageRecheckMs.
//
// A layered image (pushed blob by blob) is fetched blob by blob into
// <cache_dir>/blobs/<hex>, only the blobs this node lacks, each verified by
// digest as it arrives; <cache_dir>/layers/<manifest hex> lists what it is
// made of. Images loaded this way are evicted least recently used first when
// their blobs pass the owner's budget (policy.yaml imageCache), never one a
// running attempt uses (image_eviction.h).
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "agent/attempt_env.h"
#include "agent/image_eviction.h"
#include "common/clock.h"
#include "registry/registry_client.h"
#include "runtime/container_runtime.h"

namespace idlegrid::agent {

// How long a runtime's "this image is present" is trusted without asking
// again: asking costs a podman call, and a sweep starts hundreds of tasks on
// one image.
inline constexpr int64_t kImageRecheckMs = 30'000;
// policy.yaml imageCache when the owner sets none.
inline constexpr uint64_t kDefaultImageCacheBytes = 20ull << 30;

// What the layered part of a cache directory holds, for `agent status`.
struct ImageCacheUsage {
  int images = 0;  // layered images listed
  int blobs = 0;
  uint64_t bytes = 0;  // blob bytes on disk
};
ImageCacheUsage ReadImageCacheUsage(const std::string& cache_dir);

class ImageCache : public ImageSource {
 public:
  // None owned; all must outlive the cache. `registry` may be null: registry
  // images then fail to fetch (FailedPrecondition).
  ImageCache(std::string cache_dir, runtime::ContainerRuntime* runtime, ArtifactTransfer* artifacts,
             registry::RegistryClient* registry, const Clock* clock);

  // See ImageSource. One download or load at a time; a verified image costs
  // no download, and within kImageRecheckMs of the last check no runtime call.
  // A successful Ensure pins the image until the matching Release.
  Result<std::string> Ensure(const v1::Assignment& a) override;
  void Release(const v1::Assignment& a) override;

  // The owner's budget for layered images' blobs (policy.yaml imageCache);
  // takes effect at the next load.
  void SetBudget(uint64_t bytes);
  // An image whose last task started less than this long ago is not
  // evicted: the runc driver's pilot of an array job lingers a moment on
  // its image after the task's attempt ended (runc_runtime.h pilot_linger).
  void SetEvictionGrace(std::chrono::milliseconds grace);

 private:
  Result<std::string> FetchLayered(const v1::Assignment& a, const std::string& manifest_digest);
  // Carries out PlanImageEviction over the cache directory. Best effort: a
  // failure is logged, the image stays.
  void EvictLocked();

  const std::string cache_dir_;
  runtime::ContainerRuntime* const runtime_;
  ArtifactTransfer* const artifacts_;
  registry::RegistryClient* const registry_;
  const Clock* const clock_;
  std::mutex mu_;  // one image download/load at a time
  // "<manifest digest> <config digest>" -> when the runtime last had that
  // verified pair; guarded by mu_.
  std::map<std::string, int64_t> checked_ms_;
  std::map<std::string, int> pins_;                   // manifest digest -> attempts using it; guarded by mu_
  uint64_t budget_bytes_ = kDefaultImageCacheBytes;   // guarded by mu_
  std::chrono::milliseconds eviction_grace_{10'000};  // guarded by mu_
};

}  // namespace idlegrid::agent
