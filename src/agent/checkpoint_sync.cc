#include "agent/checkpoint_sync.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include "common/digest.h"
#include "common/fs.h"
#include "jobs/lease.h"

namespace idlegrid::agent {

namespace {

struct ChunkRef {
  std::string digest;
  uint64_t offset = 0, size = 0;
};

Status Errno(const std::string& what) { return Status::Internal(what + ": " + std::strerror(errno)); }

Status WriteAll(int fd, const char* data, size_t n, const std::string& what) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w <= 0) return Errno("write " + what);
    data += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

// Copies [offset, offset + size) of the open file `fd` to a new file `to`.
Status CopyRange(int fd, uint64_t offset, uint64_t size, const std::string& to) {
  int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out < 0) return Errno("create " + to);
  std::vector<char> buf(1 << 20);
  Status st = Status::Ok();
  while (st.ok() && size > 0) {
    ssize_t n = ::pread(fd, buf.data(), std::min<uint64_t>(size, buf.size()), static_cast<off_t>(offset));
    if (n <= 0) {
      st = n == 0 ? Status::Internal("the file shrank while it was read") : Errno("read");
      break;
    }
    st = WriteAll(out, buf.data(), static_cast<size_t>(n), to);
    offset += static_cast<uint64_t>(n);
    size -= static_cast<uint64_t>(n);
  }
  ::close(out);
  return st;
}

// What identifies one version of a file: a write in progress changes its
// size or modification time, a rename puts another inode at the path.
struct FileStamp {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

FileStamp StampOf(const struct stat& st) {
  return {st.st_dev, st.st_ino, st.st_size, int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
}

std::optional<FileStamp> StampOfPath(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return StampOf(st);
}

std::optional<FileStamp> StampOfFd(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return std::nullopt;
  return StampOf(st);
}

}  // namespace

CheckpointSync::CheckpointSync(std::string dir, UploadFn upload, ReportFn report, Chunking chunking)
    : dir_(std::move(dir)),
      chunk_dir_(dir_ + "-chunks"),
      upload_(std::move(upload)),
      report_(std::move(report)),
      chunking_(chunking) {}

CheckpointSync::~CheckpointSync() { Stop(); }

Status CheckpointSync::Restore(const v1::Checkpoint& checkpoint, const DownloadFn& download) {
  // The list passed the coordinator's checks, but this agent trusts no one:
  // a path escaping the directory would let a job's state overwrite ours.
  IG_RETURN_IF_ERROR(jobs::ValidateCheckpointFiles(checkpoint.files()));
  std::lock_guard<std::mutex> lock(sync_mu_);
  for (const auto& f : checkpoint.files()) {
    std::string path = dir_ + "/" + f.path();
    IG_RETURN_IF_ERROR(MakeDirs(std::filesystem::path(path).parent_path().string(), 0700));
    if (f.chunks_size() > 0) {
      IG_RETURN_IF_ERROR(RestoreChunked(f, path, download).WithContext("checkpoint file " + f.path()));
    } else {
      IG_RETURN_IF_ERROR(download(f.digest(), path).WithContext("checkpoint file " + f.path()));
    }
    held_[f.path()] = f;
  }
  last_reported_.assign(checkpoint.files().begin(), checkpoint.files().end());
  return Status::Ok();
}

Status CheckpointSync::SyncOnce() {
  std::lock_guard<std::mutex> lock(sync_mu_);
  std::vector<v1::OutputFile> files;
  // A file that changes while it is read (a job writing its temporary
  // file before the rename) is left for the next sync: the report keeps
  // the version the coordinator holds, if any, instead of a torn one.
  auto keep_held = [&](const std::string& rel) {
    spdlog::info("checkpoint file {} changed while it was read; a later sync sends it", rel);
    auto held = held_.find(rel);
    if (held != held_.end()) files.push_back(held->second);
  };
  for (const auto& rel : RegularFilesUnder(dir_)) {
    std::string path = dir_ + "/" + rel;
    const std::optional<FileStamp> before = StampOfPath(path);
    if (!before) continue;  // removed while we looked: the next sync sees it
    if (static_cast<uint64_t>(before->size) > chunking_.above) {
      auto chunked = SyncChunked(path, rel);
      if (!chunked.ok()) return chunked.status().WithContext("checkpoint file " + rel);
      if (chunked->has_value()) {
        files.push_back(std::move(**chunked));
      } else {
        keep_held(rel);
      }
      continue;
    }
    auto digest = Sha256File(path);
    if (!digest.ok() && !PathExists(path)) continue;  // removed while we looked: the next sync sees it
    if (!digest.ok() || StampOfPath(path) != before) {
      keep_held(rel);
      continue;
    }
    auto held = held_.find(rel);
    if (held != held_.end() && held->second.digest() == *digest && held->second.chunks_size() == 0) {
      files.push_back(held->second);
      continue;
    }
    auto up = upload_(path, rel);
    if (!up.ok()) return up.status().WithContext("checkpoint file " + rel);
    spdlog::info("checkpoint file {}: {} bytes sent whole", rel, up->size());
    if (up->digest() != *digest || StampOfPath(path) != before) {  // rewritten while it was sent
      keep_held(rel);
      continue;
    }
    held_[rel] = *up;
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

// One pass over the file hashes it whole and chunk by chunk; only chunks
// the coordinator lacks are copied out and uploaded. A file written to
// while it is hashed (its size or mtime moved) gives nullopt before anything
// is sent; one rewritten while its chunks are copied shows as a chunk that
// uploads under another digest, nullopt too: the next sync sees it settled.
Result<std::optional<v1::OutputFile>> CheckpointSync::SyncChunked(const std::string& path, const std::string& rel) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return Errno("open " + path);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  const std::optional<FileStamp> before = StampOfFd(fd);
  if (!before) return Errno("stat " + path);
  Sha256 whole;
  std::vector<ChunkRef> chunks;
  std::vector<char> buf(1 << 20);
  uint64_t offset = 0;
  while (true) {
    Sha256 part;
    uint64_t part_size = 0;
    while (part_size < chunking_.chunk) {
      ssize_t n = ::read(fd, buf.data(), std::min<uint64_t>(buf.size(), chunking_.chunk - part_size));
      if (n < 0) return Errno("read " + path);
      if (n == 0) break;
      whole.Update(buf.data(), static_cast<size_t>(n));
      part.Update(buf.data(), static_cast<size_t>(n));
      part_size += static_cast<uint64_t>(n);
    }
    if (part_size == 0) break;
    chunks.push_back({part.Finish(), offset, part_size});
    offset += part_size;
    if (part_size < chunking_.chunk) break;
  }
  const std::string digest = whole.Finish();
  if (StampOfFd(fd) != before) return std::optional<v1::OutputFile>();
  auto held = held_.find(rel);
  if (held != held_.end() && held->second.digest() == digest && held->second.chunks_size() > 0) {
    return std::optional<v1::OutputFile>(held->second);
  }
  IG_RETURN_IF_ERROR(MakeDirs(chunk_dir_, 0700));
  v1::OutputFile out;
  out.set_path(rel);
  out.set_digest(digest);
  out.set_size(offset);
  uint64_t sent = 0;
  for (const ChunkRef& c : chunks) {
    v1::ArtifactRef* ref = out.add_chunks();
    ref->set_digest(c.digest);
    ref->set_size(c.size);
    if (held_chunks_.count(c.digest)) continue;
    const std::string tmp = chunk_dir_ + "/" + DigestHex(c.digest);
    Status st = CopyRange(fd, c.offset, c.size, tmp);
    Result<v1::OutputFile> up = st.ok() ? upload_(tmp, rel) : Result<v1::OutputFile>(st);
    ::unlink(tmp.c_str());
    if (!up.ok()) return up.status();
    if (up->digest() != c.digest) return std::optional<v1::OutputFile>();  // rewritten in place meanwhile
    held_chunks_.insert(c.digest);
    sent += c.size;
  }
  spdlog::info("checkpoint file {}: {} of {} bytes sent ({} chunks)", rel, sent, offset, chunks.size());
  held_[rel] = out;
  return std::optional<v1::OutputFile>(std::move(out));
}

Status CheckpointSync::RestoreChunked(const v1::OutputFile& f, const std::string& path, const DownloadFn& download) {
  IG_RETURN_IF_ERROR(MakeDirs(chunk_dir_, 0700));
  int out = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (out < 0) return Errno("create " + path);
  Sha256 whole;
  Status st = Status::Ok();
  for (int i = 0; st.ok() && i < f.chunks_size(); ++i) {
    const v1::ArtifactRef& c = f.chunks(i);
    const std::string tmp = chunk_dir_ + "/" + DigestHex(c.digest());
    st = download(c.digest(), tmp).WithContext("chunk " + std::to_string(i));
    if (st.ok()) {
      auto bytes = ReadFile(tmp);
      st = bytes.status();
      if (st.ok() && bytes->size() != c.size())
        st = Status::DataLoss("chunk " + std::to_string(i) + " has the wrong size");
      if (st.ok()) {
        whole.Update(bytes->data(), bytes->size());
        st = WriteAll(out, bytes->data(), bytes->size(), path);
      }
    }
    ::unlink(tmp.c_str());
    if (st.ok()) held_chunks_.insert(c.digest());
  }
  ::close(out);
  if (st.ok() && whole.Finish() != f.digest()) st = Status::DataLoss("its chunks do not make up " + f.digest());
  if (!st.ok()) ::unlink(path.c_str());
  return st;
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
