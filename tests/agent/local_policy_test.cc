// The owner's policy file (agent/local_policy.h): job classes that widen
// the sandbox run only where the owner lists them (issue 12); registries a
// node may pull images from (allowedRegistries); tenants' GPU jobs
// (tenantGpuJobs, issue 27).
#include "agent/local_policy.h"

#include <gtest/gtest.h>

#include <string>

namespace idlegrid::agent {
namespace {

// A changed ask price is re-advertised at once, not only a changed count of
// asks (an owner raising a price at night must not wait for the next cycle).
TEST(AdvertisedPolicyTest, AnyChangeOfPolicyOrAskPricesDiffers) {
  auto parse = [](const std::string& yaml) {
    auto p = ParseOwnerPolicy(yaml, "policy.yaml");
    EXPECT_TRUE(p.ok()) << p.status().message();
    return p.ok() ? *p : OwnerPolicy{};
  };
  const OwnerPolicy base = parse("asks:\n  cpu-core: 0.30\n");
  EXPECT_FALSE(AdvertisedPolicyDiffers(base, parse("asks:\n  cpu-core: 0.30\n")));
  EXPECT_TRUE(AdvertisedPolicyDiffers(base, parse("asks:\n  cpu-core: 0.50\n"))) << "same count, new price";
  EXPECT_TRUE(AdvertisedPolicyDiffers(base, parse("asks:\n  RTX 4090: 0.30\n"))) << "same price, other class";
  EXPECT_TRUE(AdvertisedPolicyDiffers(base, parse("acceptJobs: false\nasks:\n  cpu-core: 0.30\n")));
  EXPECT_FALSE(AdvertisedPolicyDiffers(base, parse("asks:\n  cpu-core: 0.30\npauseWhen:\n  onBattery: true\n")))
      << "pausing is the agent's own business, not advertised";
}

TEST(LocalPolicyJobClassTest, AJobClassRunsOnlyWhereTheOwnerApprovesIt) {
  v1::JobSpec spec;
  spec.set_runtime("runc");
  spec.set_job_class("io-uring");
  const Status refused = CheckOwnerPolicy(spec, DefaultOwnerPolicy().policy);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.message(),
            "job class io-uring is not approved by the owner (allowedJobClasses in the node's policy)");

  Result<OwnerPolicy> approved = ParseOwnerPolicy("allowedJobClasses: [io-uring]\n", "policy.yaml");
  ASSERT_TRUE(approved.ok()) << approved.status().message();
  EXPECT_TRUE(CheckOwnerPolicy(spec, approved->policy).ok());
  spec.clear_job_class();
  EXPECT_TRUE(CheckOwnerPolicy(spec, DefaultOwnerPolicy().policy).ok()) << "the default class needs no approval";
}

TEST(LocalPolicyJobClassTest, AnUnknownClassIsAnErrorWithItsPlace) {
  Result<OwnerPolicy> bad = ParseOwnerPolicy("acceptJobs: true\nallowedJobClasses: [io-uring, root]\n", "policy.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "policy.yaml:2:31: allowedJobClasses: unknown job class \"root\" (known: io-uring)");
  EXPECT_FALSE(ParseOwnerPolicy("allowedJobClasses: io-uring\n", "p.yaml").ok());
}

const std::string kDigest = "sha256:" + std::string(64, 'e');

v1::JobSpec Spec(const std::string& image) {
  v1::JobSpec spec;
  spec.set_image(image);
  spec.set_runtime("runc");
  return spec;
}

TEST(OwnerPolicyRegistriesTest, NoneAllowedByDefault) {
  Result<OwnerPolicy> policy = ParseOwnerPolicy("acceptJobs: true\n", "policy.yaml");
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  EXPECT_EQ(policy->policy.allowed_registries_size(), 0);
  Status st = CheckOwnerPolicy(Spec("127.0.0.1:5000/igtest/prog@" + kDigest), policy->policy);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kFailedPrecondition);
  EXPECT_NE(st.message().find("registry 127.0.0.1:5000 is not in this node's allowedRegistries"), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("policy.yaml"), std::string::npos) << st.message();
  // Images pushed to the coordinator need no registry setting.
  EXPECT_TRUE(CheckOwnerPolicy(Spec("sim@" + kDigest), policy->policy).ok());
}

TEST(OwnerPolicyRegistriesTest, ListedRegistriesAreFoldedAndAllowed) {
  Result<OwnerPolicy> policy = ParseOwnerPolicy("allowedRegistries: [GHCR.io, \"127.0.0.1:5000\"]\n", "policy.yaml");
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  ASSERT_EQ(policy->policy.allowed_registries_size(), 2);
  EXPECT_EQ(policy->policy.allowed_registries(0), "ghcr.io");
  EXPECT_TRUE(CheckOwnerPolicy(Spec("127.0.0.1:5000/igtest/prog@" + kDigest), policy->policy).ok());
  EXPECT_TRUE(CheckOwnerPolicy(Spec("ghcr.io/org/app@" + kDigest), policy->policy).ok());
  EXPECT_FALSE(CheckOwnerPolicy(Spec("127.0.0.1:5001/igtest/prog@" + kDigest), policy->policy).ok());
}

TEST(OwnerPolicyRegistriesTest, ABadEntryIsRefusedWhereItIs) {
  Result<OwnerPolicy> policy =
      ParseOwnerPolicy("acceptJobs: true\nallowedRegistries: [ghcr.io, \"r.io:0\"]\n", "policy.yaml");
  ASSERT_FALSE(policy.ok());
  EXPECT_EQ(policy.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(policy.status().message().rfind("policy.yaml:2:30: allowedRegistries: ", 0), 0u)
      << policy.status().message();
  Result<OwnerPolicy> scalar = ParseOwnerPolicy("allowedRegistries: ghcr.io\n", "policy.yaml");
  ASSERT_FALSE(scalar.ok());
  EXPECT_NE(scalar.status().message().find("expected a list"), std::string::npos) << scalar.status().message();
}

// tenantGpuJobs (docs/containment.md, GPU jobs): the owner may refuse every
// tenant's GPU job; the operator's and tenants' CPU jobs still run.
TEST(OwnerPolicyTenantGpuJobsTest, ParsedAndAdvertisedAsRefused) {
  Result<OwnerPolicy> by_default = ParseOwnerPolicy("acceptJobs: true\n", "policy.yaml");
  ASSERT_TRUE(by_default.ok()) << by_default.status().ToString();
  EXPECT_FALSE(by_default->policy.tenant_gpu_jobs_refused()) << "accepted unless the owner says otherwise";
  EXPECT_FALSE(DefaultOwnerPolicy().policy.tenant_gpu_jobs_refused());
  Result<OwnerPolicy> refused = ParseOwnerPolicy("tenantGpuJobs: false\n", "policy.yaml");
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  EXPECT_TRUE(refused->policy.tenant_gpu_jobs_refused());
  EXPECT_TRUE(AdvertisedPolicyDiffers(*by_default, *refused)) << "the scheduler must learn it at once";
  Result<OwnerPolicy> accepted = ParseOwnerPolicy("tenantGpuJobs: true\n", "policy.yaml");
  ASSERT_TRUE(accepted.ok()) << accepted.status().ToString();
  EXPECT_FALSE(accepted->policy.tenant_gpu_jobs_refused());
  Result<OwnerPolicy> bad = ParseOwnerPolicy("acceptJobs: true\ntenantGpuJobs: no\n", "policy.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "policy.yaml:2:16: tenantGpuJobs: expected true or false");
}

v1::Assignment GpuAssignment(bool tenant, uint32_t gpus, uint32_t gpu_milli) {
  v1::Assignment a;
  *a.mutable_spec() = Spec("sim@" + kDigest);
  a.mutable_spec()->mutable_resources()->set_gpus(gpus);
  a.mutable_spec()->mutable_resources()->set_gpu_milli(gpu_milli);
  a.set_untrusted_tenant(tenant);
  return a;
}

TEST(OwnerPolicyTenantGpuJobsTest, RefusesOnlyTenantsJobsThatAskForGpus) {
  Result<OwnerPolicy> policy = ParseOwnerPolicy("tenantGpuJobs: false\n", "policy.yaml");
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  struct Case {
    const char* name;
    v1::Assignment assignment;
    bool refused;
  };
  const Case cases[] = {
      {"a tenant's whole GPU", GpuAssignment(true, 1, 0), true},
      {"a tenant's two GPUs", GpuAssignment(true, 2, 0), true},
      {"a tenant's GPU share", GpuAssignment(true, 0, 250), true},
      {"a tenant's CPU job", GpuAssignment(true, 0, 0), false},
      {"the operator's GPU job", GpuAssignment(false, 1, 0), false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Status st = CheckOwnerPolicy(c.assignment, policy->policy);
    EXPECT_EQ(st.ok(), !c.refused) << st.message();
    if (c.refused) {
      EXPECT_EQ(st.code(), Code::kFailedPrecondition);
      EXPECT_EQ(st.message(), "the owner accepts no tenant GPU jobs (policy.yaml tenantGpuJobs: false)");
    }
    EXPECT_TRUE(CheckOwnerPolicy(c.assignment, DefaultOwnerPolicy().policy).ok()) << "accepted by default";
  }
  // The spec's own rules still apply to an assignment.
  v1::Assignment registry = GpuAssignment(false, 0, 0);
  registry.mutable_spec()->set_image("127.0.0.1:5000/igtest/prog@" + kDigest);
  EXPECT_FALSE(CheckOwnerPolicy(registry, policy->policy).ok());
}

}  // namespace
}  // namespace idlegrid::agent

namespace idlegrid::agent {
namespace {

// imageCache (docs/provider.md, Disk for images): a size; unset is 0, which
// the agent reads as kDefaultImageCacheBytes.
TEST(OwnerPolicyImageCacheTest, ASizeIsParsedAndNonsenseRefusedWhereItIs) {
  Result<OwnerPolicy> unset = ParseOwnerPolicy("acceptJobs: true\n", "policy.yaml");
  ASSERT_TRUE(unset.ok());
  EXPECT_EQ(unset->image_cache_bytes, 0u);
  Result<OwnerPolicy> set = ParseOwnerPolicy("imageCache: 5Gi\n", "policy.yaml");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->image_cache_bytes, 5ull << 30);
  for (const char* bad : {"imageCache: 0\n", "imageCache: lots\n", "imageCache: -1Gi\n"}) {
    Result<OwnerPolicy> refused = ParseOwnerPolicy(bad, "policy.yaml");
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.status().message().find("policy.yaml:1:"), std::string::npos) << refused.status().message();
    EXPECT_NE(refused.status().message().find("imageCache"), std::string::npos) << refused.status().message();
  }
}

}  // namespace
}  // namespace idlegrid::agent
