// The manifest's `verification:` (rules in verify/spec.h).
#include <gtest/gtest.h>

#include "manifest/manifest.h"

namespace idlegrid::manifest {
namespace {

const std::string kBase = "apiVersion: idlegrid/v1\nname: v\nimage: sim@sha256:" + std::string(64, 'a') + "\n";

TEST(VerificationManifest, EveryFieldIsParsed) {
  auto spec = ParseManifest(kBase +
                                "verification:\n"
                                "  mode: replicate\n"
                                "  replicas: 3\n"
                                "  quorum: 2\n"
                                "  maxReplicas: 5\n"
                                "  outputs: [result.bin, stats.json]\n"
                                "  tolerances:\n"
                                "    - output: stats.json\n"
                                "      format: json\n"
                                "      fields: [mean, sd]\n"
                                "      relative: 1e-6\n"
                                "      absolute: 0.001\n",
                            "job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const v1::Verification& v = spec->verification();
  EXPECT_EQ(v.mode(), "replicate");
  EXPECT_EQ(v.replicas(), 3u);
  EXPECT_EQ(v.quorum(), 2u);
  EXPECT_EQ(v.max_replicas(), 5u);
  ASSERT_EQ(v.outputs_size(), 2);
  EXPECT_EQ(v.outputs(1), "stats.json");
  ASSERT_EQ(v.tolerances_size(), 1);
  EXPECT_EQ(v.tolerances(0).format(), "json");
  EXPECT_EQ(v.tolerances(0).fields(1), "sd");
  EXPECT_DOUBLE_EQ(v.tolerances(0).relative(), 1e-6);
  EXPECT_DOUBLE_EQ(v.tolerances(0).absolute(), 0.001);
}

TEST(VerificationManifest, ShorthandAndAdaptiveAndChallenge) {
  auto shorthand = ParseManifest(kBase + "verification: none\n", "job.yaml");
  ASSERT_TRUE(shorthand.ok()) << shorthand.status().ToString();
  EXPECT_EQ(shorthand->verification().mode(), "none");

  auto adaptive = ParseManifest(kBase + "verification: {mode: adaptive, trustThreshold: 5, auditFloor: 0.2}\n", "j");
  ASSERT_TRUE(adaptive.ok()) << adaptive.status().ToString();
  EXPECT_EQ(adaptive->verification().trust_threshold(), 5u);
  EXPECT_DOUBLE_EQ(adaptive->verification().audit_floor(), 0.2);

  auto challenge = ParseManifest(kBase + "verification: {mode: challenge, challengeRate: 0.1}\n", "j");
  ASSERT_TRUE(challenge.ok()) << challenge.status().ToString();
  EXPECT_DOUBLE_EQ(challenge->verification().challenge_rate(), 0.1);

  // Unset: the operator's policy decides.
  auto unset = ParseManifest(kBase, "job.yaml");
  ASSERT_TRUE(unset.ok());
  EXPECT_FALSE(unset->has_verification());
}

TEST(VerificationManifest, ErrorsNameTheFieldAndLine) {
  struct Case {
    std::string extra, expect;
  } cases[] = {
      {"verification: vote\n", "job.yaml:4:15: verification.mode: must be none, replicate, adaptive or challenge"},
      {"verification:\n  mode: replicate\n  replicas: 1\n", "job.yaml:6:13: verification.replicas: must be between 2"},
      {"verification:\n  mode: replicate\n  replicas: 4\n  quorum: 2\n",
       "job.yaml:7:11: verification.quorum: must be a majority"},
      {"verification:\n  mode: replicate\n  maxReplica: 4\n",
       "job.yaml:6:3: unknown field \"maxReplica\" in verification (did you mean \"maxReplicas\"?)"},
      {"verification:\n  replicas: 3\n", "job.yaml:5:3: verification: missing required field \"mode\""},
      {"verification:\n  mode: replicate\n  tolerances:\n    - output: r.json\n      format: xml\n",
       "job.yaml:8:15: verification.tolerances[0].format: must be \"json\" or \"csv\""},
      {"verification:\n  mode: replicate\n  tolerances:\n    - output: r.json\n",
       "verification.tolerances[0]: missing required field \"format\""},
      {"verification:\n  mode: adaptive\n  auditFloor: lots\n",
       "job.yaml:6:15: verification.auditFloor: expected a number"},
      {"verification:\n  mode: replicate\n  outputs: [../x]\n",
       "job.yaml:6:13: verification.outputs[0]: must be a plain path inside the output directory"},
  };
  for (const Case& c : cases) {
    auto spec = ParseManifest(kBase + c.extra, "job.yaml");
    ASSERT_FALSE(spec.ok()) << c.extra;
    EXPECT_NE(spec.status().message().find(c.expect), std::string::npos)
        << c.extra << "\n got: " << spec.status().message();
  }
}

TEST(VerificationManifest, ValidateJobSpecChecksIt) {
  auto spec = ParseManifest(kBase, "job.yaml");
  ASSERT_TRUE(spec.ok());
  spec->mutable_verification()->set_mode("replicate");
  spec->mutable_verification()->set_quorum(7);
  Status s = ValidateJobSpec(*spec);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("spec.verification.quorum: must be a majority"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace idlegrid::manifest
