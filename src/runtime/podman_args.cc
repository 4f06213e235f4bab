#include "runtime/podman_args.h"

#include "common/json_writer.h"

#include <algorithm>
#include <cstdio>

namespace idlegrid::runtime {
namespace {

bool IsHexLower(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }
bool IsAlnum(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

bool HasNul(const std::string& s) { return s.find('\0') != std::string::npos; }

// podman's own rule for names: [a-zA-Z0-9][a-zA-Z0-9_.-]*. It also keeps a name
// from being read as a flag.
bool IsValidContainerName(const std::string& name) {
  if (name.empty() || name.size() > 253 || !IsAlnum(name[0])) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return IsAlnum(c) || c == '_' || c == '.' || c == '-'; });
}

bool IsValidEnvName(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return IsAlnum(c) || c == '_'; });
}

Status CheckMountPath(const std::string& path, const std::string& field) {
  if (path.empty() || path[0] != '/')
    return Status::InvalidArgument(field + " must be an absolute path, got \"" + path + "\"");
  if (path.find_first_of(":,\n") != std::string::npos || HasNul(path)) {
    return Status::InvalidArgument(field + " \"" + path +
                                   "\" contains ':', ',' or a control character, which podman -v cannot express");
  }
  return Status::Ok();
}

std::string Ulimit(const char* name, uint64_t value) {
  std::string v = std::to_string(value);
  return std::string(name) + "=" + v + ":" + v;
}

// Shortest decimal that round-trips well enough for podman's --cpus (which
// keeps nanocpus, i.e. 9 digits).
std::string FormatCpus(double cpus) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", cpus);
  std::string s = buf;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s == "0" ? "0.001" : s;  // a tiny request must not become 0, which podman reads as "no cap"
}

// podman's "--tmpfs DEST:OPTIONS": writable by every user (the job runs as
// one of its own), sized.
std::string TmpfsFlag(const std::string& destination, uint64_t bytes) {
  return destination + ":rw,size=" + TmpfsSize(bytes) + ",mode=1777";
}

}  // namespace

uint64_t ShmBytes(const v1::Resources& resources) {
  return resources.shm_bytes() > 0 ? resources.shm_bytes() : kUnsizedTmpfsBytes;
}

uint64_t TmpBytes(const v1::Resources& resources) {
  return resources.tmp_bytes() > 0 ? resources.tmp_bytes() : kUnsizedTmpfsBytes;
}

std::string TmpfsSize(uint64_t bytes) { return std::to_string(bytes / 1024 + (bytes % 1024 != 0)) + "k"; }

std::string EntrypointJson(const std::vector<std::string>& command) {
  std::string out = "[";
  for (size_t i = 0; i < command.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendJsonString(command[i], &out);
  }
  out.push_back(']');
  return out;
}

Status ValidateContainerName(const std::string& name) {
  if (IsValidContainerName(name)) return Status::Ok();
  return Status::InvalidArgument("container name \"" + name + "\" must match [a-zA-Z0-9][a-zA-Z0-9_.-]*");
}

Status ValidateImageId(const std::string& image_id) {
  if (image_id.size() == 64 && std::all_of(image_id.begin(), image_id.end(), IsHexLower)) return Status::Ok();
  return Status::InvalidArgument("image id \"" + image_id + "\" must be 64 lowercase hex digits");
}

Status ValidateRunSpec(const RunSpec& spec) {
  IG_RETURN_IF_ERROR(ValidateContainerName(spec.container_name));
  IG_RETURN_IF_ERROR(ValidateImageId(spec.image_id));
  if (spec.runtime != "runc" && spec.runtime != "runsc") {
    return Status::InvalidArgument("runtime \"" + spec.runtime + "\" must be runc or runsc");
  }
  if (spec.nvproxy && spec.runtime != "runsc") {
    return Status::InvalidArgument("nvproxy is gVisor's: it needs runtime runsc, not " + spec.runtime);
  }
  if (spec.runtime == "runsc" && !spec.gpu_uuids.empty() && !spec.nvproxy) {
    return Status::InvalidArgument("runsc cannot pass a GPU in without nvproxy; run GPU jobs under runc");
  }
  if (!spec.job_class.empty() && spec.job_class != "io-uring") {
    return Status::InvalidArgument("job class \"" + spec.job_class + "\" must be empty or io-uring");
  }
  for (const Mount& m : spec.mounts) {
    IG_RETURN_IF_ERROR(CheckMountPath(m.host_path, "mount host path"));
    IG_RETURN_IF_ERROR(CheckMountPath(m.container_path, "mount container path"));
  }
  for (const std::string& uuid : spec.gpu_uuids) {
    bool ok = !uuid.empty() && uuid.size() <= 96 && std::all_of(uuid.begin(), uuid.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    });
    if (!ok)
      return Status::InvalidArgument("GPU uuid \"" + uuid +
                                     "\" is not a device identifier: 1-96 characters of A-Z a-z 0-9 . _ - "
                                     "(as `nvidia-smi -L` prints it)");
  }
  for (const auto& [name, value] : spec.env) {
    if (!IsValidEnvName(name)) {
      return Status::InvalidArgument("environment variable name \"" + name + "\" must match [A-Za-z_][A-Za-z0-9_]*");
    }
    if (HasNul(value)) return Status::InvalidArgument("environment variable " + name + " contains a NUL byte");
  }
  for (const auto* list : {&spec.command, &spec.args}) {
    for (const std::string& s : *list) {
      if (HasNul(s)) return Status::InvalidArgument("command and args must not contain NUL bytes");
    }
  }
  return Status::Ok();
}

namespace {

// The flags every container gets: no network, no capabilities, a read-only
// root with sized tmpfs mounts.
std::vector<std::string> BaseRunArgs(const RunSpec& spec) {
  const v1::Resources& r = spec.resources;
  // clang-format off
  return {
      "run", "--rm",
      "--name", spec.container_name,
      "--runtime", spec.runtime,
      "--pull", "never",
      "--label", kContainerLabel,
      "--network", "none",
      "--read-only",
      "--cap-drop", "all",
      "--security-opt", "no-new-privileges",
      "--ulimit", Ulimit("nofile", kNofileLimit),
      // podman's --read-only gives /var/tmp an unsized tmpfs (half the
      // host's memory, uncounted under RLIMIT_DATA): sized like /tmp instead.
      "--tmpfs", TmpfsFlag("/tmp", TmpBytes(r)),
      "--tmpfs", TmpfsFlag("/var/tmp", TmpBytes(r)),
      "--shm-size", TmpfsSize(ShmBytes(r)),
  };
  // clang-format on
}

void AppendSandboxArgs(const PodmanSandbox& sandbox, std::vector<std::string>* a) {
  if (!sandbox.pidfile.empty()) a->insert(a->end(), {"--pidfile", sandbox.pidfile});
  if (!sandbox.seccomp_profile_path.empty()) {
    a->insert(a->end(), {"--security-opt", "seccomp=" + sandbox.seccomp_profile_path});
  }
  if (!sandbox.user.empty()) a->insert(a->end(), {"--user", sandbox.user});
}

// Flags for gVisor (runtime runsc).
void AppendRunscArgs(const RunSpec& spec, const v1::Enforcement& enforcement, std::vector<std::string>* a) {
  // gVisor sets up its own network stack unless told not to, and that fails
  // in podman's empty network namespace.
  a->insert(a->end(), {"--runtime-flag", "network=none"});
  // Without a cgroup it may write to, runsc refuses to start (rootless on
  // cgroup v1). Only then: with cgroups ignored nothing caps its memory, and
  // CheckAdmission refuses runsc on such hosts.
  if (enforcement.memory() != "cgroup") a->insert(a->end(), {"--runtime-flag", "ignore-cgroups"});
  // podman prefixes "--": runsc --nvproxy, its proxy for the NVIDIA
  // devices the CDI spec adds (gVisor 2023 on; not run here, see
  // docs/containment.md, GPU jobs).
  if (spec.nvproxy) a->insert(a->end(), {"--runtime-flag", "nvproxy"});
}

// The memory, pids, CPU and disk caps, each by the mechanism `enforcement`
// names for it.
void AppendResourceLimits(const RunSpec& spec, const v1::Enforcement& enforcement, std::vector<std::string>* a) {
  const v1::Resources& r = spec.resources;
  const bool runsc = spec.runtime == "runsc";
  if (r.memory_bytes() > 0) {
    if (enforcement.memory() == "cgroup") {
      const std::string bytes = std::to_string(std::max(r.memory_bytes(), kMinCgroupMemoryBytes));
      a->insert(a->end(), {"--memory", bytes, "--memory-swap", bytes});
    } else if (enforcement.memory() == "rlimit") {
      a->insert(a->end(), {"--ulimit", Ulimit("data", std::max(r.memory_bytes(), kMinDataRlimitBytes))});
    }
  }

  if (r.pids() > 0 && !enforcement.pids().empty()) {
    // The cgroup cap would also count runsc's own sentry and gofer threads, so
    // gVisor gets only the rlimit, which it enforces over sandbox tasks alone.
    if (enforcement.pids() == "cgroup" && !runsc) a->insert(a->end(), {"--pids-limit", std::to_string(r.pids())});
    // Set even when cgroups cap pids: podman's default nproc for root exceeds
    // the hard limit when the agent lacks CAP_SYS_RESOURCE, and runc then fails.
    // On the host, RLIMIT_NPROC counts every task of the uid, agent included.
    const uint64_t nproc = runsc ? r.pids() : uint64_t{r.pids()} + spec.host_user_processes;
    a->insert(a->end(), {"--ulimit", Ulimit("nproc", nproc)});
  }

  if (r.cpu() > 0 && enforcement.cpu() == "cgroup") a->insert(a->end(), {"--cpus", FormatCpus(r.cpu())});

  if (r.disk_bytes() > 0 && enforcement.disk() == "rlimit") {
    a->insert(a->end(), {"--ulimit", Ulimit("fsize", r.disk_bytes())});
  }
}

// Mounts, GPUs, environment and entrypoint.
void AppendJobArgs(const RunSpec& spec, std::vector<std::string>* a) {
  for (const Mount& m : spec.mounts) {
    a->insert(a->end(), {"-v", m.host_path + ":" + m.container_path + (m.read_only ? ":ro" : ":rw")});
  }
  for (const std::string& uuid : spec.gpu_uuids) a->insert(a->end(), {"--device", "nvidia.com/gpu=" + uuid});
  for (const auto& [name, value] : spec.env) a->insert(a->end(), {"-e", name + "=" + value});
  if (!spec.command.empty()) a->insert(a->end(), {"--entrypoint", EntrypointJson(spec.command)});
}

}  // namespace

std::vector<std::string> BuildPodmanRunArgs(const RunSpec& spec, const v1::Enforcement& enforcement,
                                            const PodmanSandbox& sandbox) {
  std::vector<std::string> a = BaseRunArgs(spec);
  AppendSandboxArgs(sandbox, &a);
  if (spec.runtime == "runsc") AppendRunscArgs(spec, enforcement, &a);
  AppendResourceLimits(spec, enforcement, &a);
  AppendJobArgs(spec, &a);
  // podman stops parsing flags at the image, so args that look like flags
  // reach the container untouched.
  a.push_back(spec.image_id);
  a.insert(a.end(), spec.args.begin(), spec.args.end());
  return a;
}

}  // namespace idlegrid::runtime
