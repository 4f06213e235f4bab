#pragma once
// What RuncRuntime reads from and does to the host besides running runc:
// finding binaries, the user namespace maps for the agent's user, the kernel
// version, bundle files, runc's log, and leftovers of a crashed agent.
// RuncLogErrors is pure; the rest do I/O.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "runtime/oci_config.h"
#include "runtime/seccomp_profile.h"

namespace idlegrid::runtime {

// An absolute path for `binary` (itself when it holds a '/'), searched on
// $PATH and then in the sbin directories an unprivileged user's PATH often
// lacks; "" when not found or not executable.
std::string ResolveExecutable(const std::string& binary);

// The uid and gid maps for containers of this process's user: its own ids
// as 0, plus, when unprivileged and `use_subordinate_ids`, its /etc/subuid and
// /etc/subgid ranges as 1..N (only when both files grant some and newuidmap
// and newgidmap exist, which runc then runs). Root maps only itself.
std::pair<std::vector<IdMapping>, std::vector<IdMapping>> AgentUserNamespaceMaps(bool use_subordinate_ids);

// The running kernel's version; 0.0 when unknown.
KernelVersion HostKernel();

// Creates or truncates `path` (never through a symlink) with `content`. No
// fsync: a bundle does not outlive its Run.
Status WriteBundleFile(const std::string& path, const std::string& content);

// Makes /tmp, /var/tmp and /run in the unpacked image at `rootfs` directories
// of mode 01777 (creating them when missing), never through a link: runc
// gives a tmpfs mounted there the mode of the directory under it, and the
// job user (not root) must be able to write there, as under podman. A path
// that is a link or not a directory is left alone.
Status PrepareScratchMountPoints(const std::string& rootfs);

// Pure: the messages of the error and fatal records of a runc --log written
// with --log-format json, joined with "; "; "" when there are none.
std::string RuncLogErrors(std::string_view log_text);

// Removes what a crashed agent left under `bundles_dir`: "*.tmp-*"
// directories of interrupted unpacks, and container bundles whose container
// `runc --root state_dir list` no longer shows (the agent Kills the ones it
// shows, which removes their bundles). Best effort.
void RemoveRuncLeftovers(const std::string& runc, const std::string& state_dir, const std::string& bundles_dir);

}  // namespace idlegrid::runtime
