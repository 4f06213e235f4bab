#include "image/layer_applier.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "common/unique_fd.h"

namespace idlegrid::image {
namespace {

constexpr size_t kMaxEntries = 1 << 20;
constexpr char kWhiteoutPrefix[] = ".wh.";
constexpr char kOpaqueWhiteout[] = ".wh..wh..opq";

using Fd = UniqueFd;  // common/unique_fd.h

Status Errno(const std::string& what) { return Status::Internal(what + ": " + std::strerror(errno)); }

// Opens directory `name` in `dirfd` without following a symlink there.
// NotFound when absent; InvalidArgument when it is a symlink or not a directory.
Result<Fd> OpenDirAt(int dirfd, const std::string& name) {
  Fd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() >= 0) return fd;
  if (errno == ENOENT) return Status::NotFound("\"" + name + "\" does not exist");
  if (errno == ELOOP || errno == ENOTDIR) {
    return Status::InvalidArgument("\"" + name + "\" is a symlink or not a directory");
  }
  return Errno("open \"" + name + "\"");
}

Status RemoveAt(int dirfd, const std::string& name);

// Removes the entries of the directory `fd` for which `keep` is false.
Status ClearDir(int fd, const std::function<bool(const std::string&)>& keep) {
  int copy = ::dup(fd);
  if (copy < 0) return Errno("dup");
  DIR* dir = ::fdopendir(copy);
  if (dir == nullptr) {
    ::close(copy);
    return Errno("fdopendir");
  }
  std::vector<std::string> names;
  while (const dirent* d = ::readdir(dir)) {
    std::string n = d->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  ::closedir(dir);
  for (const std::string& n : names) {
    if (!keep || !keep(n)) IG_RETURN_IF_ERROR(RemoveAt(fd, n));
  }
  return Status::Ok();
}

// Removes `name` (recursively, never following symlinks); absent is fine.
// Directories are made writable first: an image may ship read-only ones.
Status RemoveAt(int dirfd, const std::string& name) {
  struct stat st {};
  if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return errno == ENOENT ? Status::Ok() : Errno("stat \"" + name + "\"");
  }
  if (S_ISDIR(st.st_mode)) {
    IG_ASSIGN_OR_RETURN(Fd sub, OpenDirAt(dirfd, name));
    if (::fchmod(sub.get(), 0700) != 0) return Errno("chmod \"" + name + "\"");
    IG_RETURN_IF_ERROR(ClearDir(sub.get(), nullptr));
    if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0) return Errno("rmdir \"" + name + "\"");
  } else if (::unlinkat(dirfd, name.c_str(), 0) != 0) {
    return Errno("unlink \"" + name + "\"");
  }
  return Status::Ok();
}

std::string Parent(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

std::string Leaf(const std::string& path) { return path.substr(path.rfind('/') + 1); }

}  // namespace

// Directory modes and times are set in Finish, deepest first, so a read-only
// directory never blocks a later entry.
class LayerApplier::Impl {
 public:
  explicit Impl(int root_fd) : root_fd_(root_fd) {}

  Status Apply(LayerTarReader& reader) {
    layer_paths_.clear();
    while (true) {
      IG_ASSIGN_OR_RETURN(std::optional<LayerEntry> entry, reader.Next());
      if (!entry) return Status::Ok();
      if (++entries_ > kMaxEntries) return Status::InvalidArgument("image has more than 2^20 entries");
      Status s = ApplyEntry(reader, *entry);
      if (!s.ok()) return s.WithContext("entry \"" + entry->path + "\"");
    }
  }

  Status Finish() {
    for (auto it = dir_modes_.rbegin(); it != dir_modes_.rend(); ++it) {
      Result<Fd> parent = OpenParent(it->first, /*create=*/false);
      if (!parent.ok()) continue;  // a later layer removed it, or replaced a parent with a file
      Result<Fd> dir = OpenDirAt(parent->get(), Leaf(it->first));
      if (!dir.ok()) continue;
      if (::fchmod(dir->get(), it->second.first & 01777) != 0) return Errno("chmod \"" + it->first + "\"");
      const timespec times[2] = {{it->second.second, 0}, {it->second.second, 0}};
      (void)::futimens(dir->get(), times);  // cosmetic; some filesystems refuse
    }
    return Status::Ok();
  }

 private:
  // The directory that holds `path`'s last component, walked one component at
  // a time from the root without following symlinks; missing parents are
  // created (0755) when `create`.
  Result<Fd> OpenParent(const std::string& path, bool create) {
    Fd dir(::dup(root_fd_));
    if (dir.get() < 0) return Errno("dup");
    const std::string parent = Parent(path);
    size_t start = 0;
    while (!parent.empty() && start <= parent.size()) {
      size_t end = std::min(parent.find('/', start), parent.size());
      const std::string part = parent.substr(start, end - start);
      Result<Fd> next = OpenDirAt(dir.get(), part);
      if (!next.ok() && next.status().code() == Code::kNotFound && create) {
        if (::mkdirat(dir.get(), part.c_str(), 0755) != 0 && errno != EEXIST) return Errno("mkdir " + part);
        next = OpenDirAt(dir.get(), part);
      }
      if (!next.ok()) return next.status().WithContext("path goes through \"" + parent.substr(0, end) + "\"");
      dir = std::move(*next);
      start = end + 1;
    }
    return dir;
  }

  Status ApplyEntry(const LayerTarReader& reader, const LayerEntry& e) {
    if (e.path.empty()) return Status::Ok();  // the layer root: our root keeps its own mode
    const std::string leaf = Leaf(e.path);
    if (leaf.rfind(kWhiteoutPrefix, 0) == 0) return Whiteout(e.path, leaf);
    if (e.type == LayerEntryType::kOther) return Status::Ok();  // no device nodes or FIFOs
    layer_paths_.insert(e.path);
    IG_ASSIGN_OR_RETURN(Fd parent, OpenParent(e.path, /*create=*/true));
    const int pfd = parent.get();
    struct stat st {};
    const bool exists = ::fstatat(pfd, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
    switch (e.type) {
      case LayerEntryType::kDirectory:
        if (!exists || !S_ISDIR(st.st_mode)) {
          IG_RETURN_IF_ERROR(RemoveAt(pfd, leaf));
          if (::mkdirat(pfd, leaf.c_str(), 0700) != 0) return Errno("mkdir");
        }
        dir_modes_[e.path] = {e.mode, e.mtime};
        return Status::Ok();
      case LayerEntryType::kSymlink:
        IG_RETURN_IF_ERROR(RemoveAt(pfd, leaf));
        if (::symlinkat(e.link_target.c_str(), pfd, leaf.c_str()) != 0) return Errno("symlink");
        return Status::Ok();
      case LayerEntryType::kHardLink:
        return HardLink(e, pfd, leaf);
      default:
        IG_RETURN_IF_ERROR(RemoveAt(pfd, leaf));
        return WriteFile(reader, e, pfd, leaf);
    }
  }

  Status WriteFile(const LayerTarReader& reader, const LayerEntry& e, int pfd, const std::string& leaf) {
    Fd file(::openat(pfd, leaf.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (file.get() < 0) return Errno("create");
    IG_RETURN_IF_ERROR(reader.ReadContent(e, [&](std::string_view chunk) {
      while (!chunk.empty()) {
        ssize_t n = ::write(file.get(), chunk.data(), chunk.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return Errno("write");
        chunk.remove_prefix(static_cast<size_t>(n));
      }
      return Status::Ok();
    }));
    // 01777: setuid and setgid bits are dropped; nothing in a job may gain ids.
    if (::fchmod(file.get(), e.mode & 01777) != 0) return Errno("chmod");
    const timespec times[2] = {{e.mtime, 0}, {e.mtime, 0}};
    (void)::futimens(file.get(), times);
    return Status::Ok();
  }

  Status HardLink(const LayerEntry& e, int pfd, const std::string& leaf) {
    if (e.link_target == e.path) return Status::Ok();
    Result<Fd> target_parent = OpenParent(e.link_target, /*create=*/false);
    if (!target_parent.ok()) return target_parent.status().WithContext("hard link target \"" + e.link_target + "\"");
    const std::string target_leaf = Leaf(e.link_target);
    struct stat st {};
    if (::fstatat(target_parent->get(), target_leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return Status::InvalidArgument("hard link target \"" + e.link_target + "\" is not in the image");
    }
    if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
      return Status::InvalidArgument("hard link target \"" + e.link_target + "\" is not a file");
    }
    IG_RETURN_IF_ERROR(RemoveAt(pfd, leaf));
    // Flags 0: a symlink target is linked itself, never followed.
    if (::linkat(target_parent->get(), target_leaf.c_str(), pfd, leaf.c_str(), 0) != 0) return Errno("link");
    return Status::Ok();
  }

  Status Whiteout(const std::string& path, const std::string& leaf) {
    Result<Fd> parent = OpenParent(path, /*create=*/false);
    if (!parent.ok()) {
      // Nothing below a missing directory to hide.
      return parent.status().code() == Code::kNotFound ? Status::Ok() : parent.status();
    }
    if (leaf == kOpaqueWhiteout) {
      // Opaque: hide what lower layers put in this directory, keep this layer's.
      const std::string dir = Parent(path);
      return ClearDir(parent->get(), [&](const std::string& name) {
        return layer_paths_.count(dir.empty() ? name : dir + "/" + name) > 0;
      });
    }
    const std::string hidden = leaf.substr(std::strlen(kWhiteoutPrefix));
    if (hidden.empty() || hidden == "." || hidden == "..") return Status::InvalidArgument("malformed whiteout");
    return RemoveAt(parent->get(), hidden);
  }

  const int root_fd_;
  std::map<std::string, std::pair<uint32_t, int64_t>> dir_modes_;  // path -> (mode, mtime)
  std::set<std::string> layer_paths_;                              // written by the current layer
  size_t entries_ = 0;
};

LayerApplier::LayerApplier(int root_fd) : impl_(std::make_unique<Impl>(root_fd)) {}
LayerApplier::~LayerApplier() = default;
Status LayerApplier::Apply(LayerTarReader& reader) { return impl_->Apply(reader); }
Status LayerApplier::Finish() { return impl_->Finish(); }

Status RemoveTreeAt(int dirfd, const std::string& name) { return RemoveAt(dirfd, name); }

}  // namespace idlegrid::image
