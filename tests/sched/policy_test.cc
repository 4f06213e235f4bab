// Scheduling policies as configuration: the built-ins and the YAML format,
// including errors that name the field and the line.
#include <gtest/gtest.h>

#include "sched/policy.h"

namespace idlegrid::sched {
namespace {

TEST(PolicyTest, BuiltinsIncludeCheapestAndBalanced) {
  PolicyRegistry builtins = BuiltinPolicies();
  ASSERT_TRUE(builtins.count("cheapest"));
  ASSERT_TRUE(builtins.count("balanced"));
  EXPECT_TRUE(builtins["cheapest"].price_first);
  EXPECT_FALSE(builtins["balanced"].price_first);
  for (const auto& [name, policy] : builtins) {
    EXPECT_EQ(name, policy.name);
    for (const auto& s : policy.scorers) {
      EXPECT_NE(std::find(KnownScorers().begin(), KnownScorers().end(), s.name), KnownScorers().end()) << s.name;
    }
  }
  EXPECT_EQ(PolicyConfig{}.default_policy, "balanced");
  EXPECT_EQ(PolicyConfig{}.policies.size(), builtins.size());
}

TEST(PolicyTest, ParsesPoliciesAndDefault) {
  auto config = ParsePolicyConfig(R"(
defaultPolicy: gpu-pack
policies:
  - name: gpu-pack
    packing: pack
    priceFirst: true
    scorers:
      - name: fragmentation
        weight: 3
      - {name: reliability, weight: 0.5}
  - name: cheapest
    scorers: [{name: price, weight: 1}]
)");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->default_policy, "gpu-pack");
  const SchedulingPolicy& p = config->policies.at("gpu-pack");
  EXPECT_EQ(p.packing, Packing::kPack);
  EXPECT_TRUE(p.price_first);
  ASSERT_EQ(p.scorers.size(), 2u);
  EXPECT_EQ(p.scorers[0].name, "fragmentation");
  EXPECT_DOUBLE_EQ(p.scorers[0].weight, 3);
  EXPECT_DOUBLE_EQ(p.scorers[1].weight, 0.5);
  // A file's policy replaces the built-in of the same name; the others stay.
  EXPECT_FALSE(config->policies.at("cheapest").price_first);
  EXPECT_TRUE(config->policies.count("balanced"));
  EXPECT_EQ(DescribePolicy(p), "gpu-pack: price first, then fragmentation x3 + reliability x0.5; pack");
}

TEST(PolicyTest, EmptyFileMeansBuiltins) {
  auto config = ParsePolicyConfig("");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->policies.size(), BuiltinPolicies().size());
}

TEST(PolicyTest, ErrorsNameTheFieldAndLine) {
  struct Case {
    const char* yaml;
    std::string want;
  };
  const Case kCases[] = {
      {"policies:\n  - name: a\n    scorers:\n      - {name: speed, weight: 1}\n",
       "policy.yaml:4: policies[0].scorers[0].name: unknown scorer \"speed\" (known: cache, energy"},
      {"policies:\n  - name: a\n    scorers:\n      - name: price\n        weight: high\n",
       "policy.yaml:5: policies[0].scorers[0].weight: expected a number >= 0, got \"high\""},
      {"policies:\n  - name: a\n    scorers:\n      - {name: price, weight: -1}\n",
       "policies[0].scorers[0].weight: expected a number >= 0"},
      {"policies:\n  - name: a\n  - name: b\n    packing: sideways\n",
       "policy.yaml:4: policies[1].packing: expected spread or pack"},
      {"policies:\n  - name: a\n    colour: red\n", "policy.yaml:3: policies[0].colour: unknown field"},
      {"policies:\n  - scorers: []\n", "policy.yaml:2: policies[0].name: missing"},
      {"policies:\n  - name: a\n  - name: a\n", "policy.yaml:3: policies[1].name: duplicate policy \"a\""},
      {"defaultPolicy: nope\n", "policy.yaml:1: defaultPolicy: no policy named \"nope\""},
      {"policies: {name: a}\n", "policies: expected a list"},
      {"policies:\n  - name: a\n    priceFirst: maybe\n",
       "policy.yaml:3: policies[0].priceFirst: expected true or false"},
      {"policies: [\n", "policy.yaml:"},
      {"polices: []\n", "policy.yaml:1: polices: unknown field"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.yaml);
    auto config = ParsePolicyConfig(c.yaml, "policy.yaml");
    ASSERT_FALSE(config.ok());
    EXPECT_EQ(config.status().code(), Code::kInvalidArgument);
    EXPECT_NE(config.status().message().find(c.want), std::string::npos) << config.status().message();
  }
}

}  // namespace
}  // namespace idlegrid::sched
