#include "image/dir_archive.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "common/unique_fd.h"
#include "image/layer_tar.h"
#include "image/rootfs_unpack.h"

namespace idlegrid::image {
namespace {

constexpr size_t kBlock = 512;
constexpr size_t kNameField = 100;
constexpr size_t kPrefixField = 155;
constexpr uint64_t kMaxUstarSize = 077777777777ULL;  // 11 octal digits: just under 8 GiB
constexpr size_t kChunk = 1 << 20;

Status Errno(const std::string& what) { return Status::Internal(what + ": " + std::strerror(errno)); }

// ustar's prefix and name fields for `path`, or false when it does not fit.
bool SplitName(const std::string& path, std::string* prefix, std::string* name) {
  if (path.size() <= kNameField) {
    prefix->clear();
    *name = path;
    return true;
  }
  for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    const size_t rest = path.size() - slash - 1;
    if (slash <= kPrefixField && rest > 0 && rest <= kNameField) {
      *prefix = path.substr(0, slash);
      *name = path.substr(slash + 1);
      return true;
    }
  }
  return false;
}

void PutOctal(char* field, size_t width, uint64_t value) {
  std::snprintf(field, width, "%0*llo", static_cast<int>(width - 1), static_cast<unsigned long long>(value));
}

// One header block, 0:0, mtime 0. The caller has checked that `path` fits.
std::string Header(const std::string& path, uint64_t size, uint32_t mode, char type) {
  std::string prefix, name;
  SplitName(path, &prefix, &name);
  char h[kBlock] = {};
  std::memcpy(h, name.data(), name.size());
  PutOctal(h + 100, 8, mode);
  PutOctal(h + 108, 8, 0);
  PutOctal(h + 116, 8, 0);
  PutOctal(h + 124, 12, size);
  PutOctal(h + 136, 12, 0);
  h[156] = type;
  std::memcpy(h + 257,
              "ustar\0"
              "00",
              8);
  PutOctal(h + 329, 8, 0);
  PutOctal(h + 337, 8, 0);
  std::memcpy(h + 345, prefix.data(), prefix.size());
  std::memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(h + 148, 7, "%06o", sum);
  return std::string(h, kBlock);
}

Status WriteAll(int fd, std::string_view data, const std::string& what) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Errno("writing " + what);
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

class TreeWriter {
 public:
  TreeWriter(std::string root, int out, std::string out_path)
      : root_(std::move(root)), out_(out), out_path_(std::move(out_path)) {}

  // Members for everything below `rel` ("" is the root), in sorted order.
  Status WriteChildren(const std::string& rel) {
    const std::string dir_path = rel.empty() ? root_ : root_ + "/" + rel;
    DIR* dir = ::opendir(dir_path.c_str());
    if (dir == nullptr) return Errno("reading " + dir_path);
    std::vector<std::string> names;
    errno = 0;
    while (const dirent* e = ::readdir(dir)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    const int read_error = errno;
    ::closedir(dir);
    if (read_error != 0) return Status::Internal("reading " + dir_path + ": " + std::strerror(read_error));
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      const std::string child = rel.empty() ? name : rel + "/" + name;
      IG_RETURN_IF_ERROR(WriteMember(child));
    }
    return Status::Ok();
  }

 private:
  Status WriteMember(const std::string& rel) {
    const std::string path = root_ + "/" + rel;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return Errno("lstat " + path);
    const bool is_dir = S_ISDIR(st.st_mode);
    if (!is_dir && !S_ISREG(st.st_mode)) {
      const char* kind = S_ISLNK(st.st_mode)    ? "a symlink"
                         : S_ISCHR(st.st_mode)  ? "a character device"
                         : S_ISBLK(st.st_mode)  ? "a block device"
                         : S_ISFIFO(st.st_mode) ? "a FIFO"
                         : S_ISSOCK(st.st_mode) ? "a socket"
                                                : "not a regular file";
      return Status::InvalidArgument(path + " is " + std::string(kind) +
                                     ": a directory input holds regular files and directories only");
    }
    const std::string member = is_dir ? rel + "/" : rel;
    std::string prefix, name;
    if (!SplitName(member, &prefix, &name)) {
      return Status::InvalidArgument(path +
                                     ": the path is too long for a ustar header (at most 100 bytes of name "
                                     "after a 155-byte directory prefix)");
    }
    if (is_dir) {
      IG_RETURN_IF_ERROR(WriteAll(out_, Header(member, 0, 0755, '5'), out_path_));
      return WriteChildren(rel);
    }
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    if (size > kMaxUstarSize) return Status::InvalidArgument(path + " is 8 GiB or more: too large for a ustar member");
    const uint32_t mode = (st.st_mode & 0111) != 0 ? 0755 : 0644;
    IG_RETURN_IF_ERROR(WriteAll(out_, Header(member, size, mode, '0'), out_path_));
    UniqueFd in(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (in.get() < 0) return Errno("open " + path);
    std::string buffer(kChunk, '\0');
    uint64_t left = size;
    while (left > 0) {
      const ssize_t n = ::read(in.get(), buffer.data(), std::min<uint64_t>(left, buffer.size()));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Errno("reading " + path);
      if (n == 0) return Status::InvalidArgument(path + " shrank while it was packed; pack it again");
      IG_RETURN_IF_ERROR(WriteAll(out_, std::string_view(buffer.data(), static_cast<size_t>(n)), out_path_));
      left -= static_cast<uint64_t>(n);
    }
    char probe;
    if (::read(in.get(), &probe, 1) > 0)
      return Status::InvalidArgument(path + " grew while it was packed; pack it again");
    const size_t pad = (kBlock - size % kBlock) % kBlock;
    return WriteAll(out_, std::string(pad, '\0'), out_path_);
  }

  const std::string root_;
  const int out_;
  const std::string out_path_;
};

// Creates the read-only tree in `root`, a fresh directory nothing else writes.
class TreeUnpacker {
 public:
  TreeUnpacker(std::string root, const DirArchiveLimits& limits) : root_(std::move(root)), limits_(limits) {}

  Status Apply(LayerTarReader& reader) {
    while (true) {
      IG_ASSIGN_OR_RETURN(std::optional<LayerEntry> entry, reader.Next());
      if (!entry) break;
      IG_RETURN_IF_ERROR(Add(reader, *entry));
    }
    return Seal();
  }

 private:
  static Status Refused(const LayerEntry& e, const std::string& why) {
    return Status::InvalidArgument("entry " + std::string(e.path.empty() ? "." : e.path) + ": " + why);
  }

  Status Add(const LayerTarReader& reader, const LayerEntry& e) {
    if (e.path.empty()) {
      if (e.type == LayerEntryType::kDirectory) return Status::Ok();  // "./": the root itself
      return Refused(e, "the archive's root must be a directory");
    }
    if (++entries_ > limits_.max_entries) {
      return Refused(e, "more than " + std::to_string(limits_.max_entries) + " entries");
    }
    if (std::count(e.path.begin(), e.path.end(), '/') + 1 > static_cast<long>(limits_.max_depth)) {
      return Refused(e, "deeper than " + std::to_string(limits_.max_depth) + " directories");
    }
    switch (e.type) {
      case LayerEntryType::kDirectory:
        if (files_.count(e.path)) return Refused(e, "is both a file and a directory");
        return MakeDir(e, e.path);
      case LayerEntryType::kRegular:
        return AddFile(reader, e);
      case LayerEntryType::kSymlink:
        return Refused(e, "is a symlink: a directory input holds regular files and directories only");
      case LayerEntryType::kHardLink:
        return Refused(e, "is a hard link: a directory input holds regular files and directories only");
      case LayerEntryType::kOther:
        break;
    }
    return Refused(e, std::string("has tar type '") + e.typeflag +
                          "' (a device, FIFO or other special file): a directory input holds regular files and "
                          "directories only");
  }

  // `rel` and its missing parents.
  Status MakeDir(const LayerEntry& e, const std::string& rel) {
    if (dirs_.count(rel)) return Status::Ok();
    const size_t slash = rel.rfind('/');
    if (slash != std::string::npos) IG_RETURN_IF_ERROR(MakeDir(e, rel.substr(0, slash)));
    if (files_.count(rel)) return Refused(e, "lies under the file " + rel);
    const std::string path = root_ + "/" + rel;
    if (::mkdir(path.c_str(), 0700) != 0) return Errno("mkdir " + path);
    dirs_.insert(rel);
    return Status::Ok();
  }

  Status AddFile(const LayerTarReader& reader, const LayerEntry& e) {
    if (files_.count(e.path) || dirs_.count(e.path)) return Refused(e, "appears twice");
    if (e.size > limits_.max_total_bytes - std::min(total_bytes_, limits_.max_total_bytes)) {
      return Refused(e, "the archive unpacks to more than " + std::to_string(limits_.max_total_bytes) + " bytes");
    }
    total_bytes_ += e.size;
    const size_t slash = e.path.rfind('/');
    if (slash != std::string::npos) IG_RETURN_IF_ERROR(MakeDir(e, e.path.substr(0, slash)));
    const std::string path = root_ + "/" + e.path;
    const mode_t mode = (e.mode & 0111) != 0 ? 0555 : 0444;
    UniqueFd out(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
    if (out.get() < 0) return Errno("create " + path);
    files_.insert(e.path);
    IG_RETURN_IF_ERROR(reader.ReadContent(e, [&](std::string_view chunk) { return WriteAll(out.get(), chunk, path); }));
    if (::fchmod(out.get(), mode) != 0) return Errno("chmod " + path);
    return Status::Ok();
  }

  // Directories become read-only last, deepest first (children before parents).
  Status Seal() {
    for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) {
      const std::string path = root_ + "/" + *it;
      if (::chmod(path.c_str(), 0555) != 0) return Errno("chmod " + path);
    }
    return Status::Ok();
  }

  const std::string root_;
  const DirArchiveLimits limits_;
  uint64_t entries_ = 0;
  uint64_t total_bytes_ = 0;
  std::set<std::string> dirs_;
  std::set<std::string> files_;
};

}  // namespace

Status WriteDirectoryTar(const std::string& dir, const std::string& out_path) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::NotFound(dir + " does not exist");
    return Errno("stat " + dir);
  }
  if (!S_ISDIR(st.st_mode)) return Status::InvalidArgument(dir + " is not a directory");
  UniqueFd out(::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (out.get() < 0) return Errno("create " + out_path);
  std::string root = dir;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  TreeWriter writer(root, out.get(), out_path);
  Status st_write = writer.WriteChildren("");
  if (st_write.ok()) st_write = WriteAll(out.get(), std::string(2 * kBlock, '\0'), out_path);
  if (st_write.ok() && ::fsync(out.get()) != 0) st_write = Errno("fsync " + out_path);
  if (!st_write.ok()) {
    out.Reset();
    ::unlink(out_path.c_str());
  }
  return st_write;
}

Status UnpackDirectoryTar(const std::string& tar_path, const std::string& dest_dir, const DirArchiveLimits& limits) {
  UniqueFd in(::open(tar_path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (in.get() < 0 || ::fstat(in.get(), &st) != 0) return Errno("open " + tar_path);
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument(tar_path + " is not a regular file");
  std::string tmpl = dest_dir + ".tmp-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) return Errno("cannot create a directory next to " + dest_dir);
  const std::string tmp = tmpl;
  LayerTarReader reader(in.get(), 0, static_cast<uint64_t>(st.st_size), "directory archive");
  TreeUnpacker unpacker(tmp, limits);
  Status unpacked = unpacker.Apply(reader);
  if (unpacked.ok() && ::chmod(tmp.c_str(), 0555) != 0) unpacked = Errno("chmod " + tmp);
  if (unpacked.ok() && ::rename(tmp.c_str(), dest_dir.c_str()) != 0) {
    const int err = errno;
    (void)RemoveUnpackedTree(tmp);
    if (err == EEXIST || err == ENOTEMPTY) return Status::AlreadyExists(dest_dir + " was unpacked meanwhile");
    return Status::Internal("cannot move the unpacked directory to " + dest_dir + ": " + std::strerror(err));
  }
  if (!unpacked.ok()) {
    (void)RemoveUnpackedTree(tmp);
    return unpacked.WithContext("unpacking " + tar_path);
  }
  return Status::Ok();
}

}  // namespace idlegrid::image
