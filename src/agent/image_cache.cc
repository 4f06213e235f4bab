#include "agent/image_cache.h"

#include <spdlog/spdlog.h>

#include <cstdio>

#include "common/digest.h"
#include "common/fs.h"
#include "image/oci_archive.h"
#include "manifest/image_ref.h"

namespace idlegrid::agent {
namespace {

// Whether `marker` records that its manifest was verified with `config`: a
// coordinator naming a verified (say, signed) manifest with another image's
// config must not get that other image run.
bool MarkerNames(const std::string& marker, const std::string& config) {
  auto recorded = ReadFile(marker);
  if (!recorded.ok()) return false;
  while (!recorded->empty() && (recorded->back() == '\n' || recorded->back() == ' ')) recorded->pop_back();
  return *recorded == config;
}

}  // namespace

ImageCache::ImageCache(std::string cache_dir, runtime::ContainerRuntime* runtime, ArtifactTransfer* artifacts,
                       registry::RegistryClient* registry, const Clock* clock)
    : cache_dir_(std::move(cache_dir)), runtime_(runtime), artifacts_(artifacts), registry_(registry), clock_(clock) {}

Result<std::string> ImageCache::Ensure(const v1::Assignment& a) {
  IG_ASSIGN_OR_RETURN(manifest::ImageRef ref, manifest::ParseImageRef(a.spec().image()));
  const std::string& manifest_digest = ref.digest;
  std::string image_id = DigestHex(a.image_config_digest());
  std::string marker = cache_dir_ + "/" + DigestHex(manifest_digest);
  // The manifest and config together: only that pair was verified.
  const std::string checked_key = manifest_digest + " " + a.image_config_digest();
  std::lock_guard<std::mutex> lock(mu_);
  // Cached only if we verified it ourselves before and the runtime still has it.
  const int64_t now = clock_->NowMs();
  auto seen = checked_ms_.find(checked_key);
  if (seen != checked_ms_.end() && now - seen->second < kImageRecheckMs && PathExists(marker)) return image_id;
  if (MarkerNames(marker, a.image_config_digest()) && runtime_->HasImage(image_id)) {
    checked_ms_[checked_key] = now;
    return image_id;
  }
  checked_ms_.erase(checked_key);
  IG_RETURN_IF_ERROR(MakeDirs(cache_dir_, 0700));
  // Named by what it will hold; the marker's name has no dot (an archive
  // left by a crash is never taken for a verified image).
  std::string archive;
  if (ref.from_registry()) {
    if (registry_ == nullptr) return Status::FailedPrecondition("this agent has no registry client");
    archive = cache_dir_ + "/" + DigestHex(manifest_digest) + ".pull.tar";
    IG_RETURN_IF_ERROR(registry_->Pull(ref, archive).WithContext("image"));
  } else {
    archive = cache_dir_ + "/" + DigestHex(a.image_archive_digest()) + ".tar";
    IG_RETURN_IF_ERROR(artifacts_->Download(a.image_archive_digest(), archive).WithContext("image archive"));
  }
  auto info = image::InspectOciArchive(archive, manifest_digest);
  if (!info.ok()) {
    std::remove(archive.c_str());
    return info.status().WithContext("image " + manifest_digest + " failed verification");
  }
  if (info->config_digest != a.image_config_digest()) {
    std::remove(archive.c_str());
    return Status::DataLoss("image " + manifest_digest + " has config " + info->config_digest + ", coordinator said " +
                            a.image_config_digest());
  }
  Status st = runtime_->LoadImage(archive, image_id);
  std::remove(archive.c_str());
  IG_RETURN_IF_ERROR(st.WithContext("podman load"));
  IG_RETURN_IF_ERROR(WriteFileAtomic(marker, info->config_digest + "\n", 0600));
  checked_ms_[checked_key] = clock_->NowMs();
  spdlog::info("image {} verified and loaded as {}", manifest_digest, image_id.substr(0, 12));
  return image_id;
}

}  // namespace idlegrid::agent
