#pragma once
// What both drivers add to every job's container beyond its own limits:
// idlegrid's seccomp profile for the job's class (seccomp_hardening.h) and
// the non-root job user, mapped to a subordinate id of the agent's user.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "runtime/oci_config.h"

namespace idlegrid::runtime {

struct JobProfile {
  std::string json;    // docker/containers format, as podman reads it
  std::string digest;  // SeccompDigest(json)
};

// Job class ("" and each known class) -> its hardened profile, from `base`.
// Pure.
Result<std::map<std::string, JobProfile>> BuildJobProfiles(std::string_view base);

// The ids a job runs as: kJobUid:kJobGid when `uid_maps` and `gid_maps`
// (container -> host) map them, which they do when the agent's user has
// subordinate ids; nullopt otherwise (a root agent, or a user without
// /etc/subuid ranges: the job then runs as the agent's own uid). Pure.
std::optional<std::pair<uint32_t, uint32_t>> JobUserFor(const std::vector<IdMapping>& uid_maps,
                                                        const std::vector<IdMapping>& gid_maps);

// The host uid container id `id` maps to, or nullopt. Pure.
std::optional<uint32_t> HostIdOf(const std::vector<IdMapping>& maps, uint32_t id);

// "1000:1000 (host uid 100999)", or "agent uid 1005 (no subordinate ids)".
std::string DescribeJobUser(const std::optional<std::pair<uint32_t, uint32_t>>& user,
                            const std::vector<IdMapping>& uid_maps);

// First line of `<binary> --version`; "" when it cannot be run.
std::string ToolVersion(const std::string& binary);

}  // namespace idlegrid::runtime
