#include "runtime/admission.h"

#include <algorithm>

namespace idlegrid::runtime {
namespace {

// Why cgroups are out of reach, in the words an operator would search for.
std::string CgroupNote(const v1::Enforcement& e, const std::string& controller) {
  const std::string version = e.cgroup_version().empty() ? "unknown" : e.cgroup_version();
  if (version == "v2") return "cgroup v2 without " + controller + " delegation to the agent's user";
  return "cgroup " + version + " without delegation; only rlimits are enforceable";
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "none" : out;
}

}  // namespace

Status CheckAdmission(const v1::Resources& resources, const std::string& runtime, const v1::Enforcement& enforcement,
                      const std::vector<std::string>& available_runtimes) {
  if (std::find(available_runtimes.begin(), available_runtimes.end(), runtime) == available_runtimes.end()) {
    return Status::FailedPrecondition("host does not offer runtime \"" + runtime +
                                      "\" (available: " + Join(available_runtimes) + "); choose one of those");
  }
  if (enforcement.memory().empty()) {
    return Status::FailedPrecondition("host cannot cap memory (neither cgroups nor RLIMIT_DATA are usable)");
  }
  if (enforcement.pids().empty()) {
    return Status::FailedPrecondition("host cannot cap processes (neither cgroups nor RLIMIT_NPROC are usable)");
  }
  if (resources.disk_bytes() > 0 && enforcement.disk().empty()) {
    return Status::FailedPrecondition("host cannot cap file sizes (RLIMIT_FSIZE unusable) and the job sets disk");
  }
  if (resources.strict_cpu() && enforcement.cpu().empty()) {
    return Status::FailedPrecondition("host cannot cap CPU (" + CgroupNote(enforcement, "cpu") +
                                      ") and the job sets strictCpu; unset strictCpu to accept an uncapped CPU share");
  }
  if (runtime == "runsc" && enforcement.memory() != "cgroup") {
    // Measured: under runsc a job allocated 1 GiB despite RLIMIT_DATA=128 MiB.
    return Status::FailedPrecondition("runtime runsc cannot cap memory on this host (gVisor ignores RLIMIT_DATA and " +
                                      CgroupNote(enforcement, "memory") + "); use runtime runc");
  }
  return Status::Ok();
}

std::string RunscUnavailable(const v1::Enforcement& enforcement, const std::vector<std::string>& available) {
  if (std::find(available.begin(), available.end(), "runsc") == available.end()) {
    return "runsc (gVisor) is not installed (apt-get install runsc)";
  }
  if (enforcement.memory() != "cgroup") {
    return "memory is capped by " + (enforcement.memory().empty() ? std::string("nothing") : enforcement.memory()) +
           ", not a cgroup (cgroup " + enforcement.cgroup_version() +
           "), and gVisor ignores RLIMIT_DATA; on cgroup v2 delegate the memory controller to the agent's user "
           "(systemd user delegation, docs/provider.md)";
  }
  return "";
}

namespace {

// What every runc job gets (podman_args.h, seccomp_hardening.h), plus the
// host's NVIDIA device nodes and driver libraries that CDI adds.
constexpr char kHardenedRunc[] = "under runc with idlegrid's hardened sandbox and the GPUs' CDI devices";

RuntimeChoice ChooseGpuRuntime(const std::string& asked, bool untrusted_tenant, bool gvisor_for_tenants,
                               const v1::Enforcement& enforcement) {
  const bool gvisor_wanted = asked == "runsc" || (asked == "runc" && untrusted_tenant && gvisor_for_tenants);
  const std::string& no_gvisor = enforcement.runsc_unavailable();
  const std::string& no_nvproxy = enforcement.runsc_gpu_unavailable();
  const std::string whose = untrusted_tenant ? "a tenant's GPU job" : "a GPU job";
  if (gvisor_wanted && no_gvisor.empty() && no_nvproxy.empty()) {
    return {"runsc", true, kGpuIsolationNvproxy, whose + " runs under gVisor (runsc --nvproxy)"};
  }
  if (asked == "runsc" && !(no_gvisor.empty() && no_nvproxy.empty())) {
    // The requester chose gVisor; a weaker sandbox is not ours to pick.
    return {"", false, "",
            whose + " asks for runsc (gVisor), which cannot pass this host's GPUs in: " +
                (no_gvisor.empty() ? no_nvproxy : no_gvisor) + "; ask for runtime runc to use this host",
            true};
  }
  RuntimeChoice runc{"runc", false, kGpuIsolationRunc, whose + " runs " + kHardenedRunc};
  if (untrusted_tenant && !gvisor_for_tenants && asked != "runsc") {
    runc.why += ": this agent runs tenants' jobs under runc";
  } else if (gvisor_wanted) {
    runc.why += ", not gVisor: " + (no_gvisor.empty() ? no_nvproxy : no_gvisor);
  }
  return runc;
}

}  // namespace

RuntimeChoice ChooseRuntime(const std::string& asked, bool untrusted_tenant, bool gvisor_for_tenants, bool passes_gpus,
                            const v1::Enforcement& enforcement) {
  const std::string runtime = asked.empty() ? "runc" : asked;
  if (passes_gpus) return ChooseGpuRuntime(runtime, untrusted_tenant, gvisor_for_tenants, enforcement);
  if (runtime != "runc" || !untrusted_tenant) return {runtime, false, "", ""};
  if (!gvisor_for_tenants) {
    return {runtime, false, "", "a tenant's job runs under runc: this agent runs tenants' jobs under runc"};
  }
  if (!enforcement.runsc_unavailable().empty()) {
    return {runtime, false, "", "a tenant's job runs under runc, not gVisor: " + enforcement.runsc_unavailable()};
  }
  return {"runsc", false, "", "a tenant's job runs under gVisor (runsc)"};
}

}  // namespace idlegrid::runtime
