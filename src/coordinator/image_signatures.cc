#include "coordinator/image_signatures.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "common/digest.h"
#include "common/fs.h"
#include "image/signature.h"

namespace idlegrid::coordinator {
namespace {

int64_t MtimeNs(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return -1;
  return int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
}

bool IsKeyId(const std::string& id) {
  return id.size() == 16 &&
         std::all_of(id.begin(), id.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

std::string ImageSignatureFiles::DirOf(const std::string& image) const {
  return IsValidDigest(image) ? dir_ + "/" + DigestHex(image) : "";
}

Status ImageSignatureFiles::Put(const v1::ImageSignature& signature) {
  const std::string dir = DirOf(signature.image());
  if (dir.empty()) return Status::InvalidArgument("image \"" + signature.image() + "\" is not a digest");
  if (!IsKeyId(signature.key_id()))
    return Status::InvalidArgument("key id \"" + signature.key_id() + "\" is malformed");
  IG_RETURN_IF_ERROR(MakeDirs(dir, 0755));
  IG_RETURN_IF_ERROR(WriteFileAtomic(dir + "/" + signature.key_id() + ".sig", signature.SerializeAsString(), 0644));
  MutexLock lock(&mu_);
  cache_.erase(signature.image());
  return Status::Ok();
}

std::vector<v1::ImageSignature> ImageSignatureFiles::ReadDir(const std::string& image, const std::string& dir) const {
  std::vector<v1::ImageSignature> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".sig") continue;
    auto bytes = ReadFile(path);
    v1::ImageSignature s;
    if (!bytes.ok() || !s.ParseFromString(*bytes)) {
      spdlog::warn("image signature {} skipped: unreadable", path);
      continue;
    }
    // What the file claims is checked again: the directory may have been
    // written by hand, or by another coordinator of another version.
    Status valid = image::VerifyImageSignature(image, s.public_key(), s.signature());
    if (valid.ok() && (s.image() != image || s.key_id() != image::ImageKeyId(s.public_key()))) {
      valid = Status::InvalidArgument("its image or key id does not match its place");
    }
    if (!valid.ok()) {
      spdlog::warn("image signature {} skipped: {}", path, valid.message());
      continue;
    }
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key_id() < b.key_id(); });
  return out;
}

std::vector<v1::ImageSignature> ImageSignatureFiles::Of(const std::string& image) const {
  const std::string dir = DirOf(image);
  if (dir.empty()) return {};
  const int64_t now = clock_->NowMs();
  MutexLock lock(&mu_);
  auto it = cache_.find(image);
  if (it != cache_.end() && now - it->second.checked_ms < kRecheckMs && now >= it->second.checked_ms) {
    return it->second.signatures;
  }
  // A signature added (by any coordinator) renames a file into the
  // directory, which changes its mtime.
  const int64_t mtime = MtimeNs(dir);
  Cached& entry = cache_[image];
  if (it == cache_.end() || mtime != entry.dir_mtime_ns) {
    entry.signatures = mtime < 0 ? std::vector<v1::ImageSignature>{} : ReadDir(image, dir);
    entry.dir_mtime_ns = mtime;
  }
  entry.checked_ms = now;
  return entry.signatures;
}

std::set<std::string> ImageSignatureFiles::SignersOf(const std::string& image) const {
  std::set<std::string> out;
  for (const auto& s : Of(image)) out.insert(s.key_id());
  return out;
}

}  // namespace idlegrid::coordinator
