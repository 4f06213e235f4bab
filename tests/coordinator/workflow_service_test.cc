// The workflow service (coordinator/workflow_service.h) on its own: a real
// SQLite store, a manual clock and a fake jobs side, no coordinator. A step is
// submitted under the id it claimed, again under that same id after a pass
// that did not finish, never under a second one; refusals that pass later
// keep the claim, others fail the step; the sweep keeps its pace.
#include "coordinator/workflow_service.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "common/test_support.h"
#include "manifest/manifest.h"
#include "manifest/workflow.h"

namespace idlegrid::coordinator {
namespace {

const std::string kImage = "sim@sha256:" + std::string(64, 'a');

v1::SubmitWorkflowRequest Chain() {
  auto spec = manifest::ParseWorkflowManifest(
      "apiVersion: idlegrid/v1\nkind: Workflow\nname: chain\nsteps:\n"
      "  - name: a\n    image: " +
          kImage +
          "\n    args: [a]\n"
          "  - name: b\n    dependsOn: [a]\n    image: " +
          kImage + "\n",
      "wf.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  v1::SubmitWorkflowRequest request;
  if (spec.ok()) *request.mutable_spec() = *spec;
  return request;
}

// What the jobs side was asked, and what it answers: a submit that succeeds
// stores the job (queued), as the coordinator's does.
struct FakeJobs : StepJobs {
  store::Store* store = nullptr;
  const Clock* clock = nullptr;
  Status check = Status::Ok();
  Status submit = Status::Ok();
  std::vector<std::pair<std::string, std::string>> submitted;  // (job id, its args[0])
  std::vector<std::string> cancelled;
  Status CheckJob(const v1::JobSpec&, const std::string&) override { return check; }
  Status SubmitJobAs(const v1::JobSpec& spec, const std::string& job_id, const std::string&) override {
    submitted.emplace_back(job_id, spec.args_size() ? spec.args(0) : "");
    if (!submit.ok()) return submit;
    return store->CreateJob(job_id, spec, manifest::SpecDigest(spec), clock->NowMs(), "alice");
  }
  Status CancelStepJob(const std::string& job_id) override {
    cancelled.push_back(job_id);
    return Status::Ok();
  }
  v1::JobSpec PinStepImage(v1::JobSpec spec) override { return spec; }
};

class WorkflowServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = store::OpenSqliteStore(dir_.path() + "/state.db");
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
    jobs_.store = store_.get();
    jobs_.clock = &clock_;
    service_ = std::make_unique<WorkflowService>(store_.get(), &clock_, &jobs_, nullptr, 3600);
  }
  const v1::WorkflowStep& Step(const v1::Workflow& wf, const std::string& name) {
    for (const auto& s : wf.steps()) {
      if (s.name() == name) return s;
    }
    static const v1::WorkflowStep kNone;
    ADD_FAILURE() << "no step " << name;
    return kNone;
  }

  testing::TempDir dir_;
  ManualClock clock_;
  FakeJobs jobs_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<WorkflowService> service_;
};

TEST_F(WorkflowServiceTest, AStepIsSubmittedUnderTheIdItClaimedAndOnlyThatOne) {
  // The first submit does not get through (as after a crash between claim and
  // submit): the step keeps its claim, and the job is not stored.
  jobs_.submit = Status::Unavailable("store hiccup");
  Result<v1::Workflow> wf = service_->Submit(Chain(), "alice");
  ASSERT_TRUE(wf.ok()) << wf.status().message();
  ASSERT_EQ(jobs_.submitted.size(), 1u) << "only a: b waits for it";
  EXPECT_EQ(jobs_.submitted[0].second, "a");
  const std::string claimed = jobs_.submitted[0].first;
  EXPECT_EQ(Step(*wf, "a").job_id(), claimed);
  EXPECT_TRUE(Step(*wf, "b").job_id().empty());
  // The next sweep submits it again, under the id already claimed.
  jobs_.submit = Status::Ok();
  clock_.AdvanceMs(WorkflowService::kSweepMs);
  service_->Sweep();
  ASSERT_EQ(jobs_.submitted.size(), 2u);
  EXPECT_EQ(jobs_.submitted[1].first, claimed) << "never a second id for one step";
  ASSERT_TRUE(store_->GetJob(claimed).ok());
  service_->Sweep();  // within kSweepMs of the last: nothing
  clock_.AdvanceMs(WorkflowService::kSweepMs);
  service_->Sweep();  // a's job is stored and queued: nothing to submit
  EXPECT_EQ(jobs_.submitted.size(), 2u);
}

TEST_F(WorkflowServiceTest, AStepTheJobsSideRefusesAtSubmitStoresNothingAndNamesTheStep) {
  jobs_.check = Status::InvalidArgument("spec.image: no such image");
  Result<v1::Workflow> wf = service_->Submit(Chain(), "alice");
  ASSERT_FALSE(wf.ok());
  EXPECT_NE(wf.status().message().find("step a"), std::string::npos) << wf.status().message();
  auto all = service_->List("");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->workflows_size(), 0);
  EXPECT_TRUE(jobs_.submitted.empty());
}

TEST_F(WorkflowServiceTest, ARefusalThatMayPassLaterKeepsTheClaimAndAnyOtherFailsTheStep) {
  jobs_.submit = Status::ResourceExhausted("quota: 10 queued tasks");
  Result<v1::Workflow> wf = service_->Submit(Chain(), "alice");
  ASSERT_TRUE(wf.ok()) << wf.status().message();
  EXPECT_EQ(Step(*wf, "a").state(), "waiting") << "quota: tried again later";
  EXPECT_FALSE(Step(*wf, "a").job_id().empty());

  jobs_.submit = Status::InvalidArgument("spec.resources.gpus: no node can ever offer 9");
  clock_.AdvanceMs(WorkflowService::kSweepMs);
  service_->Sweep();
  Result<v1::Workflow> after = service_->Get(wf->id());
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(Step(*after, "a").state(), "failed");
  EXPECT_NE(Step(*after, "a").message().find("its job was refused: spec.resources.gpus"), std::string::npos)
      << Step(*after, "a").message();
  EXPECT_EQ(jobs_.submitted.size(), 2u) << "b never runs after a failed";
}

TEST_F(WorkflowServiceTest, CancelStopsWaitingStepsAndAnUnknownWorkflowIsNotFound) {
  Result<v1::Workflow> wf = service_->Submit(Chain(), "alice");
  ASSERT_TRUE(wf.ok()) << wf.status().message();
  const std::string a_job = Step(*wf, "a").job_id();
  Result<v1::Workflow> cancelled = service_->Cancel(wf->id());
  ASSERT_TRUE(cancelled.ok()) << cancelled.status().message();
  EXPECT_EQ(cancelled->state(), "cancelled");
  EXPECT_EQ(jobs_.cancelled, std::vector<std::string>{a_job}) << "the running step's job is cancelled";
  EXPECT_NE(Step(*cancelled, "b").state(), "running");
  clock_.AdvanceMs(WorkflowService::kSweepMs);
  service_->Sweep();
  EXPECT_EQ(jobs_.submitted.size(), 1u) << "nothing more is submitted for a cancelled workflow";
  EXPECT_EQ(service_->Get("w-none").status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace idlegrid::coordinator
