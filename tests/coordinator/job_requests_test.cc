// Job requests (coordinator/job_requests.h) on their own: a real SQLite store,
// artifact store, image catalog, tenancy and verification, a manual clock and
// recording hooks, no coordinator. A refused submit stores nothing and says
// why; an accepted one is stamped with the defaults; a read carries the
// waiting reasons the hook fills; a partial cancel stops exactly its
// attempts; a job is deleted only once settled; a step's job is stored once
// under its claimed id; a log read with nothing new waits for a change.
#include "coordinator/job_requests.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/digest.h"
#include "common/test_support.h"
#include "coordinator/service_fixture.h"

namespace idlegrid::coordinator {
namespace {

const std::string kImage = "sha256:" + std::string(64, 'a');

class JobRequestsTest : public ServiceTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(ServiceTest::SetUp());
    images_ = std::make_unique<ImageCatalog>(store_.get(), artifacts_.get(), nullptr, &clock_, ImageCatalog::Options{},
                                             [] {});
    tenancy_ = std::make_unique<Tenancy>(store_.get(), &clock_, auth::Quota{});
    verify::VerificationPolicy policy;
    policy.default_mode = verify::Mode::kNone;
    verification_ = std::make_unique<VerificationService>(store_.get(), artifacts_.get(), nullptr, &clock_, policy,
                                                          VerificationService::kDefaultBacktrackWindowMs,
                                                          VerificationService::Hooks{}, 1);
    retention_ = std::make_unique<RetentionSweeper>(store_.get(), artifacts_.get(), &clock_);
    JobRequests::Hooks hooks;
    hooks.data_policy = [] { return std::make_shared<const sched::DataPolicy>(); };
    hooks.fill_waiting = [](v1::Job* job) {
      for (auto& t : *job->mutable_tasks()) {
        if (t.state() == v1::QUEUED) t.set_message("waiting: no node has joined");
      }
    };
    hooks.stop_attempts = [this](const std::vector<store::ActiveAttempt>& stopped) {
      for (const auto& a : stopped) stopped_.push_back(a.attempt_id);
    };
    hooks.settle_ledger = [this](const std::string& job_id) { settled_.push_back(job_id); };
    hooks.changed = [this] { ++changes_; };
    hooks.version = [this] { return version_; };
    hooks.wait_for_change = [this](uint64_t known, int wait_ms) {
      waited_ms_ += wait_ms;
      return known;
    };
    jobs_ = std::make_unique<JobRequests>(store_.get(), artifacts_.get(), images_.get(), tenancy_.get(),
                                          verification_.get(), nullptr, retention_.get(), &clock_,
                                          JobRequests::Settings{3600, sched::PolicyConfig{}}, std::move(hooks));
    ASSERT_TRUE(store_->RegisterImage({kImage, Sha256Digest("config"), Sha256Digest("archive")}, 1).ok());
    store::NodeRecord n;
    n.id = "n1";
    n.name = "n1";
    ASSERT_TRUE(store_->UpsertNode(n, "tok-n1").ok());
  }
  static v1::SubmitJobRequest Request(uint32_t tasks = 1) {
    v1::SubmitJobRequest r;
    v1::JobSpec* spec = r.mutable_spec();
    spec->set_api_version("idlegrid/v1");
    spec->set_name("sweep");
    spec->set_image(kImage);
    spec->mutable_resources()->set_cpu(1);
    spec->mutable_resources()->set_memory_bytes(1 << 28);
    spec->set_output_path("/out");
    spec->set_array_count(tasks);
    return r;
  }
  size_t StoredJobs() {
    auto jobs = store_->ListJobs("");
    EXPECT_TRUE(jobs.ok());
    return jobs.ok() ? jobs->size() : 0;
  }

  std::unique_ptr<ImageCatalog> images_;
  std::unique_ptr<Tenancy> tenancy_;
  std::unique_ptr<VerificationService> verification_;
  std::unique_ptr<RetentionSweeper> retention_;
  std::unique_ptr<JobRequests> jobs_;
  std::vector<std::string> stopped_, settled_;
  int changes_ = 0;
  uint64_t version_ = 7;
  int waited_ms_ = 0;
};

TEST_F(JobRequestsTest, ARefusedSubmitStoresNothingAndSaysWhy) {
  v1::SubmitJobRequest pinned = Request();
  pinned.mutable_spec()->set_pinned_node("n1");
  auto refused = jobs_->Submit(pinned, store::kOperatorAccount);
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("set by the coordinator only"), std::string::npos);

  v1::SubmitJobRequest unknown_image = Request();
  unknown_image.mutable_spec()->set_image("sha256:" + std::string(64, 'b'));
  auto no_image = jobs_->Submit(unknown_image, store::kOperatorAccount);
  EXPECT_EQ(no_image.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(no_image.status().message().find("push it first"), std::string::npos) << no_image.status().message();

  v1::SubmitJobRequest missing_input = Request();
  v1::InputSpec* in = missing_input.mutable_spec()->add_inputs();
  in->set_artifact(Sha256Digest("never uploaded"));
  in->set_path("/data/train.npz");
  auto no_input = jobs_->Submit(missing_input, store::kOperatorAccount);
  EXPECT_EQ(no_input.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(no_input.status().message().find("/data/train.npz"), std::string::npos) << no_input.status().message();

  v1::SubmitJobRequest bad_policy = Request();
  bad_policy.mutable_spec()->set_policy("fastest-please");
  EXPECT_EQ(jobs_->Submit(bad_policy, store::kOperatorAccount).status().code(), Code::kInvalidArgument);

  EXPECT_EQ(StoredJobs(), 0u);
  EXPECT_EQ(changes_, 0);
}

TEST_F(JobRequestsTest, AnAcceptedSubmitIsStampedWithTheDefaultsAndReadWithItsWaitingReasons) {
  auto job = jobs_->Submit(Request(2), store::kOperatorAccount);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->spec().retention_seconds(), 3600u) << "the settings' default";
  EXPECT_EQ(job->spec().data_class(), sched::kDataPublic) << "stamped at submit";
  EXPECT_EQ(job->tasks_size(), 2);
  EXPECT_EQ(changes_, 1);
  auto read = jobs_->Get(job->id());
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->tasks(0).message(), "waiting: no node has joined");
  EXPECT_EQ(jobs_->List("")->jobs_size(), 1);
  EXPECT_EQ(jobs_->List("alice")->jobs_size(), 0);
}

TEST_F(JobRequestsTest, APartialCancelStopsExactlyItsAttemptsAndAJobIsDeletedOnlyOnceSettled) {
  auto job = jobs_->Submit(Request(2), store::kOperatorAccount);
  ASSERT_TRUE(job.ok());
  auto committed = store_->CommitAssignments(
      {{"a0", job->id(), 0, "n1", clock_.NowMs()}, {"a1", job->id(), 1, "n1", clock_.NowMs()}});
  ASSERT_TRUE(committed.ok() && committed->size() == 2u);
  EXPECT_EQ(jobs_->Delete(job->id()).status().code(), Code::kFailedPrecondition) << "its tasks can still run";
  settled_.clear();  // a delete settles the ledger first, refused or not

  v1::CancelJobRequest some;
  some.set_job_id(job->id());
  some.add_task_indices(1);
  auto partly = jobs_->Cancel(some);
  ASSERT_TRUE(partly.ok()) << partly.status().ToString();
  EXPECT_EQ(stopped_, std::vector<std::string>{"a1"}) << "task 0's attempt keeps running";
  EXPECT_EQ(settled_, std::vector<std::string>{job->id()});
  EXPECT_EQ(partly->tasks(0).state(), v1::ASSIGNED);

  ASSERT_TRUE(jobs_->Cancel(job->id()).ok());
  EXPECT_EQ(std::count(stopped_.begin(), stopped_.end(), "a0"), 1) << "the whole cancel stops the rest";
  EXPECT_EQ(jobs_->Delete(job->id()).status().code(), Code::kFailedPrecondition)
      << "settled only once the node says the containers are gone";
  for (const char* attempt : {"a0", "a1"}) {
    v1::ReportAttemptRequest r;
    r.set_attempt_id(attempt);
    r.set_event(v1::STOPPED);
    ASSERT_TRUE(store_->ApplyAttemptReport("n1", r, clock_.NowMs()).ok());
  }
  auto gone = jobs_->Delete(job->id());
  ASSERT_TRUE(gone.ok()) << gone.status().ToString();
  EXPECT_EQ(jobs_->Get(job->id()).status().code(), Code::kNotFound);
}

TEST_F(JobRequestsTest, AStepsJobIsStoredOnceUnderItsClaimedIdAndCheckedLikeAnyOther) {
  v1::JobSpec spec = Request().spec();
  EXPECT_TRUE(jobs_->CheckJob(spec, store::kOperatorAccount).ok());
  EXPECT_EQ(StoredJobs(), 0u) << "a check stores nothing";
  ASSERT_TRUE(jobs_->SubmitJobAs(spec, "j-step-a", store::kOperatorAccount).ok());
  EXPECT_EQ(jobs_->SubmitJobAs(spec, "j-step-a", store::kOperatorAccount).code(), Code::kAlreadyExists);
  EXPECT_EQ(StoredJobs(), 1u);
  v1::JobSpec pinned = spec;
  pinned.set_pinned_node("n1");
  EXPECT_EQ(jobs_->CheckJob(pinned, store::kOperatorAccount).code(), Code::kInvalidArgument);
  EXPECT_EQ(jobs_->PinStepImage(spec).image(), kImage) << "a pushed image needs no pinning";
}

TEST_F(JobRequestsTest, ALogReadWithNothingNewWaitsForAChange) {
  auto job = jobs_->Submit(Request(), store::kOperatorAccount);
  ASSERT_TRUE(job.ok());
  auto none = jobs_->ReadLogs(job->id(), 0, 0);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(waited_ms_, 0) << "wait_ms 0 does not wait";
  ASSERT_TRUE(jobs_->ReadLogs(job->id(), 0, 250).ok());
  EXPECT_EQ(waited_ms_, 250);
}

}  // namespace
}  // namespace idlegrid::coordinator
