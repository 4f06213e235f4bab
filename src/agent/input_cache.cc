#include "agent/input_cache.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/digest.h"
#include "common/disk_usage.h"
#include "common/fs.h"
#include "image/rootfs_unpack.h"

namespace idlegrid::agent {
namespace {

bool IsHex64(const std::string& name) {
  return name.size() == 64 &&
         std::all_of(name.begin(), name.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

uint64_t FileSize(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

}  // namespace

InputCache::InputCache(std::string cache_dir, uint64_t max_bytes, ArtifactTransfer* artifacts,
                       image::DirArchiveLimits unpack_limits)
    : dir_(std::move(cache_dir)), artifacts_(artifacts), unpack_limits_(unpack_limits), max_bytes_(max_bytes) {
  LoadExisting();
}

void InputCache::LoadExisting() {
  if (Status st = MakeDirs(dir_, 0700); !st.ok()) {
    spdlog::warn("input cache {}: {}", dir_, st.message());
    return;
  }
  std::error_code ec;
  // Oldest first, so the use order approximates the last agent's.
  std::vector<std::pair<std::filesystem::file_time_type, std::filesystem::path>> found;
  for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) {
    found.emplace_back(std::filesystem::last_write_time(e.path(), ec), e.path());
  }
  std::sort(found.begin(), found.end());
  for (const auto& [when, path] : found) {
    const std::string name = path.filename().string();
    const std::string hex = name.size() == 66 && name.ends_with(".d") ? name.substr(0, 64) : name;
    if (IsHex64(hex) && hex == name && std::filesystem::is_regular_file(path, ec)) {
      Entry& e = entries_[hex];
      e.has_file = true;
      e.file_bytes = FileSize(path.string());
      e.last_use = ++use_clock_;
      bytes_ += e.file_bytes;
    } else if (IsHex64(hex) && hex != name && std::filesystem::is_directory(path, ec)) {
      // <hex>.d appears only by a rename of a whole unpack.
      auto size = MeasureTree(path.string());
      Entry& e = entries_[hex];
      e.has_dir = true;
      e.dir_bytes = size.ok() ? *size : 0;
      e.last_use = ++use_clock_;
      bytes_ += e.dir_bytes;
    } else if (Status st = image::RemoveUnpackedTree(path.string()); !st.ok()) {
      spdlog::warn("input cache: removing leftover {}: {}", path.string(), st.message());
    }
  }
  std::unique_lock<std::mutex> lock(mu_);
  EvictLocked();
}

Status InputCache::Fetch(const std::string& hex, bool unpack, Entry* made) {
  const std::string digest = "sha256:" + hex;
  const std::string file = dir_ + "/" + hex;
  if (!made->has_file) {
    // One name per digest (only one fetch of a digest runs at a time), so a
    // transfer cut off mid-way resumes where it stopped.
    const std::string part = file + ".download";
    Status st = artifacts_->Download(digest, part);
    if (st.ok() && ::chmod(part.c_str(), 0444) != 0)
      st = Status::Internal("chmod " + part + ": " + std::strerror(errno));
    if (st.ok() && ::rename(part.c_str(), file.c_str()) != 0) {
      st = Status::Internal("cannot move " + part + " into the input cache: " + std::strerror(errno));
    }
    if (!st.ok()) {
      ::unlink(part.c_str());
      return st;
    }
    made->has_file = true;
    made->file_bytes = FileSize(file);
    std::lock_guard<std::mutex> lock(mu_);
    ++downloads_;
  }
  if (unpack && !made->has_dir) {
    const std::string dir = file + ".d";
    Status st = image::UnpackDirectoryTar(file, dir, unpack_limits_);
    if (!st.ok() && st.code() != Code::kAlreadyExists) return st.WithContext("directory input " + digest);
    auto size = MeasureTree(dir);
    made->has_dir = true;
    made->dir_bytes = size.ok() ? *size : 0;
    // The tree is what attempts read; the archive is fetched again only if a
    // job reads this digest as a file.
    if (::unlink(file.c_str()) == 0) {
      made->has_file = false;
      made->file_bytes = 0;
    }
  }
  return Status::Ok();
}

Status InputCache::EnsureLocked(std::unique_lock<std::mutex>& lock, const std::string& hex, bool unpack) {
  auto held = [&] {
    auto it = entries_.find(hex);
    return it != entries_.end() && (unpack ? it->second.has_dir : it->second.has_file);
  };
  fetched_.wait(lock, [&] { return !fetching_.count(hex); });
  if (held()) return Status::Ok();
  fetching_.insert(hex);
  Entry made = entries_.count(hex) ? entries_[hex] : Entry{};
  const uint64_t before = made.file_bytes + made.dir_bytes;
  lock.unlock();
  Status st = Fetch(hex, unpack, &made);
  lock.lock();
  fetching_.erase(hex);
  fetched_.notify_all();
  if (made.has_file || made.has_dir) {
    bytes_ = bytes_ - before + made.file_bytes + made.dir_bytes;
    entries_[hex] = made;
  }
  return st;
}

Status InputCache::Provide(const std::string& attempt_id, const v1::InputSpec& input, const std::string& dest) {
  if (!IsValidDigest(input.artifact())) {
    return Status::InvalidArgument("input artifact " + input.artifact().substr(0, 80) + " is not a sha256 digest");
  }
  const std::string hex = DigestHex(input.artifact());
  std::unique_lock<std::mutex> lock(mu_);
  if (pins_[attempt_id].insert(hex).second) ++pin_counts_[hex];
  IG_RETURN_IF_ERROR(EnsureLocked(lock, hex, input.unpack()));
  entries_[hex].last_use = ++use_clock_;
  EvictLocked();
  lock.unlock();
  // Pinned: nothing evicts it while it is linked.
  const std::string cached = dir_ + "/" + hex;
  if (input.unpack()) return LinkTree(cached + ".d", dest);
  return LinkOrCopyFile(cached, dest);
}

void InputCache::Release(const std::string& attempt_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pins_.find(attempt_id);
  if (it == pins_.end()) return;
  for (const std::string& hex : it->second) {
    if (--pin_counts_[hex] <= 0) pin_counts_.erase(hex);
  }
  pins_.erase(it);
  EvictLocked();
}

void InputCache::EvictLocked() {
  while (bytes_ > max_bytes_) {
    auto victim = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (pin_counts_.count(it->first) || fetching_.count(it->first)) continue;
      if (victim == entries_.end() || it->second.last_use < victim->second.last_use) victim = it;
    }
    if (victim == entries_.end()) return;  // everything left is in use
    const std::string path = dir_ + "/" + victim->first;
    if (victim->second.has_file && ::unlink(path.c_str()) != 0 && errno != ENOENT) {
      spdlog::warn("input cache: removing {}: {}", path, std::strerror(errno));
    }
    if (victim->second.has_dir) {
      if (Status st = image::RemoveUnpackedTree(path + ".d"); !st.ok()) {
        spdlog::warn("input cache: {}", st.message());
      }
    }
    bytes_ -= victim->second.file_bytes + victim->second.dir_bytes;
    spdlog::info("input cache: evicted sha256:{} ({} bytes held of {})", victim->first, bytes_, max_bytes_);
    entries_.erase(victim);
  }
}

std::vector<std::string> InputCache::CachedDigests() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<uint64_t, std::string>> by_use;
  for (const auto& [hex, e] : entries_) by_use.emplace_back(e.last_use, hex);
  std::sort(by_use.rbegin(), by_use.rend());
  std::vector<std::string> out;
  for (const auto& [use, hex] : by_use) {
    if (out.size() == kMaxAdvertisedInputs) break;
    out.push_back("sha256:" + hex);
  }
  // Sorted: the advertisement changes when the set does, not at each use.
  std::sort(out.begin(), out.end());
  return out;
}

uint64_t InputCache::downloads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return downloads_;
}

void InputCache::SetBudget(uint64_t max_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (max_bytes == max_bytes_) return;
  max_bytes_ = max_bytes;
  EvictLocked();
}

uint64_t InputCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace idlegrid::agent
