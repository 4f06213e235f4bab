#include "cli/dir_inputs.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include "common/digest.h"
#include "image/dir_archive.h"

namespace idlegrid::cli {
namespace {

// A tar of `dir` in a temporary file, removed when this goes.
class PackedDirectory {
 public:
  static Result<PackedDirectory> Pack(const std::string& dir) {
    std::error_code ec;
    std::string tmpl = (std::filesystem::temp_directory_path(ec) / "idlegrid-dir-XXXXXX").string();
    const int fd = ::mkstemp(tmpl.data());
    if (fd < 0) return Status::Internal("cannot create a temporary file for packing " + dir);
    ::close(fd);
    PackedDirectory packed(tmpl);
    IG_RETURN_IF_ERROR(image::WriteDirectoryTar(dir, tmpl).WithContext("packing " + dir));
    return packed;
  }
  PackedDirectory(PackedDirectory&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  PackedDirectory(const PackedDirectory&) = delete;
  ~PackedDirectory() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  explicit PackedDirectory(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace

Result<v1::ArtifactRef> PushDirectory(Client& client, const std::string& dir, bool make_public) {
  IG_ASSIGN_OR_RETURN(PackedDirectory packed, PackedDirectory::Pack(dir));
  return client.UploadFile(packed.path(), "input", make_public);
}

Result<std::string> DirectoryDigest(const std::string& dir) {
  IG_ASSIGN_OR_RETURN(PackedDirectory packed, PackedDirectory::Pack(dir));
  return Sha256File(packed.path());
}

manifest::DirInputResolver UploadingDirResolver(std::function<Result<Client*>()> connect) {
  return [connect = std::move(connect)](const std::string& dir) -> Result<std::string> {
    IG_ASSIGN_OR_RETURN(Client * client, connect());
    IG_ASSIGN_OR_RETURN(v1::ArtifactRef ref, PushDirectory(*client, dir, false));
    return ref.digest();
  };
}

}  // namespace idlegrid::cli
