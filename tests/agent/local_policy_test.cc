// The owner's policy file (agent/local_policy.h): job classes that widen
// the sandbox run only where the owner lists them (issue 12); registries a
// node may pull images from (allowedRegistries, R21).
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
  Result<OwnerPolicy> policy =
      ParseOwnerPolicy("allowedRegistries: [GHCR.io, \"127.0.0.1:5000\"]\n", "policy.yaml");
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  ASSERT_EQ(policy->policy.allowed_registries_size(), 2);
  EXPECT_EQ(policy->policy.allowed_registries(0), "ghcr.io");
  EXPECT_TRUE(CheckOwnerPolicy(Spec("127.0.0.1:5000/igtest/prog@" + kDigest), policy->policy).ok());
  EXPECT_TRUE(CheckOwnerPolicy(Spec("ghcr.io/org/app@" + kDigest), policy->policy).ok());
  EXPECT_FALSE(CheckOwnerPolicy(Spec("127.0.0.1:5001/igtest/prog@" + kDigest), policy->policy).ok());
}

TEST(OwnerPolicyRegistriesTest, ABadEntryIsRefusedWhereItIs) {
  Result<OwnerPolicy> policy = ParseOwnerPolicy("acceptJobs: true\nallowedRegistries: [ghcr.io, \"r.io:0\"]\n",
                                                "policy.yaml");
  ASSERT_FALSE(policy.ok());
  EXPECT_EQ(policy.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(policy.status().message().rfind("policy.yaml:2:30: allowedRegistries: ", 0), 0u)
      << policy.status().message();
  Result<OwnerPolicy> scalar = ParseOwnerPolicy("allowedRegistries: ghcr.io\n", "policy.yaml");
  ASSERT_FALSE(scalar.ok());
  EXPECT_NE(scalar.status().message().find("expected a list"), std::string::npos) << scalar.status().message();
}

}  // namespace
}  // namespace idlegrid::agent
