// Workflows' rows (schema v16) in both store backends: a workflow and its
// steps in spec order, a step's job claimed once (compare-and-set), state
// writes that leave a finished or cancelled workflow alone, the cache lookup
// of a resubmission (same account, succeeded, job still stored), and the
// upgrade from v15.
#include <gtest/gtest.h>

#include <string>

#include "store/store.h"
#include "store/store_fixture.h"

namespace idlegrid::store {
namespace {

using namespace backends;  // NOLINT: the shared fixture and helpers

class WorkflowStoreTest : public StoreFixture, public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override { CreateDatabase(GetParam()); }

  static v1::WorkflowSpec Diamond() {
    v1::WorkflowSpec spec;
    spec.set_api_version("idlegrid/v1");
    spec.set_name("diamond");
    spec.set_on_failure("stop");
    for (const char* name : {"a", "b", "c", "d"}) {
      v1::WorkflowStepSpec* s = spec.add_steps();
      s->set_name(name);
      *s->mutable_job() = Spec();
    }
    return spec;
  }

  static v1::WorkflowStep Row(const std::string& name, const std::string& state, const std::string& job = "",
                              const std::string& key = "", bool cached = false) {
    v1::WorkflowStep r;
    r.set_name(name);
    r.set_state(state);
    r.set_job_id(job);
    r.set_cache_key(key);
    r.set_cached(cached);
    return r;
  }

  v1::Workflow Get(const std::string& id) {
    auto wf = store_->GetWorkflow(id);
    EXPECT_TRUE(wf.ok()) << wf.status().ToString();
    return wf.ok() ? *wf : v1::Workflow();
  }

  // Runs job `id`'s task 0 to success.
  void Succeed(const std::string& id) {
    CreateJob(id);
    Assign(id, 0, "att-" + id, "n1");
    ReportOk("n1", Report("att-" + id, v1::EXITED), 4000);
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, WorkflowStoreTest, ::testing::Values(BackendKind::kSqlite, BackendKind::kPostgres),
                         [](const auto& info) { return backends::BackendName(info.param); });

TEST_P(WorkflowStoreTest, AWorkflowIsStoredWithAWaitingRowPerStepInSpecOrder) {
  ASSERT_TRUE(store_->CreateWorkflow("w-1", Diamond(), "alice", 1000).ok());
  const v1::Workflow wf = Get("w-1");
  EXPECT_EQ(wf.id(), "w-1");
  EXPECT_EQ(wf.account(), "alice");
  EXPECT_EQ(wf.state(), "running");
  EXPECT_EQ(wf.created_at_ms(), 1000);
  EXPECT_EQ(wf.spec().name(), "diamond");
  ASSERT_EQ(wf.steps_size(), 4);
  EXPECT_EQ(wf.steps(2).name(), "c");
  EXPECT_EQ(wf.steps(2).state(), "waiting");
  EXPECT_EQ(store_->CreateWorkflow("w-1", Diamond(), "alice", 1000).code(), Code::kAlreadyExists);
  EXPECT_EQ(store_->GetWorkflow("w-none").status().code(), Code::kNotFound);
}

TEST_P(WorkflowStoreTest, ListingIsPerAccountNewestFirst) {
  ASSERT_TRUE(store_->CreateWorkflow("w-1", Diamond(), "alice", 1000).ok());
  ASSERT_TRUE(store_->CreateWorkflow("w-2", Diamond(), "bob", 2000).ok());
  ASSERT_TRUE(store_->CreateWorkflow("w-3", Diamond(), "alice", 3000).ok());
  auto alices = store_->ListWorkflows("alice");
  ASSERT_TRUE(alices.ok());
  ASSERT_EQ(alices->size(), 2u);
  EXPECT_EQ((*alices)[0].id(), "w-3");
  EXPECT_EQ((*alices)[1].steps_size(), 4);
  EXPECT_EQ(store_->ListWorkflows("")->size(), 3u);
}

TEST_P(WorkflowStoreTest, AStepsJobIsClaimedOnce) {
  ASSERT_TRUE(store_->CreateWorkflow("w-1", Diamond(), "alice", 1000).ok());
  auto first = store_->ClaimWorkflowStep("w-1", Row("a", "waiting", "j-first", "sha256:k"));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, "j-first");
  auto second = store_->ClaimWorkflowStep("w-1", Row("a", "waiting", "j-second", "sha256:other"));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, "j-first") << "the later claim learns whose job the step runs";
  const v1::WorkflowStep a = Get("w-1").steps(0);
  EXPECT_EQ(a.job_id(), "j-first");
  EXPECT_EQ(a.cache_key(), "sha256:k");
  EXPECT_EQ(store_->ClaimWorkflowStep("w-1", Row("z", "waiting", "j-z")).status().code(), Code::kNotFound);
}

TEST_P(WorkflowStoreTest, UpdatesWriteStatesButNeverJobIdsAndStopOnceDone) {
  ASSERT_TRUE(store_->CreateWorkflow("w-1", Diamond(), "alice", 1000).ok());
  ASSERT_TRUE(store_->ClaimWorkflowStep("w-1", Row("a", "waiting", "j-a", "sha256:k")).ok());
  v1::WorkflowStep failed = Row("c", "failed");
  failed.set_message("job j-c task 0 nonzero_exit");
  WorkflowWrite w{"w-1", "running", false, {Row("a", "running"), failed}};
  ASSERT_TRUE(*store_->UpdateWorkflow(w, 2000));
  v1::Workflow wf = Get("w-1");
  EXPECT_EQ(wf.steps(0).state(), "running");
  EXPECT_EQ(wf.steps(0).job_id(), "j-a") << "an update never clears a claim";
  EXPECT_EQ(wf.steps(2).message(), "job j-c task 0 nonzero_exit");
  auto unsettled = store_->UnsettledWorkflows(10);
  ASSERT_TRUE(unsettled.ok());
  EXPECT_EQ(*unsettled, std::vector<std::string>{"w-1"});

  ASSERT_TRUE(*store_->UpdateWorkflow({"w-1", "failed", true, {}}, 3000));
  EXPECT_TRUE(store_->UnsettledWorkflows(10)->empty());
  EXPECT_FALSE(*store_->UpdateWorkflow({"w-1", "running", false, {Row("a", "succeeded")}}, 4000))
      << "a finished workflow is not written again";
  EXPECT_EQ(Get("w-1").state(), "failed");
  EXPECT_EQ(Get("w-1").steps(0).state(), "running");
  EXPECT_FALSE(*store_->UpdateWorkflow({"w-none", "running", false, {}}, 4000));
}

TEST_P(WorkflowStoreTest, ACancelledWorkflowStaysCancelledUntilSettled) {
  ASSERT_TRUE(store_->CreateWorkflow("w-1", Diamond(), "alice", 1000).ok());
  ASSERT_TRUE(*store_->UpdateWorkflow({"w-1", "cancelled", false, {}}, 2000));
  // A pass that read the workflow before the cancel writes "running": the cancel wins.
  ASSERT_TRUE(*store_->UpdateWorkflow({"w-1", "running", false, {Row("b", "running")}}, 2500));
  EXPECT_EQ(Get("w-1").state(), "cancelled");
  EXPECT_EQ(Get("w-1").steps(1).state(), "running");
  ASSERT_TRUE(*store_->UpdateWorkflow({"w-1", "cancelled", true, {Row("b", "cancelled")}}, 3000));
  EXPECT_FALSE(*store_->UpdateWorkflow({"w-1", "cancelled", false, {}}, 4000));
  EXPECT_TRUE(store_->UnsettledWorkflows(10)->empty());
}

TEST_P(WorkflowStoreTest, TheCacheFindsTheLatestSucceededStepOfTheSameAccountWhoseJobIsStored) {
  Succeed("j-old");
  Succeed("j-new");
  ASSERT_TRUE(store_->CreateWorkflow("w-1", Diamond(), "alice", 1000).ok());
  ASSERT_TRUE(store_->CreateWorkflow("w-2", Diamond(), "alice", 2000).ok());
  ASSERT_TRUE(store_->CreateWorkflow("w-3", Diamond(), "bob", 3000).ok());
  ASSERT_TRUE(store_->ClaimWorkflowStep("w-1", Row("a", "succeeded", "j-old", "sha256:k")).ok());
  ASSERT_TRUE(store_->ClaimWorkflowStep("w-2", Row("a", "succeeded", "j-new", "sha256:k")).ok());
  ASSERT_TRUE(store_->ClaimWorkflowStep("w-2", Row("b", "failed", "j-old", "sha256:failed")).ok());
  ASSERT_TRUE(store_->ClaimWorkflowStep("w-3", Row("a", "succeeded", "j-old", "sha256:bobs")).ok());
  ASSERT_TRUE(store_->ClaimWorkflowStep("w-2", Row("c", "succeeded", "j-deleted", "sha256:gone")).ok());

  auto hit = store_->CachedStepJob("alice", "sha256:k");
  ASSERT_TRUE(hit.ok()) << hit.status().ToString();
  EXPECT_EQ(hit->value_or(""), "j-new");
  EXPECT_FALSE(store_->CachedStepJob("alice", "sha256:failed")->has_value()) << "only succeeded steps";
  EXPECT_FALSE(store_->CachedStepJob("alice", "sha256:bobs")->has_value()) << "only the account's own";
  EXPECT_FALSE(store_->CachedStepJob("alice", "sha256:gone")->has_value()) << "only a job still stored";
}

TEST_P(WorkflowStoreTest, UpgradingFromV15KeepsJobsAndAddsNoWorkflows) {
  CreateJob("j1");
  const v1::Job before = Job("j1");
  store_.reset();
  ASSERT_TRUE(db_->Exec(kUndoV18).ok());
  ASSERT_TRUE(db_->Exec(kUndoV17).ok());
  ASSERT_TRUE(db_->Exec(kUndoV16).ok());
  ASSERT_TRUE(db_->SetSchemaVersion(15).ok());
  Open();
  EXPECT_EQ(*db_->SchemaVersion(), LatestSchemaVersion(GetParam()));
  EXPECT_GE(LatestSchemaVersion(GetParam()), 16);
  EXPECT_EQ(Job("j1").SerializeAsString(), before.SerializeAsString());
  EXPECT_TRUE(store_->ListWorkflows("")->empty());
  EXPECT_TRUE(store_->CreateWorkflow("w-1", Diamond(), "alice", 1000).ok());
}

}  // namespace
}  // namespace idlegrid::store
