// Comparing JSON and CSV outputs within bounds (verify/tolerance.h).
#include <gtest/gtest.h>

#include <string>

#include "verify/tolerance.h"

namespace idlegrid::verify {
namespace {

ToleranceRule Json(std::vector<std::string> fields = {}, double rel = 0, double abs = 0) {
  return {"r.json", TableFormat::kJson, std::move(fields), rel, abs};
}
ToleranceRule Csv(std::vector<std::string> fields = {}, double rel = 0, double abs = 0) {
  return {"r.csv", TableFormat::kCsv, std::move(fields), rel, abs};
}

struct Case {
  const char* name;
  ToleranceRule rule;
  const char* a;
  const char* b;
  bool match;
  const char* difference;  // a part of it, when not matching
};

TEST(Tolerance, ComparisonTable) {
  const Case cases[] = {
      {"json equal", Json(), R"({"x": 1, "s": "a"})", R"({"s":"a","x":1})", true, ""},
      {"json within relative", Json({}, 1e-3), R"({"x": 1000.0})", R"({"x": 1000.9})", true, ""},
      {"json beyond relative", Json({}, 1e-3), R"({"x": 1000.0})", R"({"x": 1001.5})", false,
       "x: 1000 vs 1001.5, allowed 1.001"},
      {"json within absolute", Json({}, 0, 0.01), R"([0.0, 1.0])", R"([0.005, 1.0])", true, ""},
      {"json nested path", Json({}, 0, 0.01), R"({"a": {"b": [1, 2]}})", R"({"a": {"b": [1, 2.5]}})", false,
       "a.b.1: 2 vs 2.5"},
      {"json listed field tolerant, others exact", Json({"mean"}, 0.1), R"({"mean": 1.0, "n": 10})",
       R"({"mean": 1.05, "n": 10})", true, ""},
      {"json unlisted number exact", Json({"mean"}, 0.1), R"({"mean": 1.0, "n": 10})", R"({"mean": 1.0, "n": 11})",
       false, "n: 10 vs 11 (compared exactly)"},
      {"json string differs", Json({}, 1), R"({"label": "cat"})", R"({"label": "dog"})", false,
       "label: strings differ"},
      {"json key only in one", Json(), R"({"a": 1})", R"({"a": 1, "b": 2})", false, "b: present in only one"},
      {"json array length", Json({}, 1), R"([1, 2])", R"([1, 2, 3])", false, "2 vs 3 elements"},
      {"json kinds", Json({}, 1), R"({"a": 1})", R"({"a": "1"})", false, "a: different kinds"},
      {"csv equal", Csv(), "x,y\n1,2\n", "x,y\r\n1,2\r\n", true, ""},
      {"csv within", Csv({"y"}, 0.01), "x,y\n1,2.0\n", "x,y\n1,2.01\n", true, ""},
      {"csv unlisted column exact", Csv({"y"}, 0.01), "x,y\n1,2\n", "x,y\n1.0001,2\n", false,
       "line 2, column \"x\": values differ"},
      {"csv beyond", Csv({}, 0, 0.5), "x\n1\n3\n", "x\n1\n4\n", false, "line 3, column \"x\": 3 vs 4"},
      {"csv rows", Csv(), "x\n1\n", "x\n1\n2\n", false, "1 vs 2 rows"},
      {"csv header", Csv(), "x\n1\n", "y\n1\n", false, "headers differ"},
      {"csv quoted", Csv(), "name,v\n\"a, b\",1\n", "name,v\n\"a, b\",1\n", true, ""},
  };
  for (const Case& c : cases) {
    Result<Comparison> r = CompareWithTolerance(c.rule, c.a, c.b);
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.status().ToString();
    EXPECT_EQ(r->match, c.match) << c.name << ": " << r->difference;
    if (!c.match) {
      EXPECT_NE(r->difference.find(c.difference), std::string::npos) << c.name << ": " << r->difference;
    } else {
      EXPECT_EQ(r->difference, "") << c.name;
    }
  }
}

TEST(Tolerance, MalformedOutputIsAClearError) {
  struct Bad {
    const char* name;
    ToleranceRule rule;
    const char* content;
    const char* says;
  };
  const Bad cases[] = {
      {"not json", Json(), "{\"x\": ", "r.json: not valid JSON"},
      {"json field missing", Json({"mean"}), R"({"avg": 1})", "r.json: has no field \"mean\""},
      {"json field not a number", Json({"mean"}), R"({"mean": "high"})", "field \"mean\" is not a number"},
      {"csv ragged", Csv(), "x,y\n1\n", "r.csv: line 2 has 1 columns, the header 2"},
      {"csv unclosed quote", Csv(), "x\n\"abc\n", "unclosed quote"},
      {"csv empty", Csv(), "", "empty CSV"},
      {"csv column missing", Csv({"z"}), "x\n1\n", "has no column \"z\""},
      {"csv column not numeric", Csv({"x"}), "x\nabc\n", "line 2, column \"x\": not a number"},
  };
  for (const Bad& c : cases) {
    Status s = CheckWellFormed(c.rule, c.content);
    ASSERT_FALSE(s.ok()) << c.name;
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << c.name;
    EXPECT_NE(s.message().find(c.says), std::string::npos) << c.name << ": " << s.message();
  }
  Result<Comparison> r = CompareWithTolerance(Json(), R"({"x": 1})", "garbage");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("second: ", 0), 0u) << r.status().message();
}

}  // namespace
}  // namespace idlegrid::verify
