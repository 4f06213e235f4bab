#include "agent/checkpoint_sync.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "common/digest.h"
#include "common/fs.h"
#include "jobs/lease.h"

namespace idlegrid::agent {

CheckpointSync::CheckpointSync(std::string dir, UploadFn upload, ReportFn report)
    : dir_(std::move(dir)), upload_(std::move(upload)), report_(std::move(report)) {}

CheckpointSync::~CheckpointSync() { Stop(); }

Status CheckpointSync::Restore(const v1::Checkpoint& checkpoint, const DownloadFn& download) {
  // The list passed the coordinator's checks, but this agent trusts no one:
  // a path escaping the directory would let a job's state overwrite ours.
  IG_RETURN_IF_ERROR(jobs::ValidateCheckpointFiles(checkpoint.files()));
  std::lock_guard<std::mutex> lock(sync_mu_);
  for (const auto& f : checkpoint.files()) {
    std::string path = dir_ + "/" + f.path();
    IG_RETURN_IF_ERROR(MakeDirs(std::filesystem::path(path).parent_path().string(), 0700));
    IG_RETURN_IF_ERROR(download(f.digest(), path).WithContext("checkpoint file " + f.path()));
    held_[f.path()] = f.digest();
  }
  last_reported_.assign(checkpoint.files().begin(), checkpoint.files().end());
  return Status::Ok();
}

Status CheckpointSync::SyncOnce() {
  std::lock_guard<std::mutex> lock(sync_mu_);
  std::vector<v1::OutputFile> files;
  for (const auto& rel : RegularFilesUnder(dir_)) {
    std::string path = dir_ + "/" + rel;
    auto digest = Sha256File(path);
    if (!digest.ok()) continue;  // removed or replaced while we looked: the next sync sees it
    auto held = held_.find(rel);
    if (held != held_.end() && held->second == *digest) {
      v1::OutputFile same;
      same.set_path(rel);
      same.set_digest(*digest);
      files.push_back(std::move(same));
      continue;
    }
    auto up = upload_(path, rel);
    if (!up.ok()) return up.status().WithContext("checkpoint file " + rel);
    held_[rel] = up->digest();
    files.push_back(std::move(*up));
  }
  auto same_list = [&] {
    if (files.size() != last_reported_.size()) return false;
    for (size_t i = 0; i < files.size(); ++i) {
      if (files[i].path() != last_reported_[i].path() || files[i].digest() != last_reported_[i].digest()) return false;
    }
    return true;
  };
  if (files.empty() || same_list()) return Status::Ok();
  IG_RETURN_IF_ERROR(report_(files));
  last_reported_ = std::move(files);
  std::lock_guard<std::mutex> count(mu_);
  ++reports_;
  return Status::Ok();
}

void CheckpointSync::Start(std::chrono::milliseconds interval) {
  thread_ = std::thread([this, interval] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, interval, [&] { return stop_; })) {
      lock.unlock();
      Status st = SyncOnce();
      if (!st.ok()) spdlog::warn("checkpoint of {}: {}", dir_, st.message());
      lock.lock();
    }
  });
}

void CheckpointSync::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint32_t CheckpointSync::reports() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reports_;
}

}  // namespace idlegrid::agent
