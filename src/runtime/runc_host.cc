#include "runtime/runc_host.h"

#include <fcntl.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include "common/fs.h"
#include "common/unique_fd.h"
#include "image/rootfs_unpack.h"
#include "runtime/subprocess.h"

namespace idlegrid::runtime {
namespace {

bool IsExecutable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// Names of the entries of `dir`; none when it cannot be read.
std::vector<std::string> EntriesOf(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> names;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  return names;
}

}  // namespace

std::string ResolveExecutable(const std::string& binary) {
  if (binary.find('/') != std::string::npos) return IsExecutable(binary) ? binary : "";
  const char* path_env = std::getenv("PATH");
  std::istringstream in(std::string(path_env ? path_env : "") +
                        ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  for (std::string dir; std::getline(in, dir, ':');) {
    if (!dir.empty() && IsExecutable(dir + "/" + binary)) return dir + "/" + binary;
  }
  return "";
}

std::pair<std::vector<IdMapping>, std::vector<IdMapping>> AgentUserNamespaceMaps(bool use_subordinate_ids) {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  std::vector<SubordinateRange> subuids, subgids;
  const struct passwd* pw = ::getpwuid(uid);
  if (use_subordinate_ids && uid != 0 && pw != nullptr && !ResolveExecutable("newuidmap").empty() &&
      !ResolveExecutable("newgidmap").empty()) {
    Result<std::string> subuid = ReadFile("/etc/subuid");
    Result<std::string> subgid = ReadFile("/etc/subgid");
    if (subuid.ok() && subgid.ok()) {
      subuids = ParseSubordinateIds(*subuid, pw->pw_name, uid);
      subgids = ParseSubordinateIds(*subgid, pw->pw_name, uid);
    }
    // Both or neither: a uid range without a gid range maps a half-made user.
    if (subuids.empty() || subgids.empty()) {
      subuids.clear();
      subgids.clear();
    }
  }
  return {NamespaceIdMappings(uid, subuids), NamespaceIdMappings(gid, subgids)};
}

KernelVersion HostKernel() {
  struct utsname uts {};
  if (::uname(&uts) != 0) return {};
  return ParseKernelRelease(uts.release).value_or(KernelVersion{});
}

namespace {

// Opens (creating if missing) directory `name` under `parent`, never
// following a link; -1 when that is not possible.
int OpenOrMakeDir(int parent, const char* name) {
  int fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && ::mkdirat(parent, name, 0755) == 0) {
    fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  }
  return fd;
}

}  // namespace

Status PrepareScratchMountPoints(const std::string& rootfs) {
  UniqueFd root(::open(rootfs.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (root.get() < 0) return Status::Internal("cannot open " + rootfs + ": " + std::strerror(errno));
  auto open_sticky = [](int fd, const std::string& path) {
    struct stat st;
    if (fd < 0 || ::fstat(fd, &st) != 0) return Status::Ok();  // a link or a file: left to runc
    if ((st.st_mode & 07777) != 01777 && ::fchmod(fd, 01777) != 0) {
      return Status::Internal("cannot chmod " + path + ": " + std::strerror(errno));
    }
    return Status::Ok();
  };
  for (const char* top : {"tmp", "run"}) {
    UniqueFd dir(OpenOrMakeDir(root.get(), top));
    IG_RETURN_IF_ERROR(open_sticky(dir.get(), rootfs + "/" + top));
  }
  UniqueFd var(OpenOrMakeDir(root.get(), "var"));
  if (var.get() >= 0) {
    UniqueFd tmp(OpenOrMakeDir(var.get(), "tmp"));
    IG_RETURN_IF_ERROR(open_sticky(tmp.get(), rootfs + "/var/tmp"));
  }
  return Status::Ok();
}

Status WriteBundleFile(const std::string& path, const std::string& content) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (fd.get() < 0) return Status::Internal("cannot create " + path + ": " + std::strerror(errno));
  for (std::string_view rest = content; !rest.empty();) {
    const ssize_t n = ::write(fd.get(), rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Internal("cannot write " + path + ": " + std::strerror(errno));
    rest.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

std::string RuncLogErrors(std::string_view log_text) {
  std::string errors;
  while (!log_text.empty()) {
    const size_t nl = std::min(log_text.find('\n'), log_text.size());
    google::protobuf::Struct record;
    if (google::protobuf::util::JsonStringToMessage(std::string(log_text.substr(0, nl)), &record).ok()) {
      const auto& f = record.fields();
      const auto level = f.find("level");
      const auto msg = f.find("msg");
      if (level != f.end() && (level->second.string_value() == "error" || level->second.string_value() == "fatal")) {
        errors +=
            (errors.empty() ? "" : "; ") + (msg == f.end() ? std::string("(no message)") : msg->second.string_value());
      }
    }
    log_text.remove_prefix(std::min(nl + 1, log_text.size()));
  }
  return errors;
}

// Best effort: what cannot be removed now is tried again at the next start,
// and never read (bundles are rewritten, interrupted unpacks never used).
void RemoveRuncLeftovers(const std::string& runc, const std::string& state_dir, const std::string& bundles_dir) {
  for (const std::string& name : EntriesOf(bundles_dir)) {
    if (name.find(".tmp-") != std::string::npos) (void)image::RemoveUnpackedTree(bundles_dir + "/" + name);
  }
  Result<CommandOutput> list = RunCommand({runc, "--root", state_dir, "list", "-q"}, std::chrono::seconds(60));
  if (!list.ok() || list->exit_code != 0) return;
  std::set<std::string> known;
  std::istringstream in(list->stdout_text);
  for (std::string line; std::getline(in, line);) known.insert(line);
  for (const std::string& name : EntriesOf(bundles_dir + "/containers")) {
    if (known.count(name) == 0) (void)RemoveTree(bundles_dir + "/containers/" + name);
  }
}

}  // namespace idlegrid::runtime
