#include "image/signature_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/fs.h"
#include "common/unique_fd.h"

namespace idlegrid::image {
namespace {

// Creates `path` with `mode`, failing if it exists; removes it again if the
// write fails.
Status CreateExclusive(const std::string& path, const std::string& content, mode_t mode) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (fd.get() < 0) {
    if (errno == EEXIST) return Status::AlreadyExists(path + " exists; refusing to overwrite a key");
    return Status::Internal("cannot create " + path + ": " + std::strerror(errno));
  }
  ::fchmod(fd.get(), mode);  // whatever the umask
  size_t off = 0;
  while (off < content.size()) {
    const ssize_t n = ::write(fd.get(), content.data() + off, content.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::unlink(path.c_str());
      return Status::Internal("cannot write " + path + ": " + why);
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(path.c_str());
    return Status::Internal("cannot write " + path + ": " + why);
  }
  return Status::Ok();
}

}  // namespace

Result<ImagePublicKey> LoadPublicKeyFile(const std::string& path) {
  IG_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParsePublicKey(text, path);
}

Result<ImageSigningKey> LoadSigningKeyFile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Status::NotFound("cannot read " + path + ": " + std::strerror(errno));
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Status::PermissionDenied("secret key " + path + " has mode " + mode +
                                    " and is accessible by group or others; run: chmod 600 " + path);
  }
  IG_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  auto key = ImageSigningKey::Parse(text, path);
  std::fill(text.begin(), text.end(), '\0');
  return key;
}

Status WriteKeyFiles(const ImageSigningKey& key, const std::string& prefix) {
  const std::string secret_path = prefix + ".key";
  const std::string public_path = prefix + ".pub";
  // Both checked first, so a refusal leaves nothing half-made.
  for (const std::string& p : {secret_path, public_path}) {
    if (PathExists(p)) return Status::AlreadyExists(p + " exists; refusing to overwrite a key");
  }
  std::string secret = key.Format();
  Status written = CreateExclusive(secret_path, secret, 0600);
  std::fill(secret.begin(), secret.end(), '\0');
  IG_RETURN_IF_ERROR(written);
  if (Status st = CreateExclusive(public_path, FormatPublicKey(key.public_key()), 0644); !st.ok()) {
    ::unlink(secret_path.c_str());
    return st;
  }
  return Status::Ok();
}

Result<ImageSigningKey> LoadOrCreateSigningKey(const std::string& key_path, const std::string& pub_path,
                                               const std::string& name) {
  if (!PathExists(key_path)) {
    IG_ASSIGN_OR_RETURN(ImageSigningKey fresh, ImageSigningKey::Generate(name));
    std::string secret = fresh.Format();
    Status written = WriteFileAtomic(key_path, secret, 0600);
    std::fill(secret.begin(), secret.end(), '\0');
    IG_RETURN_IF_ERROR(written);
  }
  IG_ASSIGN_OR_RETURN(ImageSigningKey key, LoadSigningKeyFile(key_path));
  IG_RETURN_IF_ERROR(WriteFileAtomic(pub_path, FormatPublicKey(key.public_key()), 0644));
  return key;
}

}  // namespace idlegrid::image
