// Where gVisor runs (issue 12): tenants' jobs go under runsc where the host
// can cap their memory there, and the reason is said where it cannot.
#include <gtest/gtest.h>

#include "runtime/admission.h"

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

  EXPECT_EQ(ChooseRuntime("runc", true, true, v2).runtime, "runsc");
  EXPECT_EQ(ChooseRuntime("", true, true, v2).runtime, "runsc");
  // The operator's own jobs, and jobs that chose runsc, run as asked.
  EXPECT_EQ(ChooseRuntime("runc", false, true, v2).runtime, "runc");
  EXPECT_EQ(ChooseRuntime("runc", false, true, v2).why, "");
  EXPECT_EQ(ChooseRuntime("runsc", false, true, v2).runtime, "runsc");
  // The provider turned it off.
  RuntimeChoice off = ChooseRuntime("runc", true, false, v2);
  EXPECT_EQ(off.runtime, "runc");
  EXPECT_NE(off.why.find("runs tenants' jobs under runc"), std::string::npos);
  // A host that cannot cap gVisor's memory keeps runc and says why.
  RuntimeChoice kept = ChooseRuntime("runc", true, true, v1host);
  EXPECT_EQ(kept.runtime, "runc");
  EXPECT_NE(kept.why.find("not gVisor: memory is capped by rlimit"), std::string::npos) << kept.why;
}

}  // namespace
}  // namespace idlegrid::runtime
