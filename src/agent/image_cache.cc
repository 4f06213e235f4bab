#include "agent/image_cache.h"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/digest.h"
#include "common/fs.h"
#include "image/oci_archive.h"
#include "image/oci_archive_writer.h"
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

constexpr char kManifestMediaType[] = "application/vnd.oci.image.manifest.v1+json";

std::string BlobsDir(const std::string& cache_dir) { return cache_dir + "/blobs"; }
std::string LayersDir(const std::string& cache_dir) { return cache_dir + "/layers"; }

// <cache>/layers/<manifest hex>: one "digest size" line per blob.
std::vector<CachedBlob> ReadLayerList(const std::string& path) {
  std::vector<CachedBlob> out;
  std::ifstream in(path);
  CachedBlob b;
  while (in >> b.digest >> b.size) {
    if (IsValidDigest(b.digest)) out.push_back(b);
  }
  return out;
}

int64_t MtimeMs(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return int64_t{st.st_mtim.tv_sec} * 1000 + st.st_mtim.tv_nsec / 1'000'000;
}

// Last use is the marker's mtime: it survives restarts at no bookkeeping cost.
void Touch(const std::string& path) { ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0); }

std::vector<CachedBlob> BlobsOnDisk(const std::string& cache_dir) {
  std::vector<CachedBlob> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(BlobsDir(cache_dir), ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() != 64 || !e.is_regular_file(ec)) continue;  // ".part" downloads are not blobs yet
    out.push_back({"sha256:" + name, static_cast<uint64_t>(e.file_size(ec))});
  }
  return out;
}

}  // namespace

ImageCacheUsage ReadImageCacheUsage(const std::string& cache_dir) {
  ImageCacheUsage usage;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(LayersDir(cache_dir), ec)) {
    if (e.path().filename().string().size() == 64) ++usage.images;
  }
  for (const CachedBlob& b : BlobsOnDisk(cache_dir)) {
    ++usage.blobs;
    usage.bytes += b.size;
  }
  return usage;
}

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
  if (seen != checked_ms_.end() && now - seen->second < kImageRecheckMs && PathExists(marker)) {
    ++pins_[manifest_digest];
    Touch(marker);
    return image_id;
  }
  if (MarkerNames(marker, a.image_config_digest()) && runtime_->HasImage(image_id)) {
    checked_ms_[checked_key] = now;
    ++pins_[manifest_digest];
    Touch(marker);
    return image_id;
  }
  checked_ms_.erase(checked_key);
  IG_RETURN_IF_ERROR(MakeDirs(cache_dir_, 0700));
  if (a.image_blobs_size() > 0 && !ref.from_registry()) {
    IG_ASSIGN_OR_RETURN(std::string loaded, FetchLayered(a, manifest_digest));
    ++pins_[manifest_digest];
    EvictLocked();
    return loaded;
  }
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
  ++pins_[manifest_digest];
  spdlog::info("image {} verified and loaded as {}", manifest_digest, image_id.substr(0, 12));
  return image_id;
}

Result<std::string> ImageCache::FetchLayered(const v1::Assignment& a, const std::string& manifest_digest) {
  const std::string image_id = DigestHex(a.image_config_digest());
  const std::string blobs_dir = BlobsDir(cache_dir_);
  IG_RETURN_IF_ERROR(MakeDirs(blobs_dir, 0700));
  IG_RETURN_IF_ERROR(MakeDirs(LayersDir(cache_dir_), 0700));
  std::vector<image::BlobFile> files;
  image::OciBlobRef manifest{kManifestMediaType, manifest_digest, 0};
  uint64_t fetched = 0, total = 0;
  for (const v1::ArtifactRef& blob : a.image_blobs()) {
    if (!IsValidDigest(blob.digest()))
      return Status::InvalidArgument("image blob '" + blob.digest() + "' is malformed");
    const std::string path = blobs_dir + "/" + DigestHex(blob.digest());
    std::error_code ec;
    // A blob on disk was verified when it arrived and is this agent's alone.
    if (!PathExists(path) || std::filesystem::file_size(path, ec) != blob.size()) {
      IG_RETURN_IF_ERROR(artifacts_->Download(blob.digest(), path).WithContext("image blob " + blob.digest()));
      fetched += blob.size();
    }
    total += blob.size();
    if (blob.digest() == manifest_digest) manifest.size = blob.size();
    files.push_back({blob.digest(), blob.size(), path});
  }
  if (manifest.size == 0) return Status::InvalidArgument("the coordinator's image blobs do not include the manifest");
  // The runtime loads archives: one is assembled from the cache (a local
  // copy). Each blob was verified by digest as it arrived; the manifest is
  // read back here (it names the config), and the runtimes verify the whole
  // archive again as they load it (the runc driver's InspectOciArchive,
  // podman's own digest checks) and check that it is `image_id`, the config
  // the coordinator named: hashing 600 MB once more here would only slow
  // the start of a changed image.
  const std::string archive = cache_dir_ + "/" + DigestHex(manifest_digest) + ".layered.tar";
  IG_RETURN_IF_ERROR(image::WriteOciArchiveFromBlobs(manifest, files, "", archive));
  Status st = Status::Ok();
  auto manifest_text = ReadFile(blobs_dir + "/" + DigestHex(manifest_digest));
  if (!manifest_text.ok() || Sha256Digest(*manifest_text) != manifest_digest) {
    st = Status::DataLoss("cached manifest " + manifest_digest + " does not hash to its digest");
  } else if (auto config = image::OciManifestConfigDigest(*manifest_text, "manifest " + manifest_digest);
             !config.ok() || *config != a.image_config_digest()) {
    st = config.ok() ? Status::DataLoss("image " + manifest_digest + " has config " + *config + ", coordinator said " +
                                        a.image_config_digest())
                     : config.status();
  }
  if (st.ok()) st = runtime_->LoadImage(archive, image_id).WithContext("podman load");
  std::remove(archive.c_str());
  if (!st.ok()) {
    // A blob that verified but makes a bad image is dropped, not kept to fail again.
    for (const auto& f : files) std::remove(f.path.c_str());
    return st.WithContext("image " + manifest_digest);
  }
  std::ostringstream list;
  for (const auto& f : files) list << f.digest << " " << f.size << "\n";
  IG_RETURN_IF_ERROR(WriteFileAtomic(LayersDir(cache_dir_) + "/" + DigestHex(manifest_digest), list.str(), 0600));
  IG_RETURN_IF_ERROR(
      WriteFileAtomic(cache_dir_ + "/" + DigestHex(manifest_digest), a.image_config_digest() + "\n", 0600));
  checked_ms_[manifest_digest + " " + a.image_config_digest()] = clock_->NowMs();
  spdlog::info("image {} loaded as {}: fetched {} of {} bytes (the rest was cached)", manifest_digest,
               image_id.substr(0, 12), fetched, total);
  return image_id;
}

void ImageCache::Release(const v1::Assignment& a) {
  auto ref = manifest::ParseImageRef(a.spec().image());
  if (!ref.ok()) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pins_.find(ref->digest);
  if (it != pins_.end() && --it->second <= 0) pins_.erase(it);
}

void ImageCache::SetBudget(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  budget_bytes_ = bytes;
}

void ImageCache::SetEvictionGrace(std::chrono::milliseconds grace) {
  std::lock_guard<std::mutex> lock(mu_);
  eviction_grace_ = grace;
}

void ImageCache::EvictLocked() {
  std::vector<CachedImageEntry> images;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(LayersDir(cache_dir_), ec)) {
    const std::string hex = e.path().filename().string();
    if (hex.size() != 64) continue;
    CachedImageEntry entry;
    entry.manifest_digest = "sha256:" + hex;
    entry.blobs = ReadLayerList(e.path().string());
    entry.last_used_ms = MtimeMs(cache_dir_ + "/" + hex);
    // Wall time, as the marker's mtime is.
    const int64_t now_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    entry.in_use = pins_.count(entry.manifest_digest) > 0 || now_ms - entry.last_used_ms < eviction_grace_.count();
    images.push_back(std::move(entry));
  }
  EvictionPlan plan = PlanImageEviction(images, BlobsOnDisk(cache_dir_), budget_bytes_);
  bool all_removed = true;
  for (const std::string& manifest : plan.images) {
    const std::string hex = DigestHex(manifest);
    auto config = ReadFile(cache_dir_ + "/" + hex);
    std::string image_id = config.ok() ? DigestHex(std::string(config->substr(0, config->find('\n')))) : "";
    if (!image_id.empty()) {
      if (Status st = runtime_->RemoveImage(image_id); !st.ok()) {
        spdlog::warn("image cache: keeping {}: {}", manifest, st.ToString());
        all_removed = false;  // its blobs stay with it
        continue;
      }
    }
    std::remove((cache_dir_ + "/" + hex).c_str());
    std::remove((LayersDir(cache_dir_) + "/" + hex).c_str());
    for (auto it = checked_ms_.begin(); it != checked_ms_.end();) {
      it = it->first.rfind(manifest + " ", 0) == 0 ? checked_ms_.erase(it) : std::next(it);
    }
    spdlog::info("image cache: evicted {} (least recently used; budget {} bytes)", manifest, budget_bytes_);
  }
  if (!all_removed) return;  // the next load plans again
  for (const std::string& blob : plan.blobs) std::remove((BlobsDir(cache_dir_) + "/" + DigestHex(blob)).c_str());
  if (plan.bytes_kept > budget_bytes_) {
    spdlog::warn("image cache: {} bytes of images in use exceed the budget of {} bytes", plan.bytes_kept,
                 budget_bytes_);
  }
}

}  // namespace idlegrid::agent
