// Item arrays whose inputs take placeholders (issue 28): each task reads its
// own shard. Submit checks every item's shard (the submitter may read it),
// and an attempt's artifact token opens its own task's shard only.
#include <gtest/gtest.h>

#include "coordinator/pipeline_support.h"

namespace idlegrid::coordinator::testing {
namespace {

constexpr char kArchive[] = "sha256:archive";

class InputShardsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    h_ = std::make_unique<PipelineHarness>(Options());
    ASSERT_TRUE(h_->Init().ok());
    for (const char* name : {"alice", "bob"}) {
      v1::Account a;
      a.set_name(name);
      a.set_role("requester");
      ASSERT_TRUE(c().tenancy().CreateAccount(a).ok()) << name;
    }
    ASSERT_TRUE(c().store()->RecordArtifact(kArchive, 10, "image", 1).ok());
    ASSERT_TRUE(c().store()->SetArtifactPublic(kArchive).ok());
  }

  Coordinator& c() { return h_->coordinator(); }

  std::string Upload(const std::string& content, const std::string& account) {
    auto writer = c().artifact_store()->NewWriter("", content.size());
    EXPECT_TRUE(writer.ok());
    EXPECT_TRUE((*writer)->Append(content.data(), content.size()).ok());
    auto digest = (*writer)->Commit();
    EXPECT_TRUE(digest.ok());
    EXPECT_TRUE(c().artifact_rights().Record(*digest, content.size(), "input").ok());
    EXPECT_TRUE(c().artifact_rights().HoldUpload(*digest, account, false).ok());
    return *digest;
  }

  // A two-task sweep reading {{.shard}} at /data/shard.bin.
  static v1::JobSpec Sweep(const std::vector<std::string>& shards) {
    v1::JobSpec spec = CpuJob("sweep");
    spec.set_array_count(static_cast<uint32_t>(shards.size()));
    for (const std::string& s : shards) (*spec.add_items()->mutable_values())["shard"] = s;
    auto* in = spec.add_inputs();
    in->set_artifact("{{.shard}}");
    in->set_path("/data/shard.bin");
    return spec;
  }

  std::unique_ptr<PipelineHarness> h_;
};

TEST_F(InputShardsTest, EachAttemptReadsItsOwnTasksShardAndNoOther) {
  const std::string shard0 = Upload("shard zero", "alice");
  const std::string shard1 = Upload("shard one", "alice");
  auto n = h_->AddNode("n");
  ASSERT_TRUE(n.ok());
  auto job = h_->Submit(Sweep({shard0, shard1}), "alice");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ASSERT_TRUE(h_->Pass(0, {*n}).ok());
  std::map<uint32_t, v1::Assignment> by_index;
  for (const auto& cmd : h_->TakeCommands(*n)) {
    if (cmd.has_assign()) by_index[cmd.assign().task_index()] = cmd.assign();
  }
  ASSERT_EQ(by_index.size(), 2u) << "both tasks assigned";
  for (const auto& [index, a] : by_index) {
    ASSERT_EQ(a.spec().inputs_size(), 1);
    const std::string& own = index == 0 ? shard0 : shard1;
    const std::string& other = index == 0 ? shard1 : shard0;
    EXPECT_EQ(a.spec().inputs(0).artifact(), own) << "the agent is sent its own shard, placeholder filled";
    EXPECT_EQ(a.spec().items_size(), 0);
    EXPECT_TRUE(c().artifact_rights().NodeMayRead(*n, a.attempt_id(), a.artifact_token(), own).ok()) << index;
    EXPECT_EQ(c().artifact_rights().NodeMayRead(*n, a.attempt_id(), a.artifact_token(), other).code(), Code::kNotFound)
        << "task " << index << " may not read the other task's shard";
  }
}

TEST_F(InputShardsTest, SubmitRefusesAShardTheSubmitterMayNotReadNamingTheItem) {
  const std::string mine = Upload("mine", "alice");
  const std::string theirs = Upload("theirs", "bob");
  auto refused = h_->Submit(Sweep({mine, theirs}), "alice");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find(theirs), std::string::npos) << refused.status().message();
  EXPECT_NE(refused.status().message().find("/data/shard.bin of array.items[1]"), std::string::npos)
      << refused.status().message();
  EXPECT_TRUE(h_->Submit(Sweep({mine, mine}), "alice").ok()) << "one shard for both tasks is fine";
}

TEST_F(InputShardsTest, SubmitRefusesAnItemWhoseShardIsNoDigest) {
  const std::string mine = Upload("mine", "alice");
  auto refused = h_->Submit(Sweep({mine, "../../etc/passwd"}), "alice");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("spec.inputs[0].artifact: with array.items[1]: expected \"sha256:\""),
            std::string::npos)
      << refused.status().message();
}

}  // namespace
}  // namespace idlegrid::coordinator::testing
