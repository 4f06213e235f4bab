// manifest::SpecDigest: the digest a job's spec is stored and named by in
// its attempts' provenance, the same for the same spec however it was built.
#include <gtest/gtest.h>

#include <string>

#include "common/digest.h"
#include "manifest/manifest.h"

namespace idlegrid::manifest {
namespace {

v1::JobSpec WithEnv(bool reversed) {
  v1::JobSpec spec;
  spec.set_name("env");
  spec.set_image("sha256:" + std::string(64, 'a'));
  // Many entries: a map's iteration order would differ between the two
  // insertion orders, and so would a serialization that follows it.
  constexpr int kVariables = 64;
  for (int i = 0; i < kVariables; ++i) {
    const int n = reversed ? kVariables - 1 - i : i;
    (*spec.mutable_env())["VAR_" + std::to_string(n)] = "value-" + std::to_string(n);
  }
  return spec;
}

TEST(SpecDigest, TheSameSpecHasTheSameDigestWhateverOrderItsEnvWasBuiltIn) {
  const std::string forward = SpecDigest(WithEnv(false));
  EXPECT_TRUE(IsValidDigest(forward)) << forward;
  EXPECT_EQ(SpecDigest(WithEnv(true)), forward);
  v1::JobSpec copy;
  ASSERT_TRUE(copy.ParseFromString(WithEnv(true).SerializeAsString()));
  EXPECT_EQ(SpecDigest(copy), forward) << "a spec that crossed the wire is still the same spec";
}

TEST(SpecDigest, AnyChangeToTheSpecChangesTheDigest) {
  const v1::JobSpec base = WithEnv(false);
  v1::JobSpec value = base;
  (*value.mutable_env())["VAR_3"] = "other";
  v1::JobSpec args = base;
  args.add_args("--seed=2");
  EXPECT_NE(SpecDigest(value), SpecDigest(base));
  EXPECT_NE(SpecDigest(args), SpecDigest(base));
}

}  // namespace
}  // namespace idlegrid::manifest
