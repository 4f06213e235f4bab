// The dispatcher (coordinator/dispatcher.h) on its own: a real SQLite store,
// a real node table and image catalog, the real pipeline scheduler and a
// manual clock; one Pass() is one dispatch pass of the loop. A task with no
// node that may take it waits and says why (FillWaiting, Explain); a measured,
// connected node gets it as an Assign command carrying the lease epoch the
// commit returned, and the placement's clearing price is kept for the market;
// a task past its queue timeout is ended by the pass, not placed.
#include "coordinator/dispatcher.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "advert/advertisement.h"
#include "advert/node_key.h"
#include "common/digest.h"
#include "coordinator/pipeline_support.h"
#include "coordinator/service_fixture.h"
#include "sched/pipeline.h"

namespace idlegrid::coordinator {
namespace {

constexpr char kSecret[] = "igj_dispatch";

class DispatcherTest : public ServiceTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(ServiceTest::SetUp());
    ASSERT_TRUE(store_->RegisterImage({testing::kImage, "sha256:config", "sha256:archive"}, clock_.NowMs()).ok());
    tenancy_ = std::make_unique<Tenancy>(store_.get(), &clock_, auth::Quota{});
    images_ = std::make_unique<ImageCatalog>(store_.get(), artifacts_.get(), nullptr, &clock_, ImageCatalog::Options{},
                                             [] {});
    rights_ = std::make_unique<ArtifactRights>(store_.get(), images_.get(), &clock_, kSecret);
    sender_ = std::make_unique<AssignmentSender>(store_.get(), images_.get(), rights_.get(), &sessions_);
    nodes_ =
        std::make_unique<NodeTable>(store_.get(), &clock_, Options(), Sha256Digest(kSecret), tenancy_.get(), &sessions_,
                                    &counters_, testing::InertNodeHooks([this] { changes_.Notify(); }));
    terms_ = std::make_unique<AccountTermsCache>(store_.get(), &clock_, 0, std::map<std::string, double>{});
    standing_ = std::make_unique<StandingReader>(store_.get(), verify::VerificationPolicy{});
    dispatcher_ = std::make_unique<Dispatcher>(
        Dispatcher::Parts{store_.get(), &clock_, nodes_.get(), images_.get(), sender_.get(), terms_.get(),
                          standing_.get(), &counters_, &changes_},
        sched::NewPipelineScheduler(), sched::PolicyConfig{});
  }

  // A registered, measured, connected node asking `cpu_ask` per core-hour.
  std::string AddReadyNode(double cpu_ask) {
    v1::RegisterRequest request;
    request.set_join_secret(kSecret);
    request.set_name("node-a");
    request.mutable_info()->set_agent_version(AgentVersionString());
    *request.mutable_advertisement() = advert::SignAdvertisement(testing::AdOf(1, cpu_ask), key_);
    auto registered = nodes_->Register(request, "test");
    EXPECT_TRUE(registered.ok()) << registered.status().ToString();
    if (!registered.ok()) return "";
    const std::string id = registered->node_id();
    session_ = nodes_->OpenSession(id, testing::InfoOf("node-a"), "test");
    EXPECT_TRUE(nodes_->ReadinessHooks().update_measurement(id, [](v1::Measurement& m, const v1::Advertisement& ad) {
      m.set_passed(true);
      m.set_measured_at_ms(1);
      m.set_agent_version(ad.agent_version());
    }));
    return id;
  }

  std::string CreateJob(v1::JobSpec spec) {
    const std::string id = "j-" + std::to_string(++jobs_);
    Status st = store_->CreateJob(id, spec, "digest-" + id, clock_.NowMs());
    EXPECT_TRUE(st.ok()) << st.ToString();
    return id;
  }

  v1::Task TaskOf(const std::string& job_id) {
    auto job = store_->GetJob(job_id);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return job.ok() && job->tasks_size() > 0 ? job->tasks(0) : v1::Task();
  }

  advert::NodeKey key_ = advert::NodeKey::Generate();
  std::unique_ptr<Tenancy> tenancy_;
  std::unique_ptr<ImageCatalog> images_;
  std::unique_ptr<ArtifactRights> rights_;
  AgentSessions sessions_;
  EventCounters counters_;
  ChangeSignal changes_;
  std::unique_ptr<AssignmentSender> sender_;
  std::unique_ptr<NodeTable> nodes_;
  std::unique_ptr<AccountTermsCache> terms_;
  std::unique_ptr<StandingReader> standing_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::shared_ptr<AgentSession> session_;
  int jobs_ = 0;
};

TEST_F(DispatcherTest, ATaskNoNodeCanTakeWaitsAndSaysWhy) {
  const std::string job_id = CreateJob(testing::CpuJob("lonely"));
  dispatcher_->Pass();
  auto job = store_->GetJob(job_id);
  ASSERT_TRUE(job.ok());
  ASSERT_EQ(job->tasks(0).state(), v1::QUEUED);
  EXPECT_EQ(job->tasks(0).attempts_size(), 0);
  dispatcher_->FillWaiting(&*job);
  EXPECT_FALSE(job->tasks(0).message().empty());

  auto explained = dispatcher_->Explain(job_id);
  ASSERT_TRUE(explained.ok()) << explained.status().ToString();
  ASSERT_EQ(explained->tasks_size(), 1);
  EXPECT_EQ(explained->tasks(0).feasible_nodes(), 0u);
  EXPECT_FALSE(explained->tasks(0).text().empty());
  EXPECT_FALSE(dispatcher_->Explain("no-such-job").ok());
}

TEST_F(DispatcherTest, AReadyNodeGetsTheTaskWithTheCommittedEpoch) {
  const std::string node = AddReadyNode(/*cpu_ask=*/0.02);
  ASSERT_FALSE(node.empty());
  const std::string job_id = CreateJob(testing::CpuJob("placed"));
  dispatcher_->Pass();
  const v1::Task task = TaskOf(job_id);
  ASSERT_EQ(task.attempts_size(), 1) << task.DebugString();
  EXPECT_EQ(task.attempts(0).node_id(), node);
  EXPECT_EQ(task.attempts(0).state(), v1::ASSIGNED);

  auto command = session_->Next(0);
  ASSERT_TRUE(command.has_value());
  ASSERT_TRUE(command->has_assign()) << command->DebugString();
  const v1::Assignment& a = command->assign();
  EXPECT_EQ(a.attempt_id(), task.attempts(0).id());
  EXPECT_EQ(a.job_id(), job_id);
  EXPECT_EQ(a.lease_epoch(), task.attempts(0).lease_epoch());
  EXPECT_GT(a.lease_epoch(), 0u);
  EXPECT_FALSE(a.artifact_token().empty());
  EXPECT_EQ(a.image_archive_digest(), "sha256:archive");

  // The clearing price is the node's ask, and the market shows it.
  auto recent = dispatcher_->RecentPrices(clock_.NowMs());
  ASSERT_EQ(recent.count("cpu-core"), 1u);
  auto market = dispatcher_->Market();
  ASSERT_TRUE(market.ok()) << market.status().ToString();
  EXPECT_NE(market->text().find("recent cpu-core"), std::string::npos) << market->text();

  // A second pass finds nothing new to place: no second command.
  dispatcher_->Pass();
  EXPECT_FALSE(session_->Next(0).has_value());
}

TEST_F(DispatcherTest, ATaskPastItsQueueTimeoutEndsInsteadOfBeingPlaced) {
  v1::JobSpec spec = testing::CpuJob("impatient");
  spec.set_queue_timeout_seconds(30);
  const std::string job_id = CreateJob(spec);
  clock_.AdvanceMs(31'000);
  const std::string node = AddReadyNode(0);
  ASSERT_FALSE(node.empty());
  dispatcher_->Pass();
  const v1::Task task = TaskOf(job_id);
  EXPECT_NE(task.state(), v1::QUEUED);
  EXPECT_EQ(task.attempts_size(), 0) << task.DebugString();
  EXPECT_FALSE(session_->Next(0).has_value());
}

}  // namespace
}  // namespace idlegrid::coordinator
