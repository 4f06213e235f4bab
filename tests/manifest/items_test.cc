// Item arrays: parsing items inline and from JSON Lines, placeholders checked
// against every item at submit with the field and line, and each task's
// spec expanded with its own item only.
#include "manifest/items.h"

#include <gtest/gtest.h>

#include <map>

#include "manifest/manifest.h"

namespace idlegrid::manifest {
namespace {

const std::string kBase = "apiVersion: idlegrid/v1\nname: sweep\nimage: sim@sha256:" + std::string(64, 'a') + "\n";

TEST(ItemsManifest, InlineItemsSetTheCountAndExpandPerTask) {
  auto spec = ParseManifest(
      kBase +
          "args: [\"--seed\", \"{{.seed}}\", \"--lr={{ .lr }}\"]\n"
          "env: {RUN: \"r{{.seed}}\", PLAIN: x}\n"
          "array:\n  items:\n    - {seed: 1, lr: 0.1}\n    - {seed: 2, lr: 0.2}\n    - {seed: 3, lr: 0.3}\n",
      "job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->array_count(), 3u);
  ASSERT_EQ(spec->items_size(), 3);
  const v1::JobSpec task = SpecForTask(*spec, 1);
  EXPECT_EQ(task.items_size(), 0) << "a task carries only its own values";
  ASSERT_EQ(task.args_size(), 3);
  EXPECT_EQ(task.args(0), "--seed");
  EXPECT_EQ(task.args(1), "2");
  EXPECT_EQ(task.args(2), "--lr=0.2");
  EXPECT_EQ(task.env().at("RUN"), "r2");
  EXPECT_EQ(task.env().at("PLAIN"), "x");
  EXPECT_EQ(task.array_count(), 3u);
  EXPECT_EQ(SpecForTask(*spec, 2).args(1), "3");
}

TEST(ItemsManifest, AJsonLinesFileIsReadRelativeToTheManifest) {
  std::map<std::string, std::string> files = {{"items.jsonl", "{\"seed\": 7}\n\n{\"seed\": \"eight\"}\n"}};
  auto reader = [&](const std::string& name) -> Result<std::string> {
    auto it = files.find(name);
    if (it == files.end()) return Status::InvalidArgument("cannot read " + name + ": No such file or directory");
    return it->second;
  };
  auto spec = ParseManifest(kBase + "args: [\"{{.seed}}\"]\narray: {items: items.jsonl}\n", "job.yaml", reader);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->array_count(), 2u);
  EXPECT_EQ(SpecForTask(*spec, 1).args(0), "eight");

  auto missing = ParseManifest(kBase + "array: {items: nope.jsonl}\n", "job.yaml", reader);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "job.yaml:4:16: array.items: cannot read nope.jsonl: No such file or directory");
  auto no_reader = ParseManifest(kBase + "array: {items: items.jsonl}\n", "job.yaml");
  ASSERT_FALSE(no_reader.ok());
  EXPECT_NE(no_reader.status().message().find("needs the manifest read from a file"), std::string::npos);
}

TEST(ItemsManifest, ErrorsNameTheFieldLineAndItem) {
  struct Case {
    std::string extra, expect;
  } cases[] = {
      {"args: [\"{{.seed}}\"]\narray:\n  items:\n    - {seed: 1}\n    - {sed: 2}\n",
       "job.yaml:4:8: args[0]: uses {{.seed}}, which array.items[1] does not have"},
      {"env:\n  SEED: \"{{.seed}}\"\narray: {items: [{x: 1}]}\n",
       "job.yaml:5:3: env.SEED: uses {{.seed}}, which array.items[0] does not have"},
      {"args: [\"{{.seed}}\"]\n", "job.yaml:4:8: args[0]: uses {{.seed}} but the job has no array.items"},
      {"args: [\"{{.seed}}\"]\narray: {count: 3}\n", "args[0]: uses {{.seed}} but the job has no array.items"},
      {"args: [\"{{seed}}\"]\narray: {items: [{seed: 1}]}\n", "args[0]: placeholder \"{{seed}}\" must name"},
      {"args: [\"{{.seed\"]\narray: {items: [{seed: 1}]}\n", "args[0]: unclosed placeholder"},
      {"args: [\"{{.9x}}\"]\narray: {items: [{seed: 1}]}\n", "args[0]: placeholder \"{{.9x}}\": a name is"},
      {"array: {count: 2, items: [{seed: 1}]}\n", "array.count: is 2 but array.items has 1 items"},
      {"array:\n  items:\n    - {seed: 1}\n    - 5\n", "job.yaml:7:7: array.items[1]: expected a map of values"},
      {"array:\n  items:\n    - {seed: [1, 2]}\n", "job.yaml:6:14: array.items[0].seed: expected a string, number"},
      {"array: {items: []}\n", "array.items: expected a list of maps"},
      {"array: {}\n", "array: expected count or items"},
      {"array:\n  items:\n    - {\"bad-key\": 1}\n",
       "job.yaml:6:7: array.items[0]: key \"bad-key\" is not a placeholder name"},
  };
  for (const auto& c : cases) {
    auto spec = ParseManifest(kBase + c.extra, "job.yaml");
    ASSERT_FALSE(spec.ok()) << c.extra;
    EXPECT_NE(spec.status().message().find(c.expect), std::string::npos)
        << c.extra << " -> " << spec.status().message();
  }
}

TEST(ItemsManifest, JsonSubmissionsAreCheckedTheSameWay) {
  v1::JobSpec spec;
  spec.set_api_version("idlegrid/v1");
  spec.set_name("sweep");
  spec.set_image("sim@sha256:" + std::string(64, 'a'));
  spec.add_args("{{.seed}}");
  (*spec.add_items()->mutable_values())["seed"] = "1";
  spec.add_items();
  spec.set_array_count(2);
  ApplyDefaults(&spec);
  Status st = ValidateJobSpec(spec);
  EXPECT_EQ(st.message(), "spec.args[0]: uses {{.seed}}, which array.items[1] does not have");
}

TEST(ItemsJsonl, ErrorsNameTheFileLineAndColumn) {
  struct Case {
    std::string text, expect;
  } cases[] = {
      {"{\"a\": 1}\n[1, 2]\n", "items.jsonl:2:1: each line must be one JSON object"},
      {"{\"a\": 1}\n{\"a\": {\"b\": 2}}\n", "items.jsonl:2:7: the value of \"a\" must be a string, number or boolean"},
      {"{\"a\": 1\n", "items.jsonl:1:"},
      {"\n\n", "items.jsonl: no items"},
      {"42\n", "items.jsonl:1:1: each line must be one JSON object"},
  };
  for (const auto& c : cases) {
    auto items = ParseItemsJsonl(c.text, "items.jsonl");
    ASSERT_FALSE(items.ok()) << c.text;
    EXPECT_NE(items.status().message().find(c.expect), std::string::npos)
        << c.text << " -> " << items.status().message();
  }
  auto ok = ParseItemsJsonl("{\"seed\": 1, \"name\": \"a b\"}\r\n{\"seed\": 2, \"name\": \"c\"}", "items.jsonl");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ(ok->size(), 2u);
  EXPECT_EQ((*ok)[0].values().at("name"), "a b");
  EXPECT_EQ((*ok)[1].values().at("seed"), "2");
}

TEST(Placeholders, TextWithoutBracesHasNoneAndExpansionLeavesUnknownNames) {
  EXPECT_TRUE(Placeholders("--seed 1 {single} }}")->empty());
  google::protobuf::Map<std::string, std::string> values;
  values["a"] = "1";
  EXPECT_EQ(ExpandPlaceholders("{{.a}}-{{.b}}-{{.a}}", values), "1-{{.b}}-1");
}

}  // namespace
}  // namespace idlegrid::manifest
