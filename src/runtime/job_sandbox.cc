#include "runtime/job_sandbox.h"

#include <unistd.h>

#include "runtime/podman_args.h"
#include "runtime/seccomp_hardening.h"
#include "runtime/subprocess.h"

namespace idlegrid::runtime {

Result<std::map<std::string, JobProfile>> BuildJobProfiles(std::string_view base) {
  std::map<std::string, JobProfile> out;
  for (const char* job_class : {"", kJobClassIoUring}) {
    IG_ASSIGN_OR_RETURN(std::string json, HardenSeccompProfile(base, job_class));
    out[job_class] = JobProfile{json, SeccompDigest(json)};
  }
  return out;
}

std::optional<uint32_t> HostIdOf(const std::vector<IdMapping>& maps, uint32_t id) {
  for (const IdMapping& m : maps) {
    if (id >= m.container_id && id - m.container_id < m.size) return m.host_id + (id - m.container_id);
  }
  return std::nullopt;
}

std::optional<std::pair<uint32_t, uint32_t>> JobUserFor(const std::vector<IdMapping>& uid_maps,
                                                        const std::vector<IdMapping>& gid_maps) {
  const std::optional<uint32_t> uid = HostIdOf(uid_maps, kJobUid);
  const std::optional<uint32_t> gid = HostIdOf(gid_maps, kJobGid);
  const std::optional<uint32_t> agent = HostIdOf(uid_maps, 0);
  // Mapped, and not onto the agent itself (a root agent maps 0 only).
  if (!uid || !gid || (agent && *uid == *agent)) return std::nullopt;
  return std::pair(kJobUid, kJobGid);
}

std::string DescribeJobUser(const std::optional<std::pair<uint32_t, uint32_t>>& user,
                            const std::vector<IdMapping>& uid_maps) {
  if (!user) {
    const std::optional<uint32_t> agent = HostIdOf(uid_maps, 0);
    return "0:0 (the agent's uid " + std::to_string(agent.value_or(::geteuid())) + ": no subordinate ids)";
  }
  const std::optional<uint32_t> host = HostIdOf(uid_maps, user->first);
  return std::to_string(user->first) + ":" + std::to_string(user->second) + " (host uid " +
         std::to_string(host.value_or(0)) + ")";
}

std::string ToolVersion(const std::string& binary) {
  Result<CommandOutput> out = RunCommand({binary, "--version"}, std::chrono::seconds(10));
  if (!out.ok() || out->exit_code != 0) return "";
  const std::string& text = out->stdout_text;
  return text.substr(0, text.find('\n'));
}

}  // namespace idlegrid::runtime
