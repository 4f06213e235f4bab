// Where gVisor runs (issue 12): tenants' jobs go under runsc where the host
// can cap their memory there, and the reason is said where it cannot. GPU
// jobs (issue 27): runsc only with nvproxy, which the installed runsc must
// list among its flags; otherwise runc with the CDI devices.
#include <gtest/gtest.h>

#include "runtime/admission.h"
#include "runtime/enforcement_probe.h"
#include "runsc_debian12_output.h"

namespace idlegrid::runtime {
namespace {

v1::Enforcement Host(const std::string& memory, const std::string& cgroup_version,
                     const std::vector<std::string>& runtimes) {
  v1::Enforcement e;
  e.set_memory(memory);
  e.set_cgroup_version(cgroup_version);
  e.set_runsc_unavailable(RunscUnavailable(e, runtimes));
  return e;
}

TEST(RunscUnavailableTest, SaysWhatTheHostLacks) {
  EXPECT_EQ(RunscUnavailable(Host("cgroup", "v2", {}), {"runc", "runsc"}), "");
  const std::string missing = RunscUnavailable(Host("cgroup", "v2", {}), {"runc"});
  EXPECT_NE(missing.find("not installed"), std::string::npos) << missing;
  const std::string rlimits = RunscUnavailable(Host("rlimit", "hybrid", {}), {"runc", "runsc"});
  EXPECT_NE(rlimits.find("memory is capped by rlimit, not a cgroup (cgroup hybrid)"), std::string::npos) << rlimits;
  EXPECT_NE(rlimits.find("delegate the memory controller"), std::string::npos) << rlimits;
}

TEST(ChooseRuntimeTest, TenantsGetGvisorWhereItCanBeEnforced) {
  const v1::Enforcement v2 = Host("cgroup", "v2", {"runc", "runsc"});
  const v1::Enforcement v1host = Host("rlimit", "v1", {"runc", "runsc"});

  EXPECT_EQ(ChooseRuntime("runc", true, true, false, v2).runtime, "runsc");
  EXPECT_EQ(ChooseRuntime("", true, true, false, v2).runtime, "runsc");
  // The operator's own jobs, and jobs that chose runsc, run as asked.
  EXPECT_EQ(ChooseRuntime("runc", false, true, false, v2).runtime, "runc");
  EXPECT_EQ(ChooseRuntime("runc", false, true, false, v2).why, "");
  EXPECT_EQ(ChooseRuntime("runsc", false, true, false, v2).runtime, "runsc");
  // The provider turned it off.
  RuntimeChoice off = ChooseRuntime("runc", true, false, false, v2);
  EXPECT_EQ(off.runtime, "runc");
  EXPECT_NE(off.why.find("runs tenants' jobs under runc"), std::string::npos);
  // A host that cannot cap gVisor's memory keeps runc and says why.
  RuntimeChoice kept = ChooseRuntime("runc", true, true, false, v1host);
  EXPECT_EQ(kept.runtime, "runc");
  EXPECT_NE(kept.why.find("not gVisor: memory is capped by rlimit"), std::string::npos) << kept.why;
  // Without a GPU there is nothing to isolate and nvproxy stays off.
  for (const RuntimeChoice& c : {ChooseRuntime("runc", true, true, false, v2), off, kept}) {
    EXPECT_EQ(c.gpu_isolation, "");
    EXPECT_FALSE(c.nvproxy);
  }
}

constexpr char kNoNvproxy[] = "runsc release 20221219 has no --nvproxy (gVisor added it in 2023)";

struct GpuCase {
  const char* name;
  std::string asked;
  bool tenant;
  bool gvisor_for_tenants;
  v1::Enforcement host;
  std::string runtime;
  std::string gpu_isolation;
  std::string why;  // part of it
};

TEST(ChooseRuntimeTest, GpuJobsRunUnderRunscOnlyWithNvproxy) {
  v1::Enforcement nvproxy = Host("cgroup", "v2", {"runc", "runsc"});
  v1::Enforcement debian12 = nvproxy;
  debian12.set_runsc_gpu_unavailable(kNoNvproxy);
  v1::Enforcement rlimits = Host("rlimit", "v1", {"runc", "runsc"});  // nvproxy, but gVisor cannot cap memory
  v1::Enforcement no_runsc = Host("cgroup", "v2", {"runc"});
  no_runsc.set_runsc_gpu_unavailable("runsc (gVisor) is not installed (apt-get install runsc)");
  const GpuCase cases[] = {
      {"tenant, nvproxy", "runc", true, true, nvproxy, "runsc", "runsc-nvproxy", "gVisor (runsc --nvproxy)"},
      {"tenant asking nothing, nvproxy", "", true, true, nvproxy, "runsc", "runsc-nvproxy", "runsc --nvproxy"},
      {"tenant, runsc without nvproxy", "runc", true, true, debian12, "runc", "runc",
       std::string("hardened sandbox and the GPUs' CDI devices, not gVisor: ") + kNoNvproxy},
      {"tenant, gVisor cannot cap memory", "runc", true, true, rlimits, "runc", "runc",
       "not gVisor: memory is capped by rlimit"},
      {"tenant, no runsc", "runc", true, true, no_runsc, "runc", "runc", "not gVisor: runsc (gVisor) is not installed"},
      {"tenant, agent keeps tenants on runc", "runc", true, false, nvproxy, "runc", "runc",
       "this agent runs tenants' jobs under runc"},
      {"operator, runc", "runc", false, true, nvproxy, "runc", "runc", "a GPU job runs under runc"},
      {"operator asks runsc, nvproxy", "runsc", false, true, nvproxy, "runsc", "runsc-nvproxy", "runsc --nvproxy"},
      {"operator asks runsc, no nvproxy: refused", "runsc", false, true, debian12, "", "",
       std::string("asks for runsc (gVisor), which cannot pass this host's GPUs in: ") + kNoNvproxy},
      {"tenant asks runsc, no runsc: refused", "runsc", true, true, no_runsc, "", "",
       "cannot pass this host's GPUs in: runsc (gVisor) is not installed"},
      {"tenant asks runsc, agent keeps tenants on runc", "runsc", true, false, nvproxy, "runsc", "runsc-nvproxy",
       "a tenant's GPU job runs under gVisor"},
  };
  for (const GpuCase& c : cases) {
    SCOPED_TRACE(c.name);
    const RuntimeChoice got = ChooseRuntime(c.asked, c.tenant, c.gvisor_for_tenants, true, c.host);
    EXPECT_EQ(got.runtime, c.runtime);
    EXPECT_EQ(got.gpu_isolation, c.gpu_isolation);
    EXPECT_EQ(got.nvproxy, c.runtime == "runsc") << "runsc never gets a GPU without nvproxy";
    EXPECT_EQ(got.refused, c.runtime.empty()) << "a job naming runsc never runs under a weaker sandbox";
    EXPECT_NE(got.why.find(c.why), std::string::npos) << got.why;
  }
}

// The output of Debian 12's own runsc, captured (runsc_debian12_output.h).
TEST(RunscNvproxyTest, Debian12sRunscHasNone) {
  EXPECT_EQ(RunscNvproxyUnavailable(testing::kDebian12RunscFlags, testing::kDebian12RunscVersion), kNoNvproxy);
}

// gVisor's runsc/config/flags.go registers the flag as
//   flagSet.Bool("nvproxy", false, "LEGACY: enable support for Nvidia GPUs. ...")
// and Go's flag.PrintDefaults prints a bool flag as "  -NAME" with its usage
// on the next line after "    \t": this is that shape, written by hand (no
// such runsc was at hand), around lines of the captured Debian listing.
constexpr char kNvproxyFlags[] =
    "  -network value\n"
    "    \tspecifies which network to use: sandbox (default), host, none.\n"
    "  -nvproxy\n"
    "    \tLEGACY: enable support for Nvidia GPUs. GPU support gets automatically enabled if Nvidia devices are "
    "present in the OCI spec.\n"
    "  -nvproxy-docker\n"
    "    \tLEGACY: Injects nvidia-container-runtime-hook as a prestart hook.\n";

TEST(RunscNvproxyTest, ARunscThatListsTheFlagHasIt) {
  EXPECT_EQ(RunscNvproxyUnavailable(kNvproxyFlags, "runsc version release-20240212.0\nspec: 1.1.0\n"), "");
  EXPECT_EQ(RunscNvproxyUnavailable(kNvproxyFlags, ""), "") << "the version only names the release";
  // The Debian listing with the flag added in its place.
  std::string debian_with_nvproxy = testing::kDebian12RunscFlags;
  const size_t at = debian_with_nvproxy.find("  -oci-seccomp");
  ASSERT_NE(at, std::string::npos);
  debian_with_nvproxy.insert(at, "  -nvproxy\n    \tenable support for Nvidia GPUs.\n");
  EXPECT_EQ(RunscNvproxyUnavailable(debian_with_nvproxy, testing::kDebian12RunscVersion), "");
}

TEST(RunscNvproxyTest, OnlyTheFlagItselfCounts) {
  // A usage line that mentions nvproxy, and a flag that only starts with it.
  const std::string lookalikes =
      "  -nvproxy-docker\n"
      "    \tinjects a hook; see -nvproxy\n"
      "  -debug\n"
      "    \tenable debug logging.\n";
  EXPECT_EQ(RunscNvproxyUnavailable(lookalikes, "runsc version release-20231009.0\n"),
            "runsc release 20231009 has no --nvproxy (gVisor added it in 2023)");
  EXPECT_EQ(RunscNvproxyUnavailable("  -debug\n", "runsc version unknown\n"),
            "this runsc has no --nvproxy (gVisor added it in 2023)");
  // Nothing that looks like Go's listing: no verdict on the flag.
  const std::string garbled = RunscNvproxyUnavailable("flag provided but not defined: -flags\n", "");
  EXPECT_NE(garbled.find("whether runsc has --nvproxy is unknown"), std::string::npos) << garbled;
}

// The real runsc of this host, where there is one: what the agent would
// advertise. Debian 12's says why it has no nvproxy; another may have it.
TEST(RunscNvproxyTest, ProbesTheInstalledRunsc) {
  const std::string found = ProbeRunscGpuUnavailable("/nonexistent");
  if (found.find("not installed") != std::string::npos) GTEST_SKIP() << found;
  EXPECT_TRUE(found.empty() || found.find("has no --nvproxy") != std::string::npos) << found;
  if (!found.empty()) EXPECT_NE(found.find("runsc release 20"), std::string::npos) << found;
}

}  // namespace
}  // namespace idlegrid::runtime
