// Image signatures end to end (docs/containment.md, Signatures), through the CLI with a
// real coordinator and agent: a node whose owner trusts a key runs only
// images that key signed (an unsigned one waits, and `idlegrid status` says
// why), and an operator requiring signed images refuses an unsigned one at
// submit until `image push --sign-key` signs it.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "common/fs.h"
#include "e2e/harness.h"
#include "image/signature.h"

namespace idlegrid::testing {
namespace {

bool Schedulable(const v1::ListNodesResponse& nodes) { return nodes.nodes_size() == 1 && nodes.nodes(0).schedulable(); }

class SignaturesE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    grid_ = std::make_unique<Grid>("Signatures");
    keys_ = grid_->root + "/keys";
    ASSERT_TRUE(MakeDirs(keys_, 0700).ok());
  }

  // `idlegrid image keygen` (no coordinator needed); the key's public half.
  image::ImagePublicKey Keygen(const std::string& name) {
    auto r = grid_->Cli({"image", "keygen", keys_ + "/" + name}, /*with_config=*/false);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    auto key = image::ParsePublicKey(r.out, "keygen output");
    EXPECT_TRUE(key.ok()) << key.status().ToString();
    return key.ok() ? *key : image::ImagePublicKey{};
  }

  std::string SubmitId(const std::string& manifest) {
    auto r = grid_->Cli({"submit", manifest});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return Trim(r.out);
  }

  std::unique_ptr<Grid> grid_;
  std::string keys_;
};

TEST_F(SignaturesE2E, ANodeTrustingAKeyRunsOnlyImagesItSignedAndStatusSaysWhy) {
  ASSERT_TRUE(grid_->StartCoordinator().ok());
  const image::ImagePublicKey owner = Keygen("owner");
  ASSERT_EQ(owner.name, "owner");
  auto again = grid_->Cli({"image", "keygen", keys_ + "/owner"}, false);
  EXPECT_EQ(again.exit_code, 1) << "a key is never overwritten";
  EXPECT_NE(again.err.find("refusing to overwrite"), std::string::npos) << again.err;

  // The owner's policy: its key by file, and the coordinator's readiness key
  // (which signs the benchmark every node runs first) as a line.
  auto readiness = ReadFile(grid_->coordinator_dir + "/readiness-image.pub");
  ASSERT_TRUE(readiness.ok()) << readiness.status().ToString();
  const std::string agent_dir = grid_->AgentDataDir(1);
  ASSERT_TRUE(MakeDirs(agent_dir, 0755).ok());
  auto pub = ReadFile(keys_ + "/owner.pub");
  ASSERT_TRUE(pub.ok());
  ASSERT_TRUE(WriteFileAtomic(agent_dir + "/owner.pub", *pub, 0644).ok());
  const std::string policy = "trustedImageKeys:\n  - owner.pub\n  - \"" + Trim(*readiness) + "\"\n";
  ASSERT_TRUE(WriteFileAtomic(agent_dir + "/policy.yaml", policy, 0644).ok());
  Status started = grid_->StartAgent(1, {"--policy", agent_dir + "/policy.yaml"});
  ASSERT_TRUE(started.ok()) << started.message();

  // The readiness benchmark ran under that policy: the node takes work, and
  // it advertises the two keys it trusts.
  auto nodes = grid_->WaitNodes(Schedulable);
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_TRUE(Schedulable(*nodes)) << (nodes->nodes_size() ? nodes->nodes(0).unschedulable_reason() : "no node");
  EXPECT_EQ(nodes->nodes(0).advertisement().policy().trusted_image_key_ids_size(), 2);

  // Unsigned: the job waits, and says why.
  const std::string unsigned_job = SubmitId(grid_->Manifest("unsigned", {"write", "never"}));
  auto waiting = grid_->WaitJob(unsigned_job, [](const v1::Job& j) {
    return j.tasks_size() == 1 && j.tasks(0).message().find("not signed") != std::string::npos;
  });
  ASSERT_TRUE(waiting.ok()) << waiting.status().ToString();
  ASSERT_EQ(waiting->tasks_size(), 1);
  EXPECT_EQ(waiting->tasks(0).state(), v1::QUEUED);
  EXPECT_EQ(waiting->tasks(0).attempts_size(), 0) << "never sent to the node";
  auto status = grid_->Cli({"status", unsigned_job});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("image not signed by a key the node's owner trusts"), std::string::npos) << status.out;
  ASSERT_EQ(grid_->Cli({"cancel", unsigned_job}).exit_code, 0);

  // Signed with the owner's key: a new job with the same image runs.
  const std::string image = grid_->PushTestImage();
  ASSERT_FALSE(image.empty());
  auto sign = grid_->Cli({"image", "sign", image, "--key", keys_ + "/owner.key"});
  ASSERT_EQ(sign.exit_code, 0) << sign.out << sign.err;
  EXPECT_NE(sign.out.find("signed " + image + " with key " + owner.id() + " (owner)"), std::string::npos) << sign.out;
  auto run = grid_->Cli({"submit", grid_->Manifest("signed", {"write", "signed-ran"}), "--wait", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  v1::Job job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(run.out, &job).ok()) << run.out;
  EXPECT_EQ(job.state(), v1::SUCCEEDED);
  ASSERT_EQ(job.tasks_size(), 1);
  ASSERT_GE(job.tasks(0).attempts_size(), 1);
  EXPECT_EQ(job.tasks(0).attempts(0).node_id(), grid_->node_ids[0]);
}

TEST_F(SignaturesE2E, RequireSignedImagesRefusesAtSubmitUntilThePushSignsIt) {
  const image::ImagePublicKey release = Keygen("release");
  ASSERT_TRUE(grid_->StartCoordinator({"--require-signed-images", "--trusted-image-key", keys_ + "/release.pub"}).ok());
  Status started = grid_->StartAgent(1);
  ASSERT_TRUE(started.ok()) << started.message();

  const std::string manifest = grid_->Manifest("gated", {"write", "gated-ran"});  // pushes, unsigned
  auto refused = grid_->Cli({"submit", manifest});
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_NE(refused.err.find(release.id() + " (release)"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("idlegrid image sign sha256:"), std::string::npos) << refused.err;

  const std::string archive = "/tmp/igtest-image-" + std::to_string(::getpid()) + ".tar";
  auto push = grid_->Cli({"image", "push", archive, "--sign-key", keys_ + "/release.key"});
  ASSERT_EQ(push.exit_code, 0) << push.out << push.err;
  EXPECT_NE(push.err.find("with key " + release.id()), std::string::npos) << push.err;
  auto run = grid_->Cli({"submit", manifest, "--wait"});
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
}

}  // namespace
}  // namespace idlegrid::testing
