#include "artifacts/artifact_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "common/fs.h"
#include "common/random.h"

namespace idlegrid::artifacts {

namespace {

// How long a resumed upload waits for the writer it replaces (one whose
// client just went away) to notice and let go of the partial.
constexpr auto kPartialBusyWait = std::chrono::seconds(10);
constexpr size_t kRehashBuffer = 1 << 20;
// Writeback of an upload starts every kWritebackStep bytes, and the writer
// waits for what is older than kWritebackLag: the disk then writes while the
// network delivers (not all at Commit's fsync, after it), and one upload
// never holds more than kWritebackLag of dirty pages.
constexpr uint64_t kWritebackStep = 8 << 20;
constexpr uint64_t kWritebackLag = 64 << 20;

std::string Errno() { return std::strerror(errno); }

// A failed write, errno intact: the artifact disk being full is the
// coordinator's passing state, not the upload's fault, so the caller hears
// Unavailable (and uploads again later, resuming) rather than a final error.
Status WriteFailure(const std::string& what) {
  if (errno == ENOSPC || errno == EDQUOT) {
    return Status::Unavailable(what + ": " + Errno() + " (the coordinator's artifact disk is full; upload again once " +
                               "its operator frees space)");
  }
  return Status::Internal(what + ": " + Errno());
}

// 16 hex digits of sha256(uploader): enough that two callers never collide,
// and the file name does not spell out who uploaded what.
std::string UploaderTag(const std::string& uploader) { return DigestHex(Sha256Digest(uploader)).substr(0, 16); }

int64_t MtimeMs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1'000'000;
}

// What NewResumableWriter refuses before touching the disk.
Status CheckResumable(const std::string& expected_digest, uint64_t expected_size, uint64_t offset) {
  if (!IsValidDigest(expected_digest)) {
    return Status::InvalidArgument("artifact digest must be sha256:<64 hex>, got '" + expected_digest + "'");
  }
  if (expected_size == 0 || expected_size > kMaxArtifactBytes) {
    return Status::InvalidArgument("announced size " + std::to_string(expected_size) +
                                   " is not between 1 and the limit of " + std::to_string(kMaxArtifactBytes) +
                                   " bytes");
  }
  if (offset > expected_size) {
    return Status::InvalidArgument("resume offset " + std::to_string(offset) + " is past the announced size " +
                                   std::to_string(expected_size));
  }
  return Status::Ok();
}

// Opens (creating) the partial at `path`, locked against other processes,
// holding at least `offset` bytes and cut to exactly that many.
Result<FILE*> OpenPartialAt(const std::string& path, const std::string& expected_digest, uint64_t offset) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  // Until a writer owns fd: the status (built first, errno intact), then close.
  auto fail = [&](Status st) {
    if (fd >= 0) ::close(fd);
    return st;
  };
  if (fd < 0) return fail(WriteFailure("cannot open " + path));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    return fail(Status::Unavailable("another coordinator is receiving " + expected_digest + " from this caller"));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) return fail(Status::Internal("cannot stat " + path + ": " + Errno()));
  const auto held = static_cast<uint64_t>(st.st_size);
  if (offset > held) {
    return fail(Status::FailedPrecondition("cannot resume the upload of " + expected_digest + " at offset " +
                                           std::to_string(offset) + ": the coordinator holds only " +
                                           std::to_string(held) + " bytes of it; upload again from offset 0"));
  }
  if (::ftruncate(fd, static_cast<off_t>(offset)) != 0) {
    return fail(WriteFailure("cannot truncate " + path));
  }
  FILE* f = ::fdopen(fd, "r+b");
  if (!f) return fail(WriteFailure("cannot open " + path));
  return f;
}

}  // namespace

BlobWriter::BlobWriter(std::string root, std::string expected_digest, uint64_t expected_size, std::string tmp_path,
                       FILE* file)
    : root_(std::move(root)),
      expected_digest_(std::move(expected_digest)),
      expected_size_(expected_size),
      tmp_path_(std::move(tmp_path)),
      file_(file) {}

BlobWriter::~BlobWriter() {
  if (file_) {
    if (keep_partial_ && std::fflush(file_) != 0) keep_partial_ = false;
    std::fclose(file_);  // also drops the partial's flock
  }
  if (!done_ && !keep_partial_) ::unlink(tmp_path_.c_str());
  if (release_) release_();
}

Status BlobWriter::Append(const void* data, size_t size) {
  if (size_ + size > kMaxArtifactBytes) {
    keep_partial_ = false;
    return Status::InvalidArgument("artifact is larger than the limit of " + std::to_string(kMaxArtifactBytes) +
                                   " bytes");
  }
  if (expected_size_ > 0 && size_ + size > expected_size_) {
    keep_partial_ = false;
    return Status::InvalidArgument("upload is larger than its announced size " + std::to_string(expected_size_));
  }
  if (std::fwrite(data, 1, size, file_) != size) {
    keep_partial_ = false;
    return WriteFailure("cannot write artifact");
  }
  hash_.Update(data, size);
  size_ += size;
  if (size_ - writeback_started_ >= kWritebackStep) StartWriteback();
  return Status::Ok();
}

void BlobWriter::StartWriteback() {
  // Best effort: Commit's fsync is what makes the blob durable.
  if (std::fflush(file_) != 0) return;
  const int fd = fileno(file_);
  ::sync_file_range(fd, static_cast<off_t>(writeback_started_), static_cast<off_t>(size_ - writeback_started_),
                    SYNC_FILE_RANGE_WRITE);
  writeback_started_ = size_;
  if (writeback_started_ - writeback_waited_ > kWritebackLag) {
    const uint64_t upto = writeback_started_ - kWritebackLag;
    ::sync_file_range(fd, static_cast<off_t>(writeback_waited_), static_cast<off_t>(upto - writeback_waited_),
                      SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
    writeback_waited_ = upto;
  }
}

Status BlobWriter::ResumeAt(uint64_t offset) {
  // The kept prefix is hashed again, never trusted: Commit then checks the
  // whole blob, so a partial that rotted (or was tampered with) ends in
  // DataLoss rather than in a wrong blob.
  const int fd = fileno(file_);
  std::vector<char> buf(kRehashBuffer);
  while (size_ < offset) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), offset - size_));
    ssize_t n = ::pread(fd, buf.data(), want, static_cast<off_t>(size_));
    if (n <= 0) return Status::Internal("cannot read back " + tmp_path_ + ": " + (n < 0 ? Errno() : "short file"));
    hash_.Update(buf.data(), static_cast<size_t>(n));
    size_ += static_cast<uint64_t>(n);
  }
  if (::fseeko(file_, static_cast<off_t>(offset), SEEK_SET) != 0) {
    return Status::Internal("cannot seek in " + tmp_path_ + ": " + Errno());
  }
  writeback_started_ = writeback_waited_ = offset;
  keep_partial_ = true;
  return Status::Ok();
}

Result<std::string> BlobWriter::Commit() {
  // Whatever happens now, these bytes are either published or worthless.
  keep_partial_ = false;
  if (std::fflush(file_) != 0 || ::fsync(fileno(file_)) != 0) {
    return WriteFailure("cannot flush artifact");
  }
  std::fclose(file_);
  file_ = nullptr;
  std::string digest = hash_.Finish();
  if (!expected_digest_.empty() && digest != expected_digest_) {
    return Status::DataLoss("upload hashes to " + digest + ", not the announced " + expected_digest_ +
                            "; its bytes were discarded, upload again from offset 0");
  }
  if (expected_size_ > 0 && size_ != expected_size_) {
    return Status::DataLoss("upload has " + std::to_string(size_) + " bytes, announced " +
                            std::to_string(expected_size_));
  }
  std::string hex = DigestHex(digest);
  std::string dir = root_ + "/sha256/" + hex.substr(0, 2);
  IG_RETURN_IF_ERROR(MakeDirs(dir));
  std::string final_path = dir + "/" + hex;
  if (::rename(tmp_path_.c_str(), final_path.c_str()) != 0) {
    return WriteFailure("cannot publish artifact " + digest);
  }
  done_ = true;
  return digest;
}

ArtifactStore::ArtifactStore(std::string root, const Clock* clock)
    : root_(std::move(root)), clock_(clock ? clock : SystemClock::Get()) {}

Status ArtifactStore::Init() {
  IG_RETURN_IF_ERROR(MakeDirs(root_ + "/sha256"));
  IG_RETURN_IF_ERROR(MakeDirs(root_ + "/partial"));
  IG_RETURN_IF_ERROR(MakeDirs(root_ + "/tmp"));
  if (int removed = RemoveStalePartials(); removed > 0) {
    spdlog::info("artifacts: removed {} interrupted upload(s) untouched for 24 h", removed);
  }
  return Status::Ok();
}

Result<std::unique_ptr<BlobWriter>> ArtifactStore::NewWriter(const std::string& expected_digest,
                                                             uint64_t expected_size) {
  if (expected_size > kMaxArtifactBytes) {
    return Status::InvalidArgument("announced size " + std::to_string(expected_size) + " exceeds the limit of " +
                                   std::to_string(kMaxArtifactBytes) + " bytes");
  }
  if (!expected_digest.empty() && !IsValidDigest(expected_digest)) {
    return Status::InvalidArgument("artifact digest must be sha256:<64 hex>, got '" + expected_digest + "'");
  }
  std::string tmp = root_ + "/tmp/" + RandomHex(8);
  FILE* f = std::fopen(tmp.c_str(), "wbx");
  if (!f) return WriteFailure("cannot create " + tmp);
  return std::unique_ptr<BlobWriter>(new BlobWriter(root_, expected_digest, expected_size, tmp, f));
}

std::string ArtifactStore::PartialPathOf(const std::string& digest, const std::string& uploader) const {
  return root_ + "/partial/" + DigestHex(digest) + "." + UploaderTag(uploader);
}

Status ArtifactStore::ClaimPartial(const std::string& path, const std::string& expected_digest,
                                   const std::string& uploader, uint64_t expected_size) {
  MutexLock lock(&mu_);
  // A client that lost its stream and came straight back may beat the
  // server's old handler to the partial: wait for that one to let go.
  if (!released_.WaitFor(&mu_, kPartialBusyWait, [&]() IG_REQUIRES(mu_) { return !busy_partials_.count(path); })) {
    return Status::Unavailable("another upload of " + expected_digest + " by this caller is still running");
  }
  busy_partials_.insert(path);
  RemoveStalePartialsLocked();
  EvictOldestPartialsLocked(uploader, path, expected_size);
  return Status::Ok();
}

void ArtifactStore::EvictOldestPartialsLocked(const std::string& uploader, const std::string& path,
                                              uint64_t expected_size) {
  // One uploader's partials stay under the blob cap: its oldest go first.
  std::vector<PartialFile> mine = ListPartials("." + UploaderTag(uploader));
  std::erase_if(mine, [&](const PartialFile& p) { return p.path == path; });
  std::sort(mine.begin(), mine.end(), [](const auto& a, const auto& b) { return a.mtime_ms < b.mtime_ms; });
  uint64_t held = 0;
  for (const auto& p : mine) held += p.bytes;
  for (const auto& p : mine) {
    if (held + expected_size <= kMaxArtifactBytes) break;
    if (RemoveIdlePartial(p.path)) held -= p.bytes;
  }
}

Result<std::unique_ptr<BlobWriter>> ArtifactStore::NewResumableWriter(const std::string& expected_digest,
                                                                      uint64_t expected_size,
                                                                      const std::string& uploader, uint64_t offset) {
  IG_RETURN_IF_ERROR(CheckResumable(expected_digest, expected_size, offset));
  const std::string path = PartialPathOf(expected_digest, uploader);
  IG_RETURN_IF_ERROR(ClaimPartial(path, expected_digest, uploader, expected_size));
  // Frees the partial on every path out, the writer's destructor included.
  auto release = [this, path] { ReleasePartial(path); };
  Result<FILE*> file = OpenPartialAt(path, expected_digest, offset);
  if (!file.ok()) {
    release();
    return file.status();
  }
  std::unique_ptr<BlobWriter> writer(new BlobWriter(root_, expected_digest, expected_size, path, *file));
  writer->release_ = std::move(release);
  IG_RETURN_IF_ERROR(writer->ResumeAt(offset));
  return writer;
}

void ArtifactStore::ReleasePartial(const std::string& path) {
  MutexLock lock(&mu_);
  busy_partials_.erase(path);
  released_.NotifyAll();
}

uint64_t ArtifactStore::PartialBytes(const std::string& digest, const std::string& uploader) const {
  if (!IsValidDigest(digest)) return 0;
  const std::string path = PartialPathOf(digest, uploader);
  {
    // Asked right after a cut, the old writer may still be flushing: its
    // final size is the one a resume can use.
    MutexLock lock(&mu_);
    released_.WaitFor(&mu_, kPartialBusyWait, [&]() IG_REQUIRES(mu_) { return !busy_partials_.count(path); });
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

uint64_t ArtifactStore::PartialBytesOf(const std::string& uploader, const std::string& except_digest) const {
  const std::string except = IsValidDigest(except_digest) ? PartialPathOf(except_digest, uploader) : "";
  uint64_t total = 0;
  for (const PartialFile& p : ListPartials("." + UploaderTag(uploader))) {
    if (p.path != except) total += p.bytes;
  }
  return total;
}

std::vector<ArtifactStore::PartialFile> ArtifactStore::ListPartials(const std::string& suffix) const {
  std::vector<PartialFile> out;
  const std::string dir = root_ + "/partial";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (!suffix.empty() &&
        (name.size() < suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)) {
      continue;
    }
    struct stat st;
    std::string path = dir + "/" + name;
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    out.push_back({path, static_cast<uint64_t>(st.st_size), MtimeMs(st)});
  }
  ::closedir(d);
  return out;
}

bool ArtifactStore::RemoveIdlePartial(const std::string& path) {
  if (busy_partials_.count(path)) return false;
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT;
  // Held by a writer in another coordinator sharing this directory.
  bool idle = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  if (idle) ::unlink(path.c_str());
  ::close(fd);
  return idle;
}

int ArtifactStore::RemoveStalePartialsLocked() {
  const int64_t now = clock_->NowMs();
  int removed = 0;
  for (const PartialFile& p : ListPartials("")) {
    if (now - p.mtime_ms > kPartialMaxAgeMs && RemoveIdlePartial(p.path)) ++removed;
  }
  return removed;
}

int ArtifactStore::RemoveStalePartials() {
  MutexLock lock(&mu_);
  return RemoveStalePartialsLocked();
}

std::string ArtifactStore::PathOf(const std::string& digest) const {
  std::string hex = DigestHex(digest);
  return root_ + "/sha256/" + hex.substr(0, 2) + "/" + hex;
}

Status ArtifactStore::Remove(const std::string& digest) {
  if (!IsValidDigest(digest)) return Status::InvalidArgument("not a digest: " + digest);
  if (::unlink(PathOf(digest).c_str()) != 0 && errno != ENOENT) {
    return Status::Internal("cannot remove " + PathOf(digest) + ": " + Errno());
  }
  return Status::Ok();
}

bool ArtifactStore::Has(const std::string& digest) const { return IsValidDigest(digest) && PathExists(PathOf(digest)); }

Result<uint64_t> ArtifactStore::SizeOf(const std::string& digest) const {
  struct stat st;
  if (!IsValidDigest(digest) || ::stat(PathOf(digest).c_str(), &st) != 0) {
    return Status::NotFound("artifact " + digest + " does not exist");
  }
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace idlegrid::artifacts
