// Data for sweeps (issue 28) through a real coordinator and agent: a
// directory input packed by `idlegrid submit` and mounted read-only (in a
// pilot sandbox shared by two tasks); each
// task of an item array reading its own shard; and the node's input cache,
// which fetches an input two tasks read once.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "common/fs.h"
#include "e2e/harness.h"

namespace idlegrid::testing {
namespace {

class DataInputsE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    grid_ = std::make_unique<Grid>(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(grid_->StartCoordinator().ok());
    Status started = grid_->StartAgent(1);
    ASSERT_TRUE(started.ok()) << started.message();
  }

  // The coordinator's idlegrid_artifact_bytes_total{direction="out"}.
  double BytesOut() {
    const std::string ca = grid_->coordinator_dir + "/pki/ca.crt";
    auto metrics =
        RunCommand({"curl", "-sS", "--fail", "--cacert", ca, "-H", "Authorization: Bearer " + grid_->admin_token,
                    "https://" + grid_->http_addr + "/metrics"});
    EXPECT_EQ(metrics.exit_code, 0) << metrics.err;
    const std::string key = "idlegrid_artifact_bytes_total{direction=\"out\"} ";
    const size_t at = metrics.out.find(key);
    EXPECT_NE(at, std::string::npos) << metrics.out;
    return at == std::string::npos ? -1 : std::strtod(metrics.out.c_str() + at + key.size(), nullptr);
  }

  std::string Push(const std::string& path) {
    auto r = grid_->Cli({"artifact", "push", path});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return Trim(r.out);
  }

  std::unique_ptr<Grid> grid_;
};

TEST_F(DataInputsE2E, ADirectoryInputIsReadableAndReadOnly) {
  const std::string dir = grid_->root + "/dataset";
  ASSERT_TRUE(MakeDirs(dir + "/sub").ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/sub/file.txt", "from the directory\n").ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/top.txt", "top\n").ok());
  const std::string manifest = grid_->Manifest("dir-input", {"copy", "/data/sub/file.txt", "/data"},
                                               "inputs:\n  - {dir: ./dataset, path: /data}\narray: {count: 2}\n");
  auto r = grid_->Cli({"submit", manifest, "--wait", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const v1::Job job = ParseJson<v1::Job>(r.out);
  ASSERT_EQ(job.state(), v1::SUCCEEDED) << r.out;
  ASSERT_EQ(job.spec().inputs_size(), 1);
  EXPECT_TRUE(job.spec().inputs(0).unpack());
  EXPECT_TRUE(grid_->WaitForLog(job.id(), "/data is read-only"));
  const std::string out = grid_->root + "/fetched";
  ASSERT_EQ(grid_->Cli({"fetch", job.id(), out}).exit_code, 0);
  // Two tasks of one array share a pilot sandbox, which links the tree in.
  for (const char* task : {"task-0", "task-1"}) {
    EXPECT_EQ(*ReadFile(out + "/" + task + "/copy.txt"), "from the directory\n") << task;
  }

  // The same tree pushed by hand is the same artifact (the tar is deterministic),
  // and `validate` names that digest without uploading anything.
  EXPECT_EQ(Push(dir), job.spec().inputs(0).artifact());
  auto validated = grid_->Cli({"validate", manifest, "--json"}, false);
  ASSERT_EQ(validated.exit_code, 0) << validated.out << validated.err;
  const v1::JobSpec spec = ParseJson<v1::JobSpec>(validated.out);
  ASSERT_EQ(spec.inputs_size(), 1);
  EXPECT_EQ(spec.inputs(0).artifact(), job.spec().inputs(0).artifact());
  EXPECT_TRUE(spec.inputs(0).unpack());
  // A symlink in the tree is refused before anything is uploaded.
  ASSERT_EQ(::symlink("/etc/passwd", (dir + "/link").c_str()), 0);
  auto refused = grid_->Cli({"artifact", "push", dir});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("link is a symlink"), std::string::npos) << refused.err;
}

TEST_F(DataInputsE2E, EachTaskReadsItsOwnShard) {
  const std::string shard0 = Push(grid_->WriteFile("shard0.bin", "shard number zero\n"));
  const std::string shard1 = Push(grid_->WriteFile("shard1.bin", "shard number one\n"));
  const std::string manifest = grid_->Manifest("shards", {"copy", "/data/shard.bin"},
                                               "inputs:\n  - {artifact: \"{{.shard}}\", path: /data/shard.bin}\n"
                                               "array:\n  items:\n    - {shard: \"" +
                                                   shard0 + "\"}\n    - {shard: \"" + shard1 + "\"}\n");
  auto r = grid_->Cli({"submit", manifest, "--wait", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const v1::Job job = ParseJson<v1::Job>(r.out);
  ASSERT_EQ(job.state(), v1::SUCCEEDED) << r.out;
  const std::string out = grid_->root + "/fetched";
  ASSERT_EQ(grid_->Cli({"fetch", job.id(), out}).exit_code, 0);
  EXPECT_EQ(*ReadFile(out + "/task-0/copy.txt"), "shard number zero\n");
  EXPECT_EQ(*ReadFile(out + "/task-1/copy.txt"), "shard number one\n");

  auto bad = grid_->Cli({"submit", grid_->Manifest("bad-shards", {"copy", "/data/shard.bin"},
                                                   "inputs:\n  - {artifact: \"{{.shard}}\", path: /data/shard.bin}\n"
                                                   "array:\n  items:\n    - {shard: \"" +
                                                       shard0 + "\"}\n    - {shard: nonsense}\n")});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("inputs[0].artifact: with array.items[1]: expected \"sha256:\""), std::string::npos)
      << bad.err;
}

TEST_F(DataInputsE2E, TwoTasksOnOneAgentFetchTheirInputOnce) {
  // The image is fetched (and cached) by a first job, so the second moves its input alone.
  auto warm = grid_->Cli({"submit", grid_->Manifest("warm", {"write", "warm"}), "--wait"});
  ASSERT_EQ(warm.exit_code, 0) << warm.out << warm.err;
  const std::string input = Push(grid_->WriteFile("big.bin", std::string(3 << 20, 'd')));
  const double before = BytesOut();
  const std::string manifest = grid_->Manifest("twice", {"copy", "/data/big.bin"},
                                               "inputs:\n  - {artifact: \"" + input +
                                                   "\", path: /data/big.bin}\n"
                                                   "array: {count: 2}\n");
  auto r = grid_->Cli({"submit", manifest, "--wait", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const v1::Job job = ParseJson<v1::Job>(r.out);
  ASSERT_EQ(job.state(), v1::SUCCEEDED) << r.out;
  const double moved = BytesOut() - before;
  EXPECT_GE(moved, 3 << 20) << "the input was fetched";
  EXPECT_LT(moved, 2 * (3 << 20)) << "and only once for both tasks";
  // The node says it holds it.
  auto nodes = grid_->WaitNodes(
      [&](const v1::ListNodesResponse& list) {
        for (const auto& n : list.nodes()) {
          for (const auto& d : n.advertisement().cached_inputs()) {
            if (d == input) return true;
          }
        }
        return false;
      },
      30000);
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  bool advertised = false;
  for (const auto& n : nodes->nodes()) {
    for (const auto& d : n.advertisement().cached_inputs()) advertised = advertised || d == input;
  }
  EXPECT_TRUE(advertised) << "the advertisement lists the cached input";
}

}  // namespace
}  // namespace idlegrid::testing
