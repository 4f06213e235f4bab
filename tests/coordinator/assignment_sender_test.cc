// AssignmentSender (coordinator/assignment_sender.h) on its own: a real
// SQLite store, image catalog and artifact rights, real agent sessions. A
// node not connected is Unavailable (the ack timeout then places the attempt
// again); a connected one gets the task's spec and the image by digest; a
// task cancelled meanwhile is told to stop instead; a job whose image is gone
// is refused with NotFound, never sent without an image.
#include "coordinator/assignment_sender.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "coordinator/pipeline_support.h"
#include "coordinator/service_fixture.h"

namespace idlegrid::coordinator {
namespace {

class AssignmentSenderTest : public ServiceTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(ServiceTest::SetUp());
    ASSERT_TRUE(store_->RegisterImage({testing::kImage, "sha256:config", "sha256:archive"}, clock_.NowMs()).ok());
    images_ = std::make_unique<ImageCatalog>(store_.get(), artifacts_.get(), nullptr, &clock_, ImageCatalog::Options{},
                                             [] {});
    rights_ = std::make_unique<ArtifactRights>(store_.get(), images_.get(), &clock_, "igj_sender");
    sender_ = std::make_unique<AssignmentSender>(store_.get(), images_.get(), rights_.get(), &sessions_);
  }

  std::string CreateJob(const v1::JobSpec& spec, const std::string& id = "j-1") {
    Status st = store_->CreateJob(id, spec, "digest-" + id, clock_.NowMs());
    EXPECT_TRUE(st.ok()) << st.ToString();
    return id;
  }

  // Attempt a-1 of the job's task 0 on node-a, as a re-send names it (no epoch).
  store::NewAttempt AttemptOf(const std::string& job) {
    store::NewAttempt a;
    a.attempt_id = "a-1";
    a.job_id = job;
    a.node_id = "node-a";
    a.now_ms = clock_.NowMs();
    return a;
  }

  std::unique_ptr<ImageCatalog> images_;
  std::unique_ptr<ArtifactRights> rights_;
  AgentSessions sessions_;
  std::unique_ptr<AssignmentSender> sender_;
};

TEST_F(AssignmentSenderTest, ConnectedNodesGetTheTaskSpecAndTheImageByDigest) {
  v1::JobSpec spec = testing::CpuJob("sent");
  (*spec.mutable_env())["SEED"] = "7";
  const std::string job = CreateJob(spec);
  const store::NewAttempt attempt = AttemptOf(job);

  Status unsent = sender_->Send(attempt);
  EXPECT_EQ(unsent.code(), Code::kUnavailable) << unsent.ToString();

  auto session = sessions_.Open("node-a");
  Status sent = sender_->Send(attempt);
  ASSERT_TRUE(sent.ok()) << sent.ToString();
  auto command = session->Next(0);
  ASSERT_TRUE(command.has_value());
  ASSERT_TRUE(command->has_assign()) << command->DebugString();
  const v1::Assignment& a = command->assign();
  EXPECT_EQ(a.attempt_id(), "a-1");
  EXPECT_EQ(a.job_id(), job);
  EXPECT_EQ(a.spec().command(0), "/bin/true");
  EXPECT_EQ(a.spec().env().at("SEED"), "7");
  EXPECT_EQ(a.image_archive_digest(), "sha256:archive");
  EXPECT_EQ(a.image_config_digest(), "sha256:config");
  EXPECT_FALSE(a.untrusted_tenant());  // the operator's own job
}

TEST_F(AssignmentSenderTest, ACancelledTaskIsToldToStopInstead) {
  const std::string job = CreateJob(testing::CpuJob("cancelled"));
  ASSERT_TRUE(store_->CancelJob(job, clock_.NowMs()).ok());
  auto session = sessions_.Open("node-a");
  ASSERT_TRUE(sender_->Send(AttemptOf(job)).ok());
  auto command = session->Next(0);
  ASSERT_TRUE(command.has_value());
  ASSERT_TRUE(command->has_cancel()) << command->DebugString();
  EXPECT_EQ(command->cancel().attempt_id(), "a-1");
}

TEST_F(AssignmentSenderTest, AJobWhoseImageIsGoneIsNotSent) {
  v1::JobSpec spec = testing::CpuJob("orphan");
  spec.set_image("sha256:2222222222222222222222222222222222222222222222222222222222222222");
  const std::string job = CreateJob(spec);
  auto session = sessions_.Open("node-a");
  Status st = sender_->Send(AttemptOf(job));
  EXPECT_EQ(st.code(), Code::kNotFound) << st.ToString();
  EXPECT_FALSE(session->Next(0).has_value());
}

}  // namespace
}  // namespace idlegrid::coordinator
