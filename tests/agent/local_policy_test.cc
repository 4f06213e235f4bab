// The owner's policy file: job classes that widen the sandbox run only where
// the owner lists them (issue 12).
#include "agent/local_policy.h"

#include <gtest/gtest.h>

namespace idlegrid::agent {
namespace {

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

}  // namespace
}  // namespace idlegrid::agent
