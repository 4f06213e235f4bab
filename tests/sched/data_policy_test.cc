// Data classes: the built-in rules, the policy file's data-class
// sections with errors that name the field and the line, a node's trust
// tier, and the `data-class` stage over random fleets.
#include <gtest/gtest.h>

#include <random>

#include "manifest/manifest.h"
#include "sched/data_policy.h"
#include "sched/pipeline.h"
#include "sched/policy.h"
#include "sched_fixtures.h"

namespace idlegrid::sched {
namespace {

using testing::PNode;
using testing::PTask;

TEST(DataPolicyTest, BuiltinsAskMoreOfEachClass) {
  const DataPolicy policy;
  EXPECT_EQ(policy.default_class, "public");
  EXPECT_TRUE(policy.trusted_nodes.empty());
  const DataClassRule pub = RuleFor(policy, "public");
  const DataClassRule priv = RuleFor(policy, "private");
  const DataClassRule reg = RuleFor(policy, "regulated");
  EXPECT_EQ(pub.min_trust_tier, 0);
  EXPECT_FALSE(pub.exclusive_gpu);
  EXPECT_EQ(priv.min_trust_tier, 1);
  EXPECT_TRUE(priv.exclusive_gpu);
  EXPECT_EQ(reg.min_trust_tier, 2);
  EXPECT_TRUE(reg.exclusive_gpu);
  for (const auto& rule : {pub, priv, reg}) {
    EXPECT_TRUE(rule.regions.empty()) << rule.name;
    EXPECT_EQ(rule.min_reliability, 0) << rule.name;
  }
}

TEST(DataPolicyTest, JobsNamingNoClassGetTheDefault) {
  DataPolicy policy;
  EXPECT_EQ(RuleFor(policy, "").name, "public");
  policy.default_class = "private";
  EXPECT_EQ(RuleFor(policy, "").name, "private");
  EXPECT_EQ(RuleFor(policy, "").min_trust_tier, 1);
}

TEST(DataPolicyTest, AnUnknownClassFailsClosed) {
  const DataClassRule rule = RuleFor(DataPolicy{}, "secret");
  EXPECT_EQ(rule.name, "secret");
  EXPECT_EQ(rule.min_trust_tier, 2);
  EXPECT_TRUE(rule.exclusive_gpu);
}

TEST(DataPolicyTest, ManifestsAndPolicyKnowTheSameClasses) {
  const std::vector<std::string> manifest_classes(std::begin(manifest::kDataClasses), std::end(manifest::kDataClasses));
  EXPECT_EQ(manifest_classes, KnownDataClasses());
  EXPECT_EQ(BuiltinDataClasses().size(), KnownDataClasses().size());
  for (const auto& name : KnownDataClasses()) EXPECT_EQ(BuiltinDataClasses().at(name).name, name);
}

TEST(DataPolicyTest, DescribesWhatAClassAllows) {
  const DataPolicy policy;
  EXPECT_EQ(DescribeDataClass(RuleFor(policy, "public")), "data class public: any trust tier, any region");
  EXPECT_EQ(DescribeDataClass(RuleFor(policy, "private")),
            "data class private: trust tier >= 1, any region, exclusive GPU");
  DataClassRule rule = RuleFor(policy, "regulated");
  rule.regions = {"eu-west", "eu-central"};
  rule.min_reliability = 0.95;
  EXPECT_EQ(DescribeDataClass(rule),
            "data class regulated: trust tier >= 2, regions eu-central|eu-west, reliability >= 0.95, exclusive GPU");
  EXPECT_EQ(DescribeDataClass({}), "");
}

TEST(NodeTrustTierTest, Table) {
  struct Case {
    const char* name;
    TrustEvidence evidence;
    int tier;
  } cases[] = {
      {"unmeasured", {false, false, 0}, 0},
      {"measured", {true, false, 0}, 1},
      {"measured, simulated GPUs", {true, true, 0}, 0},
      {"assigned but not measured", {false, false, 2}, 0},
      {"assigned, simulated GPUs", {true, true, 3}, 0},
      {"assigned and measured", {true, false, 2}, 2},
      {"assigned a higher tier", {true, false, 3}, 3},
  };
  for (const auto& c : cases) EXPECT_EQ(NodeTrustTier(c.evidence), c.tier) << c.name;
}

TEST(DataPolicyParseTest, ReadsClassesDefaultAndTrustedNodes) {
  const char* kYaml = R"(
defaultPolicy: spread
dataClasses:
  private:   {minTrustTier: 1, exclusiveGpu: false}
  regulated:
    minTrustTier: 3
    regions: [eu-west, eu-central]
    minReliability: 0.95
    exclusiveGpu: true
defaultDataClass: private
trustedNodes:
  n-abc: 2
  n-def: 3
)";
  auto data = ParseDataPolicy(kYaml, "policy.yaml");
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->default_class, "private");
  EXPECT_FALSE(data->classes.at("private").exclusive_gpu);
  const DataClassRule& reg = data->classes.at("regulated");
  EXPECT_EQ(reg.min_trust_tier, 3);
  EXPECT_EQ(reg.regions, (std::set<std::string>{"eu-central", "eu-west"}));
  EXPECT_DOUBLE_EQ(reg.min_reliability, 0.95);
  EXPECT_TRUE(reg.exclusive_gpu);
  // A class the file does not name keeps its built-in rule.
  EXPECT_EQ(data->classes.at("public").min_trust_tier, 0);
  EXPECT_EQ(AssignedTier(*data, "n-abc"), 2);
  EXPECT_EQ(AssignedTier(*data, "n-def"), 3);
  EXPECT_EQ(AssignedTier(*data, "n-other"), 0);
  // The scheduling-policy parser accepts the same file.
  auto policies = ParsePolicyConfig(kYaml, "policy.yaml");
  ASSERT_TRUE(policies.ok()) << policies.status().ToString();
  EXPECT_EQ(policies->default_policy, "spread");
}

TEST(DataPolicyParseTest, AFileWithoutDataSectionsMeansBuiltins) {
  for (const char* yaml : {"", "defaultPolicy: balanced\n", "policies: []\n"}) {
    auto data = ParseDataPolicy(yaml);
    ASSERT_TRUE(data.ok()) << yaml;
    EXPECT_EQ(data->default_class, "public");
    EXPECT_EQ(data->classes.at("regulated").min_trust_tier, 2);
    EXPECT_TRUE(data->trusted_nodes.empty());
  }
}

TEST(DataPolicyParseTest, ErrorsNameTheFieldAndLine) {
  struct Case {
    const char* yaml;
    std::string want;
  };
  const Case kCases[] = {
      {"dataClasses:\n  secret: {minTrustTier: 2}\n",
       "policy.yaml:2: dataClasses.secret: unknown data class (known: public, private, regulated)"},
      {"dataClasses:\n  private:\n    minTrustTier: high\n",
       "policy.yaml:3: dataClasses.private.minTrustTier: expected a trust tier (an integer >= 0), got \"high\""},
      {"dataClasses:\n  private: {minTrustTier: -1}\n", "dataClasses.private.minTrustTier: expected a trust tier"},
      {"dataClasses:\n  regulated:\n    regions: eu-west\n",
       "policy.yaml:3: dataClasses.regulated.regions: expected a list of regions"},
      {"dataClasses:\n  regulated:\n    minReliability: 1.5\n",
       "policy.yaml:3: dataClasses.regulated.minReliability: expected a number from 0 to 1, got \"1.5\""},
      {"dataClasses:\n  regulated: {exclusiveGpu: maybe}\n",
       "policy.yaml:2: dataClasses.regulated.exclusiveGpu: expected true or false"},
      {"dataClasses:\n  regulated: {minTier: 2}\n", "policy.yaml:2: dataClasses.regulated.minTier: unknown field"},
      {"dataClasses: [public]\n", "policy.yaml:1: dataClasses: expected a map"},
      {"dataClasses:\n  private: strict\n", "policy.yaml:2: dataClasses.private: expected a map"},
      {"dataClasses:\n  private:\n", "dataClasses.private: expected a map"},
      {"defaultDataClass: secret\n", "policy.yaml:1: defaultDataClass: unknown data class \"secret\""},
      {"trustedNodes:\n  n-abc: 1\n",
       "policy.yaml:2: trustedNodes.n-abc: expected a trust tier >= 2 (0 and 1 are measured, not assigned), got \"1\""},
      {"trustedNodes:\n  n-abc: yes\n", "policy.yaml:2: trustedNodes.n-abc: expected a trust tier >= 2"},
      {"trustedNodes: [n-abc]\n", "policy.yaml:1: trustedNodes: expected a map from node id to trust tier"},
      {"dataClasses: {\n", "policy.yaml:"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.yaml);
    auto data = ParseDataPolicy(c.yaml, "policy.yaml");
    ASSERT_FALSE(data.ok());
    EXPECT_EQ(data.status().code(), Code::kInvalidArgument);
    EXPECT_NE(data.status().message().find(c.want), std::string::npos) << data.status().message();
  }
}

TEST(DataPolicyParseTest, PolicyConfigStillRefusesUnknownKeys) {
  auto config = ParsePolicyConfig("dataClass: {}\n", "policy.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("policy.yaml:1: dataClass: unknown field (known: defaultPolicy, policies, "
                                           "dataClasses, defaultDataClass, trustedNodes)"),
            std::string::npos)
      << config.status().message();
}

// Over random fleets and classes: every placement satisfies its task's data
// class, and a task that waits has no node its class allows that could take
// it (checked by an oracle written from the rule, not from the stage).
bool ClassAllows(const DataClassRule& rule, const NodeView& n) {
  return n.trust_tier >= rule.min_trust_tier && (rule.regions.empty() || rule.regions.count(n.region) > 0) &&
         n.reliability >= rule.min_reliability;
}

TEST(DataClassStagePropertyTest, PlacementsKeepToTheClass) {
  const char* const kRegions[] = {"eu-west", "us-east", "ap-south"};
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % n); };
    std::vector<NodeView> fleet;
    for (int i = 0; i < 12; ++i) {
      NodeView n = PNode("n" + std::to_string(i), 2);
      n.trust_tier = pick(4);
      n.region = kRegions[pick(3)];
      n.reliability = pick(101) / 100.0;
      fleet.push_back(n);
    }
    DataPolicy policy;
    policy.classes["regulated"].regions = {"eu-west"};
    policy.classes["regulated"].min_reliability = 0.5;
    std::vector<TaskView> tasks;
    for (int i = 0; i < 40; ++i) {
      TaskView t = PTask("job" + std::to_string(i), 0, 1);
      t.data_class = RuleFor(policy, KnownDataClasses()[pick(3)]);
      tasks.push_back(t);
    }
    Plan plan = NewPipelineScheduler({PolicyConfig{}, seed})->Schedule(fleet, tasks);
    std::map<std::string, const NodeView*> nodes;
    for (const auto& n : fleet) nodes[n.id] = &n;
    std::map<std::string, const TaskView*> by_key;
    for (const auto& t : tasks) by_key[TaskKey(t.job_id, t.index)] = &t;
    std::set<std::string> used_devices;
    for (const auto& p : plan.placements) {
      const TaskView& t = *by_key.at(TaskKey(p.job_id, p.index));
      EXPECT_TRUE(ClassAllows(t.data_class, *nodes.at(p.node_id))) << t.data_class.name << " on " << p.node_id;
      for (const auto& d : p.device_uuids) used_devices.insert(d);
    }
    for (const auto& [key, why] : plan.waiting) {
      const TaskView& t = *by_key.at(key);
      for (const auto& n : fleet) {
        if (!ClassAllows(t.data_class, n)) continue;
        // An allowed node has no free GPU left: the plan took both.
        EXPECT_TRUE(used_devices.count(n.id + "-gpu0") && used_devices.count(n.id + "-gpu1"))
            << key << " (" << t.data_class.name << ") waits though " << n.id << " allows it: " << why.summary;
      }
    }
  }
}

}  // namespace
}  // namespace idlegrid::sched
