#pragma once
// idlegrid's seccomp profile: podman's default (containers-common's
// seccomp.json, built into the binary) minus what a batch job never needs.
// podman's default leaves namespaces, keyrings, mounts and ptrace to
// capabilities, which a user namespace hands back: inside a job,
// unshare(CLONE_NEWUSER) and keyctl succeeded, and a fresh user namespace is
// the usual first step of a kernel exploit. Here those syscalls fail whatever
// the job holds. Pure: JSON in the docker/containers format in and out, so
// podman gets it as a file (--security-opt seccomp=) and runc through
// ConvertSeccompProfile.
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace idlegrid::runtime {

// Job classes a provider may approve (agent --job-class / local policy) that
// widen the profile. "" (the default class) widens nothing.
inline constexpr char kJobClassIoUring[] = "io-uring";

// Syscalls no job may make: namespace creation and entry, keyrings, BPF and
// perf, userfaultfd, the mount family and pivot_root/chroot, ptrace and
// cross-process memory access, kexec, kernel modules, file handles, io_uring
// (unless the job class allows it), and host-wide controls (reboot, swap,
// syslog, acct, quotas, raw I/O ports). They fail with EPERM.
const std::vector<std::string>& DeniedSyscalls();

// Returns `base` (a containers seccomp.json) hardened: every denied syscall
// is removed from every allowing rule and answered EPERM; clone is allowed
// only without namespace flags (CLONE_NEWNS/UTS/IPC/USER/PID/NET/CGROUP), and
// clone3, whose flags a filter cannot read, answers ENOSYS so that libc falls
// back to clone. `job_class` kJobClassIoUring keeps io_uring_setup/enter/
// register allowed. InvalidArgument for malformed JSON or an unknown class.
Result<std::string> HardenSeccompProfile(std::string_view base, std::string_view job_class);

// The containers seccomp.json this binary was built with.
std::string_view BuiltInBaseSeccompProfile();

// "sha256:<hex>" of a profile's text, as provenance records name it.
std::string SeccompDigest(std::string_view profile_json);

}  // namespace idlegrid::runtime
