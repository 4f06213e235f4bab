// Tenancy in the coordinator (issue 11): quotas, deletion and retention with
// artifact collection, per-provider join tokens, per-attempt artifact tokens,
// and private images. Driven by hand (pipeline_support.h).
#include <gtest/gtest.h>

#include "common/digest.h"
#include "common/fs.h"
#include "coordinator/pipeline_support.h"

namespace idlegrid::coordinator::testing {
namespace {

constexpr char kArchive[] = "sha256:archive";

class TenancyTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(Options()); }

  void Start(Options options) {
    h_ = std::make_unique<PipelineHarness>(options);
    ASSERT_TRUE(h_->Init().ok());
    for (auto [name, role] : {std::pair{"alice", "requester"}, {"bob", "requester"}, {"lab", "provider"}}) {
      v1::Account a;
      a.set_name(name);
      a.set_role(role);
      ASSERT_TRUE(c().tenancy().CreateAccount(a).ok()) << name;
    }
    // The harness's image is the operator's; tenants may use it once public.
    ASSERT_TRUE(c().store()->RecordArtifact(kArchive, 10, "image", 1).ok());
    ASSERT_TRUE(c().store()->SetArtifactPublic(kArchive).ok());
  }

  Coordinator& c() { return h_->coordinator(); }

  // Stores `content` as an artifact uploaded by `account`.
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

  std::unique_ptr<PipelineHarness> h_;
};

TEST_F(TenancyTest, ASubmissionOverTheQueuedQuotaIsRefusedWithTheNumbers) {
  Options options;
  options.default_quota.max_queued_tasks = 5;
  Start(options);
  v1::JobSpec spec = CpuJob("sweep");
  spec.set_array_count(3);
  ASSERT_TRUE(h_->Submit(spec, "alice").ok());
  auto over = h_->Submit(spec, "alice");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), Code::kResourceExhausted);
  EXPECT_NE(over.status().message().find("5 queued tasks"), std::string::npos) << over.status().message();
  EXPECT_TRUE(h_->Submit(spec, "bob").ok()) << "another account's queue is its own";
  EXPECT_EQ(c().jobs().List("alice")->jobs_size(), 1) << "the refused job was not stored";
}

TEST_F(TenancyTest, AnAccountAtItsRunningQuotaStartsNothingMoreWhileOthersDo) {
  v1::Account capped;
  capped.set_name("carol");
  capped.set_role("requester");
  capped.mutable_quota()->set_max_running_tasks(1);
  ASSERT_TRUE(c().tenancy().CreateAccount(capped).ok());
  auto a = h_->AddNode("a");
  auto b = h_->AddNode("b");
  ASSERT_TRUE(a.ok() && b.ok());
  v1::JobSpec spec = CpuJob("carol-sweep");
  spec.set_array_count(3);
  auto carol = h_->Submit(spec, "carol");
  ASSERT_TRUE(carol.ok()) << carol.status().ToString();
  auto alice = h_->Submit(CpuJob("alice-one"), "alice");
  ASSERT_TRUE(alice.ok());
  ASSERT_TRUE(h_->Pass(0, {*a, *b}).ok());
  auto job = c().jobs().Get(*carol);
  ASSERT_TRUE(job.ok());
  int placed = 0;
  for (const auto& t : job->tasks()) placed += t.state() != v1::QUEUED;
  EXPECT_EQ(placed, 1) << "carol may run one task at a time; 8 free cores would take all three";
  EXPECT_NE(h_->Task(*alice)->state(), v1::QUEUED) << "alice is not held back by carol's quota";
}

TEST_F(TenancyTest, ATenantCannotNameAnotherTenantsPrivateInput) {
  const std::string secret = Upload("alice's data", "alice");
  v1::JobSpec spec = CpuJob("steal");
  auto* in = spec.add_inputs();
  in->set_artifact(secret);
  in->set_path("/in/data");
  auto bob = h_->Submit(spec, "bob");
  ASSERT_FALSE(bob.ok());
  EXPECT_EQ(bob.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(bob.status().message().find("upload it first"), std::string::npos)
      << "reads as a missing input: " << bob.status().message();
  EXPECT_TRUE(h_->Submit(spec, "alice").ok());
}

TEST_F(TenancyTest, DeletingASettledJobRemovesItAndTheArtifactsOnlyItHeld) {
  const std::string mine = Upload("only this job's input", "alice");
  const std::string shared = Upload("also used by another job", "alice");
  v1::JobSpec spec = CpuJob("one");
  for (const std::string& d : {mine, shared}) {
    auto* in = spec.add_inputs();
    in->set_artifact(d);
    in->set_path("/in/" + d.substr(7, 8));
  }
  auto job = h_->Submit(spec, "alice");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  v1::JobSpec other = CpuJob("two");
  *other.add_inputs() = spec.inputs(1);
  ASSERT_TRUE(h_->Submit(other, "alice").ok());

  auto early = c().jobs().Delete(*job);
  EXPECT_EQ(early.status().code(), Code::kFailedPrecondition) << "a queued job must be cancelled first";
  ASSERT_TRUE(c().jobs().Cancel(*job).ok());
  h_->clock().AdvanceMs(25LL * 3600 * 1000);  // past the uploads' own hold
  auto gone = c().jobs().Delete(*job);
  ASSERT_TRUE(gone.ok()) << gone.status().ToString();
  EXPECT_EQ(gone->artifacts_removed(), 1u);
  EXPECT_EQ(c().jobs().Get(*job).status().code(), Code::kNotFound);
  EXPECT_FALSE(c().artifact_store()->Has(mine)) << "held by nothing: removed";
  EXPECT_TRUE(c().artifact_store()->Has(shared)) << "still held by the other job";
}

TEST_F(TenancyTest, RetentionDeletesASettledJobAndExpiredUploadsAreCollected) {
  const std::string unused = Upload("never used by a job", "bob");
  v1::JobSpec spec = CpuJob("short-lived");
  spec.set_retention_seconds(60);
  auto job = h_->Submit(spec, "alice");
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(c().jobs().Cancel(*job).ok());
  ASSERT_TRUE(h_->Pass(30'000, {}).ok());
  EXPECT_TRUE(c().jobs().Get(*job).ok()) << "kept while its retention runs";
  ASSERT_TRUE(h_->Pass(61'000, {}).ok());
  EXPECT_EQ(c().jobs().Get(*job).status().code(), Code::kNotFound) << "deleted once its retention ran out";
  EXPECT_TRUE(c().artifact_store()->Has(unused)) << "an upload is held for a grace period";
  ASSERT_TRUE(h_->Pass(25LL * 3600 * 1000, {}).ok());
  EXPECT_FALSE(c().artifact_store()->Has(unused)) << "an upload no job used is collected after it";
}

TEST_F(TenancyTest, NodesJoinForTheProviderWhoseJoinTokenTheyUse) {
  auth::Caller lab{auth::Role::kProvider, auth::kRead | auth::kDrain, "lab", ""};
  v1::CreateJoinTokenRequest req;
  req.set_expires_seconds(3600);
  auto join = c().tenancy().CreateJoinToken(lab, req);
  ASSERT_TRUE(join.ok()) << join.status().ToString();
  auto node = h_->AddNode("lab-box", 0, join->token());
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  auto nodes = c().nodes().List();
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->nodes_size(), 1);
  EXPECT_EQ(nodes->nodes(0).provider(), "lab");
  auth::Caller bob{auth::Role::kRequester, auth::kSubmit | auth::kRead | auth::kCancel, "bob", ""};
  EXPECT_FALSE(c().tenancy().CreateJoinToken(bob, {}).ok()) << "bob's account is no provider";

  h_->clock().AdvanceMs(3601 * 1000);
  auto late = h_->AddNode("late-box", 0, join->token());
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), Code::kPermissionDenied);
  EXPECT_NE(late.status().message().find("expired"), std::string::npos) << late.status().message();
}

TEST_F(TenancyTest, AnAttemptsArtifactTokenOpensOnlyItsOwnArtifactsWhileItsLeaseLives) {
  const std::string input = Upload("the input", "alice");
  const std::string other_input = Upload("someone else's", "bob");
  auto a = h_->AddNode("a");
  auto b = h_->AddNode("b");
  ASSERT_TRUE(a.ok() && b.ok());
  v1::JobSpec spec = CpuJob("tokens");
  auto* in = spec.add_inputs();
  in->set_artifact(input);
  in->set_path("/in/x");
  ASSERT_TRUE(h_->Submit(spec, "alice").ok());
  ASSERT_TRUE(h_->Pass(0, {*a, *b}).ok());
  v1::Assignment assigned;
  std::string node;
  for (const std::string& n : {*a, *b}) {
    for (const auto& cmd : h_->TakeCommands(n)) {
      if (cmd.has_assign()) {
        assigned = cmd.assign();
        node = n;
      }
    }
  }
  ASSERT_FALSE(node.empty()) << "the job was not assigned";
  const std::string other_node = node == *a ? *b : *a;
  const std::string& id = assigned.attempt_id();
  const std::string& token = assigned.artifact_token();
  ASSERT_FALSE(token.empty());
  EXPECT_TRUE(c().artifact_rights().NodeMayRead(node, id, token, input).ok());
  EXPECT_TRUE(c().artifact_rights().NodeMayRead(node, id, token, kArchive).ok()) << "its image archive";
  EXPECT_TRUE(c().artifact_rights().NodeMayWrite(node, id, token).ok());
  EXPECT_EQ(c().artifact_rights().NodeMayRead(node, id, token, other_input).code(), Code::kNotFound)
      << "not this attempt's";
  EXPECT_EQ(c().artifact_rights().NodeMayRead(node, id, "igat_forged", input).code(), Code::kNotFound);
  EXPECT_EQ(c().artifact_rights().NodeMayRead(node, id, "", input).code(), Code::kNotFound);
  EXPECT_EQ(c().artifact_rights().NodeMayRead(other_node, id, token, input).code(), Code::kNotFound) << "another node";
  EXPECT_EQ(c().artifact_rights().NodeMayWrite(other_node, id, token).code(), Code::kNotFound);
  ASSERT_TRUE(h_->Accept(node, id).ok());
  ASSERT_TRUE(h_->Start(node, id).ok());
  ASSERT_TRUE(h_->Exit(node, id, 0).ok());
  EXPECT_EQ(c().artifact_rights().NodeMayRead(node, id, token, input).code(), Code::kNotFound) << "the lease has ended";
  EXPECT_EQ(c().artifact_rights().NodeMayWrite(node, id, token).code(), Code::kNotFound);
}

}  // namespace
}  // namespace idlegrid::coordinator::testing
