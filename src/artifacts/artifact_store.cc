#include "artifacts/artifact_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/fs.h"
#include "common/random.h"

namespace idlegrid::artifacts {

BlobWriter::BlobWriter(std::string root, std::string expected_digest, uint64_t expected_size, std::string tmp_path,
                       FILE* file)
    : root_(std::move(root)),
      expected_digest_(std::move(expected_digest)),
      expected_size_(expected_size),
      tmp_path_(std::move(tmp_path)),
      file_(file) {}

BlobWriter::~BlobWriter() {
  if (file_) std::fclose(file_);
  if (!done_) ::unlink(tmp_path_.c_str());
}

Status BlobWriter::Append(const void* data, size_t size) {
  if (size_ + size > kMaxArtifactBytes) {
    return Status::InvalidArgument("artifact is larger than the limit of " + std::to_string(kMaxArtifactBytes) +
                                   " bytes");
  }
  if (expected_size_ > 0 && size_ + size > expected_size_) {
    return Status::InvalidArgument("upload is larger than its announced size " + std::to_string(expected_size_));
  }
  if (std::fwrite(data, 1, size, file_) != size) {
    return Status::Internal(std::string("cannot write artifact: ") + std::strerror(errno));
  }
  hash_.Update(data, size);
  size_ += size;
  return Status::Ok();
}

Result<std::string> BlobWriter::Commit() {
  if (std::fflush(file_) != 0 || ::fsync(fileno(file_)) != 0) {
    return Status::Internal(std::string("cannot flush artifact: ") + std::strerror(errno));
  }
  std::fclose(file_);
  file_ = nullptr;
  std::string digest = hash_.Finish();
  if (!expected_digest_.empty() && digest != expected_digest_) {
    return Status::DataLoss("upload hashes to " + digest + ", not the announced " + expected_digest_);
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
    return Status::Internal("cannot publish artifact " + digest + ": " + std::strerror(errno));
  }
  done_ = true;
  return digest;
}

Status ArtifactStore::Init() {
  IG_RETURN_IF_ERROR(MakeDirs(root_ + "/sha256"));
  return MakeDirs(root_ + "/tmp");
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
  if (!f) return Status::Internal("cannot create " + tmp + ": " + std::strerror(errno));
  return std::unique_ptr<BlobWriter>(new BlobWriter(root_, expected_digest, expected_size, tmp, f));
}

std::string ArtifactStore::PathOf(const std::string& digest) const {
  std::string hex = DigestHex(digest);
  return root_ + "/sha256/" + hex.substr(0, 2) + "/" + hex;
}

Status ArtifactStore::Remove(const std::string& digest) {
  if (!IsValidDigest(digest)) return Status::InvalidArgument("not a digest: " + digest);
  if (::unlink(PathOf(digest).c_str()) != 0 && errno != ENOENT) {
    return Status::Internal("cannot remove " + PathOf(digest) + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

bool ArtifactStore::Has(const std::string& digest) const {
  return IsValidDigest(digest) && PathExists(PathOf(digest));
}

Result<uint64_t> ArtifactStore::SizeOf(const std::string& digest) const {
  struct stat st;
  if (!IsValidDigest(digest) || ::stat(PathOf(digest).c_str(), &st) != 0) {
    return Status::NotFound("artifact " + digest + " does not exist");
  }
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace idlegrid::artifacts
