// The verification spec's rules and defaults (verify/spec.h), as tables.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "verify/spec.h"

namespace idlegrid::verify {
namespace {

v1::Verification With(const std::function<void(v1::Verification*)>& edit) {
  v1::Verification v;
  edit(&v);
  return v;
}

struct Case {
  const char* name;
  std::function<void(v1::Verification*)> edit;
  const char* field;  // "" when valid
  const char* says;   // a part of the description
};

TEST(VerificationSpec, RulesTable) {
  const Case cases[] = {
      {"unset is valid", [](auto*) {}, "", ""},
      {"mode none", [](auto* v) { v->set_mode("none"); }, "", ""},
      {"replicate defaults", [](auto* v) { v->set_mode("replicate"); }, "", ""},
      {"unknown mode", [](auto* v) { v->set_mode("vote"); }, "verification.mode", "got \"vote\""},
      {"fields without mode", [](auto* v) { v->set_replicas(3); }, "verification.mode", "must be set"},
      {"one replica",
       [](auto* v) {
         v->set_mode("replicate");
         v->set_replicas(1);
       },
       "verification.replicas", "between 2 and 16"},
      {"17 replicas",
       [](auto* v) {
         v->set_mode("replicate");
         v->set_replicas(17);
       },
       "verification.replicas", ""},
      {"quorum 2 of 3",
       [](auto* v) {
         v->set_mode("replicate");
         v->set_replicas(3);
         v->set_quorum(2);
       },
       "", ""},
      {"quorum 1 of 3 is no majority",
       [](auto* v) {
         v->set_mode("replicate");
         v->set_replicas(3);
         v->set_quorum(1);
       },
       "verification.quorum", "majority of replicas (2 to 3)"},
      {"quorum 2 of 4 is no majority",
       [](auto* v) {
         v->set_mode("replicate");
         v->set_replicas(4);
         v->set_quorum(2);
       },
       "verification.quorum", ""},
      {"quorum above replicas",
       [](auto* v) {
         v->set_mode("replicate");
         v->set_quorum(3);
       },
       "verification.quorum", ""},
      {"max below replicas",
       [](auto* v) {
         v->set_mode("replicate");
         v->set_replicas(3);
         v->set_max_replicas(2);
       },
       "verification.max_replicas", "between replicas (3)"},
      {"replicas for challenge",
       [](auto* v) {
         v->set_mode("challenge");
         v->set_replicas(2);
       },
       "verification.replicas", "no meaning for mode challenge"},
      {"adaptive threshold",
       [](auto* v) {
         v->set_mode("adaptive");
         v->set_trust_threshold(5);
       },
       "", ""},
      {"threshold for replicate",
       [](auto* v) {
         v->set_mode("replicate");
         v->set_trust_threshold(5);
       },
       "verification.trust_threshold", "no meaning"},
      {"floor above 1",
       [](auto* v) {
         v->set_mode("adaptive");
         v->set_audit_floor(1.5);
       },
       "verification.audit_floor", "between 0 and 1"},
      {"challenge rate",
       [](auto* v) {
         v->set_mode("challenge");
         v->set_challenge_rate(0.1);
       },
       "", ""},
      {"challenge rate for adaptive",
       [](auto* v) {
         v->set_mode("adaptive");
         v->set_challenge_rate(0.1);
       },
       "verification.challenge_rate", "no meaning"},
      {"outputs for none",
       [](auto* v) {
         v->set_mode("none");
         v->add_outputs("a");
       },
       "verification.outputs", ""},
      {"absolute output",
       [](auto* v) {
         v->set_mode("replicate");
         v->add_outputs("/etc/passwd");
       },
       "verification.outputs[0]", "relative"},
      {"escaping output",
       [](auto* v) {
         v->set_mode("replicate");
         v->add_outputs("a/../../b");
       },
       "verification.outputs[0]", "inside the output directory"},
      {"tolerance ok",
       [](auto* v) {
         v->set_mode("replicate");
         auto* t = v->add_tolerances();
         t->set_output("r.json"), t->set_format("json"), t->set_relative(1e-6);
       },
       "", ""},
      {"tolerance format",
       [](auto* v) {
         v->set_mode("replicate");
         auto* t = v->add_tolerances();
         t->set_output("r.xml"), t->set_format("xml");
       },
       "verification.tolerances[0].format", "\"json\" or \"csv\""},
      {"negative bound",
       [](auto* v) {
         v->set_mode("replicate");
         auto* t = v->add_tolerances();
         t->set_output("r.csv"), t->set_format("csv"), t->set_absolute(-1);
       },
       "verification.tolerances[0].absolute", ">= 0"},
      {"tolerance twice for one output",
       [](auto* v) {
         v->set_mode("replicate");
         for (int i = 0; i < 2; ++i) {
           auto* t = v->add_tolerances();
           t->set_output("r.csv"), t->set_format("csv");
         }
       },
       "verification.tolerances[1].output", "twice"},
  };
  for (const Case& c : cases) {
    std::optional<Violation> v = FindViolation(With(c.edit));
    if (std::string(c.field).empty()) {
      EXPECT_FALSE(v) << c.name << ": " << (v ? v->description : "");
      continue;
    }
    ASSERT_TRUE(v) << c.name;
    EXPECT_EQ(v->field, c.field) << c.name;
    EXPECT_NE(v->description.find(c.says), std::string::npos) << c.name << ": " << v->description;
  }
}

TEST(VerificationSpec, ManifestFieldNamesAreCamelCase) {
  auto v = FindViolation(With([](auto* v) {
    v->set_mode("replicate");
    v->set_replicas(3);
    v->set_max_replicas(2);
  }));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->manifest_field, "verification.maxReplicas");
}

TEST(VerificationSpec, ResolveFillsPolicyDefaults) {
  VerificationPolicy policy;
  policy.default_mode = Mode::kAdaptive;
  policy.replicas = 2;
  policy.extra_runs = 2;
  policy.trust_threshold = 7;
  policy.audit_floor = 0.2;

  auto unset = Resolve(v1::Verification(), policy);
  ASSERT_TRUE(unset.ok());
  EXPECT_EQ(unset->mode, Mode::kAdaptive);
  EXPECT_EQ(unset->replicas, 2u);
  EXPECT_EQ(unset->quorum, 2u);
  EXPECT_EQ(unset->max_replicas, 4u);
  EXPECT_EQ(unset->margin, VerificationPolicy{}.dispute_margin);
  EXPECT_EQ(unset->trust_threshold, 7u);
  EXPECT_DOUBLE_EQ(unset->audit_floor, 0.2);
  EXPECT_DOUBLE_EQ(unset->challenge_rate, policy.known_answer_rate) << "adaptive's known-answer checks";

  auto three = Resolve(With([](auto* v) {
                         v->set_mode("replicate");
                         v->set_replicas(3);
                       }),
                       policy);
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(three->quorum, 2u);
  EXPECT_EQ(three->max_replicas, 5u);
  EXPECT_EQ(three->trust_threshold, 0u);
  EXPECT_DOUBLE_EQ(three->challenge_rate, 0) << "replicate sends no known-answer checks";

  auto challenge = Resolve(With([](auto* v) { v->set_mode("challenge"); }), policy);
  ASSERT_TRUE(challenge.ok());
  EXPECT_DOUBLE_EQ(challenge->challenge_rate, policy.challenge_rate);
  EXPECT_DOUBLE_EQ(challenge->audit_floor, policy.audit_floor) << "the known-answer supply";
  EXPECT_EQ(challenge->replicas, 1u);

  auto none = Resolve(With([](auto* v) { v->set_mode("none"); }), policy);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->mode, Mode::kNone);

  auto tolerance = Resolve(With([](auto* v) {
                             v->set_mode("replicate");
                             auto* t = v->add_tolerances();
                             t->set_output("r.csv"), t->set_format("csv"), t->add_fields("x"), t->set_relative(0.01);
                           }),
                           policy);
  ASSERT_TRUE(tolerance.ok());
  ASSERT_EQ(tolerance->compare.tolerances.size(), 1u);
  EXPECT_EQ(tolerance->compare.tolerances[0].format, TableFormat::kCsv);
  EXPECT_EQ(tolerance->compare.tolerances[0].fields, std::vector<std::string>{"x"});

  auto bad = Resolve(With([](auto* v) { v->set_mode("nope"); }), policy);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("verification.mode"), std::string::npos);
}

TEST(VerificationSpec, ModeNamesRoundTrip) {
  for (Mode m : {Mode::kNone, Mode::kReplicate, Mode::kAdaptive, Mode::kChallenge}) {
    EXPECT_EQ(ParseMode(ModeName(m)), m);
  }
  EXPECT_FALSE(ParseMode(""));
  EXPECT_EQ(MajorityOf(2), 2u);
  EXPECT_EQ(MajorityOf(3), 2u);
  EXPECT_EQ(MajorityOf(4), 3u);
}

}  // namespace
}  // namespace idlegrid::verify
