#pragma once
// The agent's image cache: an image is run only after this agent downloaded
// its archive (from the coordinator, or for a registry image pulled by the
// digest the job names), checked it against the digests the coordinator
// named and had the runtime load it. A marker file per verified manifest
// (<cache_dir>/<manifest hex>) survives restarts; whether the runtime still
// has the image is asked again at most every kImageRecheckMs.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "agent/attempt_env.h"
#include "common/clock.h"
#include "registry/registry_client.h"
#include "runtime/container_runtime.h"

namespace idlegrid::agent {

// How long a runtime's "this image is present" is trusted without asking
// again: asking costs a podman call, and a sweep starts hundreds of tasks on
// one image.
inline constexpr int64_t kImageRecheckMs = 30'000;

class ImageCache : public ImageSource {
 public:
  // None owned; all must outlive the cache. `registry` may be null: registry
  // images then fail to fetch (FailedPrecondition).
  ImageCache(std::string cache_dir, runtime::ContainerRuntime* runtime, ArtifactTransfer* artifacts,
             registry::RegistryClient* registry, const Clock* clock);

  // See ImageSource. One download or load at a time; a verified image costs
  // no download, and within kImageRecheckMs of the last check no runtime call.
  Result<std::string> Ensure(const v1::Assignment& a) override;

 private:
  const std::string cache_dir_;
  runtime::ContainerRuntime* const runtime_;
  ArtifactTransfer* const artifacts_;
  registry::RegistryClient* const registry_;
  const Clock* const clock_;
  std::mutex mu_;                             // one image download/load at a time
  // "<manifest digest> <config digest>" -> when the runtime last had that
  // verified pair; guarded by mu_.
  std::map<std::string, int64_t> checked_ms_;
};

}  // namespace idlegrid::agent
