// Inputs that take item placeholders (each task its own shard), directory
// inputs (`unpack`, `dir:` resolved by the submitter) and their errors.
#include <gtest/gtest.h>

#include "manifest/items.h"
#include "manifest/manifest.h"

namespace idlegrid::manifest {
namespace {

const std::string kBase = "apiVersion: idlegrid/v1\nname: sweep\nimage: sim@sha256:" + std::string(64, 'a') + "\n";
const std::string kShard0 = "sha256:" + std::string(64, '0');
const std::string kShard1 = "sha256:" + std::string(64, '1');

TEST(InputItems, EachTaskGetsItsOwnShardAndPath) {
  auto spec = ParseManifest(kBase +
                                "inputs:\n  - {artifact: \"{{.shard}}\", path: \"/data/{{.name}}.npz\"}\n"
                                "array:\n  items:\n    - {shard: \"" +
                                kShard0 +
                                "\", name: a}\n"
                                "    - {shard: \"" +
                                kShard1 + "\", name: b}\n",
                            "job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_TRUE(InputsUsePlaceholders(*spec));
  const v1::JobSpec task1 = SpecForTask(*spec, 1);
  ASSERT_EQ(task1.inputs_size(), 1);
  EXPECT_EQ(task1.inputs(0).artifact(), kShard1);
  EXPECT_EQ(task1.inputs(0).path(), "/data/b.npz");
  const auto inputs0 = InputsForTask(*spec, 0);
  ASSERT_EQ(inputs0.size(), 1u);
  EXPECT_EQ(inputs0[0].artifact(), kShard0);
  EXPECT_EQ(inputs0[0].path(), "/data/a.npz");
  EXPECT_EQ(InputArtifacts(*spec), (std::vector<std::string>{kShard0, kShard1}));
}

TEST(InputItems, InputsWithoutPlaceholdersAreTheSameForEveryTask) {
  v1::JobSpec spec;
  auto* in = spec.add_inputs();
  in->set_artifact(kShard0);
  in->set_path("/in");
  (*spec.add_items()->mutable_values())["x"] = "1";
  EXPECT_FALSE(InputsUsePlaceholders(spec));
  EXPECT_EQ(InputsForTask(spec, 0)[0].artifact(), kShard0);
  EXPECT_EQ(InputArtifacts(spec), std::vector<std::string>{kShard0});
}

TEST(InputItems, ErrorsNameTheFieldAndTheItem) {
  struct Case {
    std::string name;
    std::string inputs;
    std::string items;
    std::string want;
  };
  const std::string ok0 = "{shard: \"" + kShard0 + "\"}";
  const std::vector<Case> cases = {
      {"MissingKey", "[{artifact: \"{{.shard}}\", path: /d}]", "[" + ok0 + ", {other: x}]",
       "inputs[0].artifact: uses {{.shard}}, which array.items[1] does not have"},
      {"NotADigest", "[{artifact: \"{{.shard}}\", path: /d}]", "[" + ok0 + ", {shard: \"sha256:nothex\"}]",
       "inputs[0].artifact: with array.items[1]: expected \"sha256:\" followed by 64 lowercase hex characters"},
      {"PathEscapes", "[{artifact: \"" + kShard0 + "\", path: \"/data/{{.p}}\"}]", "[{p: ok}, {p: ../etc}]",
       "inputs[0].path: with array.items[1]: must not contain \"..\""},
      {"RelativePath", "[{artifact: \"" + kShard0 + "\", path: \"{{.p}}\"}]", "[{p: rel}]",
       "inputs[0].path: with array.items[0]: must be an absolute path"},
      {"IntoTheOutputs", "[{artifact: \"" + kShard0 + "\", path: \"/out/{{.p}}\"}]", "[{p: x}]",
       "with array.items[0]: \"/out/x\" is inside the output directory"},
      {"TwoInputsOnePath",
       "[{artifact: \"" + kShard0 + "\", path: \"/d/{{.a}}\"}, {artifact: \"" + kShard1 + "\", path: \"/d/{{.b}}\"}]",
       "[{a: x, b: y}, {a: z, b: z}]", "inputs[1].path: with array.items[1]: duplicate path \"/d/z\""},
      {"MalformedPlaceholder", "[{artifact: \"{{shard}}\", path: /d}]", "[" + ok0 + "]",
       "inputs[0].artifact: placeholder \"{{shard}}\" must name an item value"},
  };
  for (const Case& c : cases) {
    auto spec = ParseManifest(kBase + "inputs: " + c.inputs + "\narray: {items: " + c.items + "}\n", "job.yaml");
    ASSERT_FALSE(spec.ok()) << c.name;
    EXPECT_NE(spec.status().message().find(c.want), std::string::npos) << c.name << ": " << spec.status().message();
  }
  auto no_items = ParseManifest(kBase + "inputs: [{artifact: \"{{.shard}}\", path: /d}]\n", "job.yaml");
  ASSERT_FALSE(no_items.ok());
  EXPECT_NE(no_items.status().message().find("uses {{.shard}} but the job has no array.items"), std::string::npos)
      << no_items.status().message();
}

TEST(DirectoryInputs, UnpackIsReadAndADirIsResolvedToAnUnpackedArtifact) {
  auto unpack =
      ParseManifest(kBase + "inputs: [{artifact: \"" + kShard0 + "\", path: /data, unpack: true}]\n", "job.yaml");
  ASSERT_TRUE(unpack.ok()) << unpack.status().ToString();
  EXPECT_TRUE(unpack->inputs(0).unpack());

  std::vector<std::string> asked;
  auto resolve = [&](const std::string& dir) -> Result<std::string> {
    asked.push_back(dir);
    return kShard1;
  };
  auto dir = ParseManifest(kBase + "inputs: [{dir: ./local, path: /data}]\n", "job.yaml", nullptr, resolve);
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  EXPECT_EQ(asked, std::vector<std::string>{"./local"});
  EXPECT_EQ(dir->inputs(0).artifact(), kShard1);
  EXPECT_TRUE(dir->inputs(0).unpack());
  EXPECT_EQ(dir->inputs(0).path(), "/data");
}

TEST(DirectoryInputs, DirErrorsPointAtTheDir) {
  auto failing = [](const std::string& dir) -> Result<std::string> {
    return Status::InvalidArgument(dir +
                                   "/link is a symlink: a directory input holds regular files and directories only");
  };
  auto bad = ParseManifest(kBase + "inputs:\n  - {dir: ./local, path: /data}\n", "job.yaml", nullptr, failing);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "job.yaml:5:11: inputs[0].dir: ./local/link is a symlink: a directory input holds regular files and "
            "directories only");
  auto unresolved = ParseManifest(kBase + "inputs:\n  - {dir: ./local, path: /data}\n", "job.yaml");
  ASSERT_FALSE(unresolved.ok());
  EXPECT_NE(unresolved.status().message().find("idlegrid artifact push DIR"), std::string::npos)
      << unresolved.status().message();
  auto both = ParseManifest(kBase + "inputs:\n  - {dir: ./local, artifact: \"" + kShard0 + "\", path: /data}\n",
                            "job.yaml", nullptr, failing);
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("give artifact or dir, not both"), std::string::npos);
  auto neither = ParseManifest(kBase + "inputs:\n  - {path: /data}\n", "job.yaml");
  ASSERT_FALSE(neither.ok());
  EXPECT_NE(neither.status().message().find("missing required field \"artifact\" (or \"dir\""), std::string::npos)
      << neither.status().message();
}

}  // namespace
}  // namespace idlegrid::manifest
