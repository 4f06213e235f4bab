#pragma once
// Pure conversion of podman's default seccomp profile (the docker/containers
// format of /usr/share/containers/seccomp.json: names, action, args,
// includes/excludes by capability and architecture, archMap) into the OCI
// runtime-spec `linux.seccomp` form, for a process that holds NO capabilities
// (our containers drop them all). The result is what podman itself hands runc
// for `--cap-drop all`, so RuncRuntime filters the same syscalls.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace idlegrid::runtime {

// Where Debian's golang-github-containers-common installs the profile podman uses.
inline constexpr char kPodmanSeccompProfilePath[] = "/usr/share/containers/seccomp.json";

struct SeccompArg {
  uint32_t index = 0;
  uint64_t value = 0;
  uint64_t value_two = 0;
  std::string op;  // "SCMP_CMP_EQ", ...
};

struct SeccompRule {
  std::vector<std::string> names;
  std::string action;                 // "SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", ...
  std::optional<uint32_t> errno_ret;  // only when the profile gives one
  std::vector<SeccompArg> args;
};

struct SeccompProfile {
  std::string default_action;
  std::optional<uint32_t> default_errno_ret;
  std::vector<std::string> architectures;  // host arch first, then its sub-architectures
  std::vector<SeccompRule> syscalls;       // in the profile's order
};

struct KernelVersion {
  int major = 0;
  int minor = 0;
};

// Converts `profile_json` for a process with no capabilities on `go_arch`
// (GOARCH spelling: "amd64", "arm64", ... as the profile's includes.arches
// use) running kernel `kernel`. A rule is kept when: its includes.caps is
// empty (no capability can be held), its includes.arches is empty or names
// `go_arch`, its excludes.arches does not name `go_arch`, and its
// includes.minKernel (if any) is <= `kernel`. excludes.caps never removes a
// rule (no capability is held). `architectures` comes from the archMap entry
// for the host (or the legacy top-level "architectures" list).
// InvalidArgument (naming the rule) for malformed JSON, a missing
// defaultAction, an action that is not SCMP_ACT_*, an argument value the
// JSON parser cannot hold exactly (above 2^53), or an unknown `go_arch`.
Result<SeccompProfile> ConvertSeccompProfile(std::string_view profile_json, std::string_view go_arch,
                                             KernelVersion kernel);

// The GOARCH name of the architecture this program was compiled for, or "".
std::string HostGoArch();
// "SCMP_ARCH_X86_64" for "amd64"; "" when unknown.
std::string ScmpArchForGoArch(std::string_view go_arch);
// Pure: "6.1.0-18-amd64" -> {6, 1}; nullopt when it does not start with N.N.
std::optional<KernelVersion> ParseKernelRelease(std::string_view release);

}  // namespace idlegrid::runtime
