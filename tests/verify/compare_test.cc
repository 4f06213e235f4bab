// Comparing two runs' outputs (verify/compare.h): digests, named outputs,
// tolerance-compared outputs.
#include <gtest/gtest.h>

#include "verify/compare.h"

namespace idlegrid::verify {
namespace {

OutputFile File(std::string path, std::string digest, std::optional<std::string> content = std::nullopt) {
  return {std::move(path), std::move(digest), std::move(content)};
}

CompareSpec Named(std::vector<std::string> outputs) { return {std::move(outputs), {}}; }

TEST(CompareOutputs, Table) {
  const CompareSpec all;
  const CompareSpec only_a = Named({"a"});
  CompareSpec tolerant;
  tolerant.tolerances.push_back({"r.json", TableFormat::kJson, {}, 0.01, 0});
  struct Case {
    const char* name;
    const CompareSpec& spec;
    std::vector<OutputFile> x, y;
    bool match;
    const char* says;
  };
  const Case cases[] = {
      {"same digests", all, {File("a", "d1"), File("b", "d2")}, {File("b", "d2"), File("a", "d1")}, true, ""},
      {"one digest differs",
       all,
       {File("a", "d1"), File("b", "d2")},
       {File("a", "d1"), File("b", "dX")},
       false,
       "b: digests differ"},
      {"extra output",
       all,
       {File("a", "d1")},
       {File("a", "d1"), File("log", "d9")},
       false,
       "log: present in only one run"},
      {"named output only",
       only_a,
       {File("a", "d1"), File("log", "d8")},
       {File("a", "d1"), File("log", "d9")},
       true,
       ""},
      {"tolerance within",
       tolerant,
       {File("r.json", "d1", R"({"x": 1.0})")},
       {File("r.json", "d2", R"({"x": 1.001})")},
       true,
       ""},
      {"tolerance beyond",
       tolerant,
       {File("r.json", "d1", R"({"x": 1.0})")},
       {File("r.json", "d2", R"({"x": 1.5})")},
       false,
       "r.json: x: 1 vs 1.5"},
  };
  for (const Case& c : cases) {
    Result<Comparison> r = CompareOutputs(c.spec, c.x, c.y);
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.status().ToString();
    EXPECT_EQ(r->match, c.match) << c.name;
    EXPECT_NE(r->difference.find(c.says), std::string::npos) << c.name << ": " << r->difference;
  }
}

TEST(CompareOutputs, NotComparable) {
  CompareSpec tolerant;
  tolerant.tolerances.push_back({"r.json", TableFormat::kJson, {}, 0.01, 0});
  EXPECT_NE(CheckComparable(Named({"a"}), {File("b", "d")}).message().find("has no output \"a\""), std::string::npos);
  EXPECT_NE(CheckComparable(tolerant, {File("r.json", "d")}).message().find("content not fetched"), std::string::npos);
  EXPECT_NE(CheckComparable(tolerant, {File("r.json", "d", "nope")}).message().find("not valid JSON"),
            std::string::npos);
  Result<Comparison> r = CompareOutputs(Named({"a"}), {File("b", "d")}, {File("a", "d")});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("first: ", 0), 0u);
}

}  // namespace
}  // namespace idlegrid::verify
