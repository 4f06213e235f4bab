#include "image/rootfs_unpack.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <cerrno>
#include <cstring>

#include "common/digest.h"
#include "common/fs.h"
#include "common/unique_fd.h"
#include "image/gzip_layer.h"
#include "image/layer_applier.h"
#include "image/layer_tar.h"
#include "image/oci_archive.h"
#include "image/tar_reader.h"

namespace idlegrid::image {
namespace {

constexpr uint64_t kMaxJsonSize = 4 * 1024 * 1024;
// A gzip layer that inflates beyond this is refused (a decompression bomb).
constexpr uint64_t kMaxLayerBytes = uint64_t{32} << 30;

// Owns a file descriptor.
using Fd = UniqueFd;  // common/unique_fd.h

Status Errno(const std::string& what) { return Status::Internal(what + ": " + std::strerror(errno)); }

std::string Parent(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

std::string Leaf(const std::string& path) { return path.substr(path.rfind('/') + 1); }

struct LayerRef {
  std::string digest;
  std::string media_type;
};

Result<std::string> ReadVerifiedBlob(const TarReader& tar, const std::string& digest, const std::string& what) {
  const TarMember* member = tar.Find("blobs/sha256/" + DigestHex(digest));
  if (member == nullptr) return Status::NotFound(what + " blob " + digest + " is missing");
  IG_ASSIGN_OR_RETURN(std::string text, tar.ReadAll(*member, kMaxJsonSize));
  if (Sha256Digest(text) != digest) return Status::DataLoss(what + " blob changed after verification");
  return text;
}

Result<std::vector<LayerRef>> ManifestLayers(const std::string& manifest_json) {
  google::protobuf::Struct doc;
  if (!google::protobuf::util::JsonStringToMessage(manifest_json, &doc).ok()) {
    return Status::InvalidArgument("manifest is not JSON");
  }
  auto it = doc.fields().find("layers");
  if (it == doc.fields().end() || !it->second.has_list_value())
    return Status::InvalidArgument("manifest has no layers");
  std::vector<LayerRef> layers;
  for (const auto& v : it->second.list_value().values()) {
    const auto& f = v.struct_value().fields();
    LayerRef ref;
    if (auto d = f.find("digest"); d != f.end()) ref.digest = d->second.string_value();
    if (auto m = f.find("mediaType"); m != f.end()) ref.media_type = m->second.string_value();
    layers.push_back(std::move(ref));
  }
  return layers;
}

// zstd (which podman can write on request) is not supported; uncompressed
// and gzip layers are.
Status CheckNotZstd(const LayerRef& layer, int fd, const TarMember& member, const std::string& what) {
  unsigned char magic[4] = {0, 0, 0, 0};
  const bool zstd_magic = member.size >= 4 && ::pread(fd, magic, 4, static_cast<off_t>(member.offset)) == 4 &&
                          magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f && magic[3] == 0xfd;
  if (zstd_magic || layer.media_type.find("zstd") != std::string::npos) {
    return Status::InvalidArgument(what + " is zstd-compressed; only uncompressed and gzip layers are supported");
  }
  return Status::Ok();
}

// config.rootfs.diff_ids: each layer's uncompressed digest, when listed.
std::vector<std::string> DiffIds(const std::string& config_json) {
  std::vector<std::string> out;
  google::protobuf::Struct doc;
  if (!google::protobuf::util::JsonStringToMessage(config_json, &doc).ok()) return out;
  auto rootfs = doc.fields().find("rootfs");
  if (rootfs == doc.fields().end()) return out;
  auto ids = rootfs->second.struct_value().fields().find("diff_ids");
  if (ids == rootfs->second.struct_value().fields().end()) return out;
  for (const auto& v : ids->second.list_value().values()) out.push_back(v.string_value());
  return out;
}

// Applies layer `index` of the archive; a gzip layer is inflated to a
// scratch file in `tmp_dir` first and checked against its diff_id.
Status ApplyArchiveLayer(LayerApplier& applier, const TarReader& tar, int archive_fd, const LayerRef& layer,
                         size_t index, const std::vector<std::string>& diff_ids, const std::string& tmp_dir) {
  const std::string what = "layer " + std::to_string(index) + " (" + layer.digest + ")";
  const TarMember* member = tar.Find("blobs/sha256/" + DigestHex(layer.digest));
  if (member == nullptr) return Status::NotFound(what + " is missing from the archive");
  IG_RETURN_IF_ERROR(CheckNotZstd(layer, archive_fd, *member, what));
  if (!IsGzip(archive_fd, member->offset, member->size)) {
    LayerTarReader reader(archive_fd, member->offset, member->size, what);
    return applier.Apply(reader).WithContext(what);
  }
  const std::string scratch = tmp_dir + "/layer.tar";
  struct Unlinker {
    const std::string& path;
    ~Unlinker() { ::unlink(path.c_str()); }
  } unlink_scratch{scratch};
  IG_ASSIGN_OR_RETURN(std::string diff_id,
                      GunzipToFile(archive_fd, member->offset, member->size, scratch, kMaxLayerBytes, what));
  if (index < diff_ids.size() && diff_ids[index] != diff_id) {
    return Status::DataLoss(what + " inflates to " + diff_id + ", but the image config says " + diff_ids[index]);
  }
  Fd file(::open(scratch.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (file.get() < 0 || ::fstat(file.get(), &st) != 0) return Errno("open " + scratch);
  LayerTarReader reader(file.get(), 0, static_cast<uint64_t>(st.st_size), what);
  return applier.Apply(reader).WithContext(what);
}

// Recreates the tree under `from` below `to` (an empty directory): new
// directories with the same modes and times, hard links to the same files,
// the same symlinks; nothing else exists in an unpacked tree. Directories
// are made writable while they are filled and get their mode last.
Status CloneTreeAt(int from, int to, int depth) {
  if (depth > 256) return Status::InvalidArgument("the tree to clone is nested more than 256 deep");
  int dup_fd = ::dup(from);
  if (dup_fd < 0) return Errno("dup");
  DIR* dir = ::fdopendir(dup_fd);
  if (dir == nullptr) {
    ::close(dup_fd);
    return Errno("fdopendir");
  }
  struct Closer {
    DIR* d;
    ~Closer() { ::closedir(d); }
  } closer{dir};
  while (struct dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(from, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return Errno("stat \"" + name + "\"");
    if (S_ISDIR(st.st_mode)) {
      if (::mkdirat(to, name.c_str(), 0700) != 0) return Errno("mkdir \"" + name + "\"");
      Fd sub_from(::openat(from, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      Fd sub_to(::openat(to, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (sub_from.get() < 0 || sub_to.get() < 0) return Errno("open \"" + name + "\"");
      IG_RETURN_IF_ERROR(CloneTreeAt(sub_from.get(), sub_to.get(), depth + 1).WithContext(name));
      const struct timespec times[2] = {st.st_atim, st.st_mtim};
      if (::fchmod(sub_to.get(), st.st_mode & 07777) != 0 || ::futimens(sub_to.get(), times) != 0) {
        return Errno("chmod \"" + name + "\"");
      }
    } else if (S_ISREG(st.st_mode)) {
      if (::linkat(from, name.c_str(), to, name.c_str(), 0) != 0) return Errno("link \"" + name + "\"");
    } else if (S_ISLNK(st.st_mode)) {
      std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
      ssize_t n = ::readlinkat(from, name.c_str(), target.data(), target.size());
      if (n < 0 || static_cast<size_t>(n) >= target.size()) return Errno("readlink \"" + name + "\"");
      target.resize(static_cast<size_t>(n));
      if (::symlinkat(target.c_str(), to, name.c_str()) != 0) return Errno("symlink \"" + name + "\"");
    }
  }
  return Status::Ok();
}

Status CloneTree(const std::string& from, int to) {
  Fd src(::open(from.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (src.get() < 0) return Errno("open " + from);
  return CloneTreeAt(src.get(), to, 0).WithContext("cloning " + from);
}

Status Unpack(const std::string& archive_path, const std::string& manifest_digest, const std::string& config_json,
              const TarReader& tar, const std::string& tmp_dir, const UnpackBase& base) {
  IG_ASSIGN_OR_RETURN(std::string manifest, ReadVerifiedBlob(tar, manifest_digest, "manifest"));
  IG_ASSIGN_OR_RETURN(std::vector<LayerRef> layers, ManifestLayers(manifest));
  const std::string rootfs = tmp_dir + "/" + kRootfsDirName;
  if (::mkdir(rootfs.c_str(), 0755) != 0) return Errno("mkdir " + rootfs);
  Fd root(::open(rootfs.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  Fd archive(::open(archive_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (root.get() < 0 || archive.get() < 0) return Errno("open");
  // The base's chain must really be this image's first layers.
  size_t first = 0;
  if (base.layers > 0 && base.layers <= layers.size()) {
    std::vector<std::string> chain = ReadLayerChain(base.image_dir);
    bool prefix = chain.size() >= base.layers;
    for (size_t i = 0; prefix && i < base.layers; ++i) prefix = chain[i] == layers[i].digest;
    if (prefix && CloneTree(base.image_dir + "/" + kRootfsDirName, root.get()).ok()) first = base.layers;
    if (first == 0) {  // a base that vanished or failed half-way: start from nothing
      root = Fd();
      IG_RETURN_IF_ERROR(RemoveUnpackedTree(rootfs));
      if (::mkdir(rootfs.c_str(), 0755) != 0) return Errno("mkdir " + rootfs);
      root = Fd(::open(rootfs.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (root.get() < 0) return Errno("open " + rootfs);
    }
  }
  LayerApplier applier(root.get());
  const std::vector<std::string> diff_ids = DiffIds(config_json);
  for (size_t i = first; i < layers.size(); ++i) {
    IG_RETURN_IF_ERROR(ApplyArchiveLayer(applier, tar, archive.get(), layers[i], i, diff_ids, tmp_dir));
  }
  IG_RETURN_IF_ERROR(applier.Finish());
  std::string chain;
  for (const LayerRef& l : layers) chain += l.digest + "\n";
  IG_RETURN_IF_ERROR(WriteFileAtomic(tmp_dir + "/" + kLayerChainFileName, chain));
  IG_RETURN_IF_ERROR(WriteFileAtomic(tmp_dir + "/" + kImageConfigFileName, config_json));
  // The marker must not outlive a crash that loses the tree under it.
  if (::syncfs(root.get()) != 0) return Errno("syncfs");
  return Status::Ok();
}

}  // namespace

Status RemoveUnpackedTree(const std::string& path) {
  const std::string parent_path = Parent(path).empty() ? "/" : Parent(path);
  Fd parent(::open(parent_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (parent.get() < 0) return errno == ENOENT ? Status::Ok() : Errno("open " + parent_path);
  return RemoveTreeAt(parent.get(), Leaf(path)).WithContext("removing " + path);
}

std::vector<std::string> ReadLayerChain(const std::string& image_dir) {
  std::vector<std::string> out;
  auto text = ReadFile(image_dir + "/" + kLayerChainFileName);
  if (!text.ok()) return out;
  size_t start = 0;
  while (start < text->size()) {
    size_t end = text->find('\n', start);
    if (end == std::string::npos) end = text->size();
    if (end > start) out.push_back(text->substr(start, end - start));
    start = end + 1;
  }
  return out;
}

Result<std::vector<std::string>> ArchiveLayerChain(const std::string& archive_path) {
  // Cheap on purpose (no layer is hashed): it only picks a base, and
  // Unpack checks the chain again against the verified manifest.
  IG_ASSIGN_OR_RETURN(TarReader tar, TarReader::Open(archive_path));
  const TarMember* index_member = tar.Find("index.json");
  if (index_member == nullptr) return Status::InvalidArgument(archive_path + " has no index.json");
  IG_ASSIGN_OR_RETURN(std::string index_json, tar.ReadAll(*index_member, kMaxJsonSize));
  google::protobuf::Struct index;
  if (!google::protobuf::util::JsonStringToMessage(index_json, &index).ok()) {
    return Status::InvalidArgument("index.json of " + archive_path + " is not JSON");
  }
  auto manifests = index.fields().find("manifests");
  if (manifests == index.fields().end() || manifests->second.list_value().values_size() == 0) {
    return Status::InvalidArgument("index.json of " + archive_path + " lists no manifest");
  }
  const auto& first = manifests->second.list_value().values(0).struct_value().fields();
  auto digest = first.find("digest");
  if (digest == first.end()) return Status::InvalidArgument("index.json of " + archive_path + " names no digest");
  IG_ASSIGN_OR_RETURN(std::string manifest, ReadVerifiedBlob(tar, digest->second.string_value(), "manifest"));
  IG_ASSIGN_OR_RETURN(std::vector<LayerRef> layers, ManifestLayers(manifest));
  std::vector<std::string> out;
  for (const LayerRef& l : layers) out.push_back(l.digest);
  return out;
}

Result<UnpackedImage> UnpackOciImage(const std::string& archive_path, const std::string& dest_dir,
                                     const std::string& expected_config_digest, const UnpackBase& base) {
  IG_ASSIGN_OR_RETURN(OciImageInfo info, InspectOciArchive(archive_path));
  if (!expected_config_digest.empty() && info.config_digest != expected_config_digest) {
    return Status::DataLoss("image archive " + archive_path + " holds image " + info.config_digest + ", not " +
                            expected_config_digest);
  }
  IG_ASSIGN_OR_RETURN(TarReader tar, TarReader::Open(archive_path));
  IG_ASSIGN_OR_RETURN(std::string config_json, ReadVerifiedBlob(tar, info.config_digest, "config"));
  IG_ASSIGN_OR_RETURN(ImageConfig config, ParseImageConfig(config_json));

  std::string tmpl = dest_dir + ".tmp-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) return Errno("cannot create a directory next to " + dest_dir);
  const std::string tmp_dir = tmpl;
  Status unpacked = Unpack(archive_path, info.manifest_digest, config_json, tar, tmp_dir, base);
  if (!unpacked.ok()) {
    // A ".tmp-" directory left here is removed at the next runtime start.
    (void)RemoveUnpackedTree(tmp_dir);
    return unpacked.WithContext("unpacking " + archive_path);
  }
  if (::chmod(tmp_dir.c_str(), 0755) != 0 || ::rename(tmp_dir.c_str(), dest_dir.c_str()) != 0) {
    const int err = errno;
    (void)RemoveUnpackedTree(tmp_dir);  // as above
    if (err == EEXIST || err == ENOTEMPTY) return Status::AlreadyExists(dest_dir + " was unpacked meanwhile");
    return Status::Internal("cannot move the unpacked image to " + dest_dir + ": " + std::strerror(err));
  }
  return UnpackedImage{info.manifest_digest, info.config_digest, std::move(config)};
}

Status ApplyLayerFiles(const std::vector<std::string>& tar_paths, const std::string& root_dir) {
  Fd root(::open(root_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (root.get() < 0) return Errno("open " + root_dir);
  LayerApplier applier(root.get());
  for (const std::string& path : tar_paths) {
    Fd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st {};
    if (file.get() < 0 || ::fstat(file.get(), &st) != 0) return Errno("open " + path);
    LayerTarReader reader(file.get(), 0, static_cast<uint64_t>(st.st_size), path);
    IG_RETURN_IF_ERROR(applier.Apply(reader));
  }
  return applier.Finish();
}

}  // namespace idlegrid::image
