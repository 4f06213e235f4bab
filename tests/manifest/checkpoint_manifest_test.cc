// The checkpoint block of a manifest: parse, defaults, and errors naming the
// field and line.
#include <gtest/gtest.h>

#include "manifest/manifest.h"

namespace idlegrid::manifest {
namespace {

const std::string kBase = "apiVersion: idlegrid/v1\nname: ckpt\nimage: sim@sha256:" + std::string(64, 'a') + "\n";

TEST(CheckpointManifest, PathAndIntervalAreParsed) {
  auto spec = ParseManifest(kBase + "checkpoint:\n  path: /ckpt\n  interval: 30s\n", "job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->checkpoint_path(), "/ckpt");
  EXPECT_EQ(spec->checkpoint_interval_seconds(), 30u);
}

TEST(CheckpointManifest, IntervalDefaultsToAMinute) {
  auto spec = ParseManifest(kBase + "checkpoint: {path: /state}\n", "job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->checkpoint_interval_seconds(), kDefaultCheckpointIntervalSeconds);
}

TEST(CheckpointManifest, NoCheckpointBlockMeansNoCheckpoints) {
  auto spec = ParseManifest(kBase, "job.yaml");
  ASSERT_TRUE(spec.ok());
  EXPECT_TRUE(spec->checkpoint_path().empty());
  EXPECT_EQ(spec->checkpoint_interval_seconds(), 0u);
}

TEST(CheckpointManifest, ErrorsNameTheFieldAndLine) {
  struct Case {
    std::string extra, expect;
  } cases[] = {
      {"checkpoint:\n  interval: 5s\n", "checkpoint: missing required field \"path\""},
      {"checkpoint:\n  path: relative\n", "checkpoint.path"},
      {"checkpoint:\n  path: /out/ckpt\n", "overlaps the output directory"},
      {"output: /results\ncheckpoint:\n  path: /results\n", "overlaps the output directory"},
      {"inputs: [{artifact: sha256:" + std::string(64, 'b') + ", path: /ckpt/in}]\ncheckpoint: {path: /ckpt}\n",
       "overlaps inputs[0].path"},
      {"checkpoint:\n  path: /ckpt\n  interval: 2h\n", "checkpoint.interval"},
      {"checkpoint:\n  path: /ckpt\n  every: 5s\n", "job.yaml:6:3: unknown field \"every\" in checkpoint"},
  };
  for (const auto& c : cases) {
    auto spec = ParseManifest(kBase + c.extra, "job.yaml");
    ASSERT_FALSE(spec.ok()) << c.extra;
    EXPECT_NE(spec.status().message().find(c.expect), std::string::npos)
        << c.extra << " -> " << spec.status().message();
  }
}

}  // namespace
}  // namespace idlegrid::manifest
