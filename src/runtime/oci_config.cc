#include "runtime/oci_config.h"

#include "common/json_writer.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace idlegrid::runtime {
namespace {

// podman's containers.conf default PATH and TERM.
constexpr char kDefaultPath[] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
constexpr char kDefaultTerm[] = "TERM=xterm";
constexpr uint64_t kCpuPeriodMicros = 100000;
// The kernel refuses a CFS quota below 1 ms.
constexpr int64_t kMinCpuQuotaMicros = 1000;

// podman's (and runc's) defaults for `--security-opt` unset.
const char* const kMaskedPaths[] = {"/proc/acpi",       "/proc/kcore",       "/proc/keys",        "/proc/latency_stats",
                                    "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
                                    "/sys/firmware",    "/sys/fs/selinux",   "/sys/dev/block"};
const char* const kReadonlyPaths[] = {"/proc/asound", "/proc/bus", "/proc/fs",
                                      "/proc/irq",    "/proc/sys", "/proc/sysrq-trigger"};

bool Mapped(const std::vector<IdMapping>& mappings, uint32_t id) {
  return std::any_of(mappings.begin(), mappings.end(),
                     [id](const IdMapping& m) { return id >= m.container_id && id - m.container_id < m.size; });
}

std::optional<uint32_t> ParseId(std::string_view text) {
  if (text.empty() || text.size() > 10) return std::nullopt;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v <= UINT32_MAX ? std::optional(static_cast<uint32_t>(v)) : std::nullopt;
}

// The image's User as ids: root by any spelling, or explicit "UID:GID"
// numbers. Anything else needs the image's /etc/passwd, which podman reads
// and we do not.
std::optional<std::pair<uint32_t, uint32_t>> ImageUserIds(const std::string& user) {
  static const char* const kRoot[] = {"", "0", "root", "0:0", "root:root", "root:0", "0:root"};
  if (std::find(std::begin(kRoot), std::end(kRoot), user) != std::end(kRoot)) return std::pair(0u, 0u);
  const size_t colon = user.find(':');
  if (colon == std::string::npos) return std::nullopt;
  std::optional<uint32_t> uid = ParseId(std::string_view(user).substr(0, colon));
  std::optional<uint32_t> gid = ParseId(std::string_view(user).substr(colon + 1));
  if (!uid || !gid) return std::nullopt;
  return std::pair(*uid, *gid);
}

void Mount(JsonWriter& w, const std::string& destination, const std::string& type, const std::string& source,
           const std::vector<std::string>& options) {
  w.BeginObject().Key("destination").String(destination).Key("type").String(type).Key("source").String(source);
  w.Key("options").Strings(options).EndObject();
}

// Path components of a container path: "/a/b" has 2.
size_t Depth(const std::string& path) { return std::count(path.begin(), path.end(), '/'); }

// The mounts podman gives a --read-only container, in its order, except that
// /dev/shm is a tmpfs instead of a host directory, /tmp, /var/tmp and /dev/shm
// are sized as BuildPodmanRunArgs asks podman to, and devpts gets gid=5 (tty)
// only when that gid is mapped. The job's own mounts come last, parents
// before what they hold (as podman sorts them): the job's HOME may hold its
// output directory.
void Mounts(JsonWriter& w, const RunSpec& spec, const OciHostContext& host) {
  const std::vector<std::string> tmpfs_rw = {"rw", "rprivate", "nosuid", "nodev", "tmpcopyup"};
  std::vector<std::string> tmp_sized = {"rw", "size=" + TmpfsSize(TmpBytes(spec.resources)), "mode=1777"};
  tmp_sized.insert(tmp_sized.end(), {"rprivate", "nosuid", "nodev", "tmpcopyup"});
  w.Key("mounts").BeginArray();
  Mount(w, "/proc", "proc", "proc", {"nosuid", "noexec", "nodev"});
  Mount(w, "/dev", "tmpfs", "tmpfs", {"nosuid", "noexec", "strictatime", "mode=755", "size=65536k"});
  std::vector<std::string> devpts = {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"};
  if (Mapped(host.gid_mappings, 5)) devpts.push_back("gid=5");
  Mount(w, "/dev/pts", "devpts", "devpts", devpts);
  Mount(w, "/dev/mqueue", "mqueue", "mqueue", {"nosuid", "noexec", "nodev"});
  Mount(w, "/dev/shm", "tmpfs", "shm",
        {"nosuid", "noexec", "nodev", "mode=1777", "size=" + TmpfsSize(ShmBytes(spec.resources))});
  Mount(w, "/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro"});
  Mount(w, "/sys/fs/cgroup", "cgroup", "cgroup", {"rprivate", "nosuid", "noexec", "nodev", "relatime", "ro"});
  Mount(w, "/run", "tmpfs", "tmpfs", tmpfs_rw);
  Mount(w, "/var/tmp", "tmpfs", "tmpfs", tmp_sized);
  Mount(w, "/tmp", "tmpfs", "tmpfs", tmp_sized);
  const std::vector<std::string> etc_file = {"bind", "rprivate", "ro", "nosuid", "noexec", "nodev"};
  if (!host.hosts_file.empty()) Mount(w, "/etc/hosts", "bind", host.hosts_file, etc_file);
  if (!host.hostname_file.empty()) Mount(w, "/etc/hostname", "bind", host.hostname_file, etc_file);
  std::vector<const runtime::Mount*> binds;
  for (const runtime::Mount& m : spec.mounts) binds.push_back(&m);
  std::stable_sort(binds.begin(), binds.end(), [](const runtime::Mount* a, const runtime::Mount* b) {
    return Depth(a->container_path) < Depth(b->container_path);
  });
  for (const runtime::Mount* m : binds) {
    Mount(w, m->container_path, "bind", m->host_path,
          {"rbind", "rprivate", m->read_only ? "ro" : "rw", "nosuid", "nodev"});
  }
  w.EndArray();
}

void Rlimit(JsonWriter& w, const char* type, uint64_t value) {
  w.BeginObject().Key("type").String(type).Key("hard").Number(value).Key("soft").Number(value).EndObject();
}

void Rlimits(JsonWriter& w, const RunSpec& spec, const v1::Enforcement& enforcement) {
  const v1::Resources& r = spec.resources;
  w.Key("rlimits").BeginArray();
  Rlimit(w, "RLIMIT_NOFILE", kNofileLimit);
  if (r.memory_bytes() > 0 && enforcement.memory() == "rlimit") {
    Rlimit(w, "RLIMIT_DATA", std::max(r.memory_bytes(), kMinDataRlimitBytes));
  }
  if (r.pids() > 0 && !enforcement.pids().empty()) {
    Rlimit(w, "RLIMIT_NPROC", uint64_t{r.pids()} + spec.host_user_processes);
  }
  if (r.disk_bytes() > 0 && enforcement.disk() == "rlimit") Rlimit(w, "RLIMIT_FSIZE", r.disk_bytes());
  w.EndArray();
}

bool UsesCgroups(const RunSpec& spec, const v1::Enforcement& e) {
  const v1::Resources& r = spec.resources;
  return (r.memory_bytes() > 0 && e.memory() == "cgroup") || (r.pids() > 0 && e.pids() == "cgroup") ||
         (r.cpu() > 0 && e.cpu() == "cgroup");
}

void Resources(JsonWriter& w, const RunSpec& spec, const v1::Enforcement& e) {
  const v1::Resources& r = spec.resources;
  w.Key("resources").BeginObject();
  w.Key("devices").BeginArray().BeginObject().Key("allow").Bool(false).Key("access").String("rwm").EndObject();
  w.EndArray();
  if (r.memory_bytes() > 0 && e.memory() == "cgroup") {
    const uint64_t bytes = std::max(r.memory_bytes(), kMinCgroupMemoryBytes);
    w.Key("memory").BeginObject().Key("limit").Number(bytes).Key("swap").Number(bytes).EndObject();
  }
  if (r.pids() > 0 && e.pids() == "cgroup") w.Key("pids").BeginObject().Key("limit").Number(r.pids()).EndObject();
  if (r.cpu() > 0 && e.cpu() == "cgroup") {
    const int64_t quota = std::max<int64_t>(kMinCpuQuotaMicros, std::llround(r.cpu() * kCpuPeriodMicros));
    w.Key("cpu").BeginObject().Key("quota").SignedNumber(quota).Key("period").Number(kCpuPeriodMicros).EndObject();
  }
  w.EndObject();
}

void Seccomp(JsonWriter& w, const SeccompProfile& p) {
  w.Key("seccomp").BeginObject().Key("defaultAction").String(p.default_action);
  if (p.default_errno_ret) w.Key("defaultErrnoRet").Number(*p.default_errno_ret);
  w.Key("architectures").Strings(p.architectures);
  w.Key("syscalls").BeginArray();
  for (const SeccompRule& rule : p.syscalls) {
    w.BeginObject().Key("names").Strings(rule.names).Key("action").String(rule.action);
    if (rule.errno_ret) w.Key("errnoRet").Number(*rule.errno_ret);
    if (!rule.args.empty()) {
      w.Key("args").BeginArray();
      for (const SeccompArg& a : rule.args) {
        w.BeginObject().Key("index").Number(a.index).Key("value").Number(a.value);
        if (a.value_two != 0) w.Key("valueTwo").Number(a.value_two);
        w.Key("op").String(a.op).EndObject();
      }
      w.EndArray();
    }
    w.EndObject();
  }
  w.EndArray().EndObject();
}

void IdMappings(JsonWriter& w, const char* key, const std::vector<IdMapping>& mappings) {
  w.Key(key).BeginArray();
  for (const IdMapping& m : mappings) {
    w.BeginObject().Key("containerID").Number(m.container_id).Key("hostID").Number(m.host_id);
    w.Key("size").Number(m.size).EndObject();
  }
  w.EndArray();
}

}  // namespace

std::vector<SubordinateRange> ParseSubordinateIds(std::string_view text, const std::string& user, uint32_t id) {
  std::vector<SubordinateRange> out;
  const std::string id_text = std::to_string(id);
  while (!text.empty()) {
    const size_t nl = std::min(text.find('\n'), text.size());
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(std::min(nl + 1, text.size()));
    const size_t a = line.find(':');
    const size_t b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    const std::string_view owner = line.substr(0, a);
    if (owner != user && owner != id_text) continue;
    std::optional<uint32_t> start = ParseId(line.substr(a + 1, b - a - 1));
    std::optional<uint32_t> count = ParseId(line.substr(b + 1));
    if (start && count && *count > 0 && uint64_t{*start} + *count <= UINT32_MAX) out.push_back({*start, *count});
  }
  return out;
}

std::vector<IdMapping> NamespaceIdMappings(uint32_t host_id, const std::vector<SubordinateRange>& subordinate) {
  std::vector<IdMapping> out = {{0, host_id, 1}};
  uint64_t next = 1;
  for (const SubordinateRange& r : subordinate) {
    if (next + r.count > UINT32_MAX) break;
    out.push_back({static_cast<uint32_t>(next), r.start, r.count});
    next += r.count;
  }
  return out;
}

std::vector<std::string> ContainerArgv(const RunSpec& spec, const image::ImageConfig& image) {
  std::vector<std::string> argv = spec.command.empty() ? image.entrypoint : spec.command;
  // podman drops an entrypoint of [""], which images use to clear a base's.
  if (argv.size() == 1 && argv[0].empty()) argv.clear();
  const std::vector<std::string>& tail = !spec.args.empty() ? spec.args : spec.command.empty() ? image.cmd : spec.args;
  argv.insert(argv.end(), tail.begin(), tail.end());
  return argv;
}

std::vector<std::string> ContainerEnv(const RunSpec& spec, const image::ImageConfig& image,
                                      const std::string& hostname) {
  std::vector<std::string> env;
  auto set = [&env](const std::string& entry) {
    const std::string name = entry.substr(0, entry.find('='));
    auto same = [&name](const std::string& e) { return e.compare(0, name.size() + 1, name + "=") == 0; };
    auto it = std::find_if(env.begin(), env.end(), same);
    if (it != env.end()) {
      *it = entry;
    } else {
      env.push_back(entry);
    }
  };
  set(kDefaultPath);
  set(kDefaultTerm);
  for (const std::string& e : image.env) set(e);
  set("container=podman");
  set("HOSTNAME=" + hostname);
  for (const auto& [name, value] : spec.env) set(name + "=" + value);
  return env;
}

std::string ContainerHostname(const std::string& container_name) { return container_name.substr(0, 63); }

std::string ContainerHostsFile(const std::string& hostname) {
  return "127.0.0.1\tlocalhost localhost.localdomain localhost4 localhost4.localdomain4\n"
         "::1\tlocalhost localhost.localdomain localhost6 localhost6.localdomain6\n"
         "127.0.1.1\t" +
         hostname + "\n";
}

Result<std::string> BuildOciConfig(const RunSpec& spec, const v1::Enforcement& enforcement,
                                   const image::ImageConfig& image, const SeccompProfile& seccomp,
                                   const OciHostContext& host) {
  if (spec.runtime != "runc") {
    return Status::FailedPrecondition("the runc runtime cannot run a job that asks for runtime " + spec.runtime);
  }
  if (!spec.gpu_uuids.empty()) {
    return Status::FailedPrecondition("the runc runtime does not pass GPUs in (CDI is done by podman)");
  }
  if (!Mapped(host.uid_mappings, 0) || !Mapped(host.gid_mappings, 0)) {
    return Status::InvalidArgument("the user namespace must map container id 0");
  }
  std::optional<std::pair<uint32_t, uint32_t>> user = ImageUserIds(image.user);
  if (host.job_user) {
    const bool image_user_fits =
        user && user->first != 0 && Mapped(host.uid_mappings, user->first) && Mapped(host.gid_mappings, user->second);
    if (!image_user_fits) user = host.job_user;
  }
  if (!user || !Mapped(host.uid_mappings, user->first) || !Mapped(host.gid_mappings, user->second)) {
    return Status::FailedPrecondition(
        "the image runs as user \"" + image.user +
        "\"; the runc runtime runs root, or numeric UID:GID ids that the agent user's subordinate ranges map");
  }
  const std::vector<std::string> argv = ContainerArgv(spec, image);
  if (argv.empty())
    return Status::InvalidArgument("no command: the job sets none and the image has no entrypoint or cmd");
  const std::string hostname = ContainerHostname(spec.container_name);

  JsonWriter w;
  w.BeginObject().Key("ociVersion").String("1.0.2-dev");
  w.Key("process").BeginObject().Key("terminal").Bool(false);
  w.Key("user").BeginObject().Key("uid").Number(user->first).Key("gid").Number(user->second);
  w.Key("umask").Number(022).EndObject();
  w.Key("args").Strings(argv).Key("env").Strings(ContainerEnv(spec, image, hostname));
  w.Key("cwd").String(image.working_dir.empty() ? "/" : image.working_dir);
  // All sets empty: no capability in any set, as podman's --cap-drop all.
  w.Key("capabilities").BeginObject();
  for (const char* set : {"bounding", "effective", "inheritable", "permitted", "ambient"}) {
    w.Key(set).BeginArray().EndArray();
  }
  w.EndObject();
  Rlimits(w, spec, enforcement);
  w.Key("noNewPrivileges").Bool(true).EndObject();

  w.Key("root").BeginObject().Key("path").String(host.rootfs_path).Key("readonly").Bool(true).EndObject();
  w.Key("hostname").String(hostname);
  Mounts(w, spec, host);

  w.Key("linux").BeginObject();
  IdMappings(w, "uidMappings", host.uid_mappings);
  IdMappings(w, "gidMappings", host.gid_mappings);
  w.Key("sysctl").BeginObject().Key("net.ipv4.ping_group_range").String("0 0").EndObject();
  if (UsesCgroups(spec, enforcement)) {
    Resources(w, spec, enforcement);
    w.Key("cgroupsPath").String(host.cgroups_parent + "/" + spec.container_name);
  }
  w.Key("namespaces").BeginArray();
  for (const char* ns : {"pid", "network", "ipc", "uts", "mount", "user"}) {
    w.BeginObject().Key("type").String(ns).EndObject();
  }
  w.EndArray();
  Seccomp(w, seccomp);
  w.Key("maskedPaths").BeginArray();
  for (const char* p : kMaskedPaths) w.String(p);
  w.EndArray().Key("readonlyPaths").BeginArray();
  for (const char* p : kReadonlyPaths) w.String(p);
  w.EndArray().EndObject();  // linux
  w.EndObject();
  return w.Take();
}

}  // namespace idlegrid::runtime
