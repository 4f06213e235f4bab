// The Store contract (store/store.h), run against every backend (SQLite and
// PostgreSQL) on a fresh database per test, plus a crash-safety test that
// SIGKILLs a writer process at a random point.
#include <gtest/gtest.h>
#include <google/protobuf/util/message_differencer.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "jobs/task_write.h"
#include "store/store.h"
#include "store/store_fixture.h"

namespace idlegrid::store {
namespace {

using namespace backends;  // NOLINT: the shared fixture and helpers
using google::protobuf::util::MessageDifferencer;

class StoreTest : public StoreFixture, public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override { CreateDatabase(GetParam()); }
};

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, ::testing::Values(BackendKind::kSqlite, BackendKind::kPostgres),
                         [](const auto& info) { return backends::BackendName(info.param); });

// --- schema -------------------------------------------------------------------

TEST_P(StoreTest, MigrationsCreateTheSchemaAndReopeningKeepsData) {
  const int64_t latest = backends::LatestSchemaVersion(GetParam());
  EXPECT_GT(latest, 0);
  EXPECT_EQ(*db_->SchemaVersion(), latest);
  for (const char* table :
       {"jobs", "tasks", "attempts", "nodes", "api_tokens", "artifacts", "images", "logs", "checkpoints"}) {
    auto has = db_->HasTable(table);
    ASSERT_TRUE(has.ok()) << has.status().ToString();
    EXPECT_TRUE(*has) << table;
  }
  CreateJob("j1", {.array_count = 2});
  Reopen();
  EXPECT_EQ(*db_->SchemaVersion(), latest) << "reopening migrates nothing again";
  v1::Job job = Job("j1");
  EXPECT_EQ(job.tasks_size(), 2);
  EXPECT_EQ(job.spec().name(), "sweep");
}

// Contract: both backends hold the same logical schema at the same version
// (column names and created indexes; the SQL types are each backend's own).
TEST(SchemaContract, BothBackendsHoldTheSameColumnsAndIndexesAtTheSameVersion) {
  std::map<BackendKind, std::vector<std::string>> outlines;
  std::map<BackendKind, int64_t> versions;
  for (BackendKind kind : {BackendKind::kSqlite, BackendKind::kPostgres}) {
    auto db = CreateTestDatabase(kind);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    auto opened = OpenStore((*db)->location());
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    opened->reset();
    auto outline = (*db)->SchemaOutline();
    ASSERT_TRUE(outline.ok()) << outline.status().ToString();
    outlines[kind] = *outline;
    versions[kind] = *(*db)->SchemaVersion();
  }
  EXPECT_EQ(versions[BackendKind::kSqlite], versions[BackendKind::kPostgres]);
  const auto& lite = outlines[BackendKind::kSqlite];
  const auto& pg = outlines[BackendKind::kPostgres];
  ASSERT_GT(lite.size(), 50u) << "the outline query found too little to compare";
  for (const char* probe : {"jobs.queue_timeout_ms", "tasks.job_seq", "attempts.seq", "index tasks_by_state"}) {
    EXPECT_NE(std::find(lite.begin(), lite.end(), probe), lite.end()) << probe;
  }
  std::vector<std::string> only_lite, only_pg;
  std::set_difference(lite.begin(), lite.end(), pg.begin(), pg.end(), std::back_inserter(only_lite));
  std::set_difference(pg.begin(), pg.end(), lite.begin(), lite.end(), std::back_inserter(only_pg));
  EXPECT_TRUE(only_lite.empty()) << "only in SQLite: " << ::testing::PrintToString(only_lite);
  EXPECT_TRUE(only_pg.empty()) << "only in PostgreSQL: " << ::testing::PrintToString(only_pg);
}

// Contract: a queued task whose job row is gone (a damaged database) is
// reported as data loss by both backends; SQLite used to skip it silently.
TEST_P(StoreTest, QueuedTaskWithoutItsJobIsDataLoss) {
  CreateJob("j1", {.array_count = 2});
  CreateJob("j2");
  // Damage below the store, past the foreign key (off on a plain SQLite
  // connection; dropped on PostgreSQL).
  if (GetParam() == BackendKind::kPostgres) {
    ASSERT_TRUE(db_->Exec("ALTER TABLE tasks DROP CONSTRAINT tasks_job_id_fkey").ok());
  }
  ASSERT_TRUE(db_->Exec("DELETE FROM jobs WHERE id = 'j1'").ok());
  auto queued = store_->QueuedTasks(100, 1000);
  ASSERT_FALSE(queued.ok()) << "returned " << queued->size() << " task(s)";
  EXPECT_EQ(queued.status().code(), Code::kDataLoss) << queued.status().ToString();
  EXPECT_NE(queued.status().message().find("j1"), std::string::npos) << queued.status().ToString();
}

// --- leases and checkpoints ------------------------------------------------------

TEST_P(StoreTest, CheckpointsAreFencedByEpochRestoredOnRetryAndNotKeptForACancelledTask) {
  CreateJob("j1", {.retries = 2, .idempotent = true});
  Assign("j1", 0, "a1", "n1");
  ReportOk("n1", Report("a1", v1::STARTED));
  const std::string digest = "sha256:" + std::string(64, 'c');
  auto checkpoint = [&](const std::string& attempt, uint64_t epoch, const std::string& file_digest) {
    v1::ReportAttemptRequest r = Report(attempt, v1::CHECKPOINTED);
    r.set_lease_epoch(epoch);
    auto* f = r.add_checkpoint();
    f->set_path("state");
    f->set_digest(file_digest);
    return store_->ApplyAttemptReport("n1", r, 3500);
  };
  // Every file must be a stored artifact.
  EXPECT_EQ(checkpoint("a1", 1, digest).status().code(), Code::kNotFound);
  ASSERT_TRUE(store_->RecordArtifact(digest, 10, "output", 3000).ok());
  // A report under another epoch is fenced off and changes nothing.
  EXPECT_EQ(checkpoint("a1", 2, digest).status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(TaskOf("j1", 0).checkpoint().files_size(), 0);
  ASSERT_TRUE(checkpoint("a1", 1, digest).ok());
  v1::Task task = TaskOf("j1", 0);
  ASSERT_EQ(task.checkpoint().files_size(), 1);
  EXPECT_EQ(task.checkpoint().attempt_id(), "a1");
  EXPECT_EQ(task.attempts(0).checkpoints(), 1u);
  EXPECT_EQ(task.attempts(0).lease_epoch(), 1u);

  // The retry runs under epoch 2 and starts from a1's checkpoint; a1's late
  // reports are refused.
  ReportOk("n1", Report("a1", v1::EXITED, 1));
  Assign("j1", 0, "a2", "n2", 5000);
  task = TaskOf("j1", 0);
  ASSERT_EQ(task.attempts_size(), 2);
  EXPECT_EQ(task.attempts(1).lease_epoch(), 2u);
  EXPECT_EQ(task.attempts(1).restored_from_attempt(), "a1");
  EXPECT_EQ(checkpoint("a1", 1, digest).status().code(), Code::kFailedPrecondition);

  // Once the user cancels, a checkpoint still in flight is not kept.
  ReportOk("n2", Report("a2", v1::STARTED), 5100);
  ASSERT_TRUE(store_->CancelJob("j1", 5200).ok());
  const std::string other = "sha256:" + std::string(64, 'd');
  ASSERT_TRUE(store_->RecordArtifact(other, 10, "output", 5200).ok());
  v1::ReportAttemptRequest late = Report("a2", v1::CHECKPOINTED);
  late.set_lease_epoch(2);
  late.add_checkpoint()->set_path("state");
  late.mutable_checkpoint(0)->set_digest(other);
  ASSERT_TRUE(store_->ApplyAttemptReport("n2", late, 5300).ok());
  EXPECT_EQ(TaskOf("j1", 0).checkpoint().files(0).digest(), digest);
}

// A verified task's attempt names its node's provider (the dispatcher does):
// it restores only a checkpoint a node of that same account wrote, so a
// replica never resumes from the state of the provider it checks.
TEST_P(StoreTest, AnAttemptNamingItsProviderRestoresOnlyThatProvidersCheckpoint) {
  AddNode("pa1", "pa");
  AddNode("pa2", "pa");
  AddNode("pb1", "pb");
  CreateJob("j1", {.retries = 3, .idempotent = true});
  const auto commit = [&](const std::string& attempt, const std::string& node, const std::string& provider,
                          int64_t now) {
    store::NewAttempt a{attempt, "j1", 0, node, now};
    a.restore_only_from = provider;
    auto r = store_->CommitAssignments({a});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->size(), 1u);
  };
  const auto restored = [&](int i) { return TaskOf("j1", 0).attempts(i).restored_from_attempt(); };
  commit("a1", "pa1", "pa", 2000);
  ReportOk("pa1", Report("a1", v1::STARTED));
  const std::string digest = "sha256:" + std::string(64, 'e');
  ASSERT_TRUE(store_->RecordArtifact(digest, 10, "output", 3000).ok());
  v1::ReportAttemptRequest cp = Report("a1", v1::CHECKPOINTED);
  cp.set_lease_epoch(1);
  cp.add_checkpoint()->set_path("state");
  cp.mutable_checkpoint(0)->set_digest(digest);
  ReportOk("pa1", cp, 3500);
  ReportOk("pa1", Report("a1", v1::EXITED, 1), 3600);

  commit("a2", "pb1", "pb", 4000);  // another provider: starts fresh
  EXPECT_EQ(restored(1), "");
  ReportOk("pb1", Report("a2", v1::STARTED), 4100);
  ReportOk("pb1", Report("a2", v1::EXITED, 1), 4200);

  commit("a3", "pa2", "pa", 5000);  // the writer's own account, another node: resumes
  EXPECT_EQ(restored(2), "a1");
  EXPECT_EQ(TaskOf("j1", 0).checkpoint().attempt_id(), "a1");
}

TEST_P(StoreTest, RefusesADatabaseFromANewerVersion) {
  store_.reset();
  ASSERT_TRUE(db_->SetSchemaVersion(99).ok());
  auto opened = OpenStore(path_);
  EXPECT_EQ(opened.status().code(), Code::kFailedPrecondition) << opened.status().ToString();
}

// --- jobs and tasks -------------------------------------------------------------

TEST_P(StoreTest, CreateJobMakesArrayCountQueuedTasks) {
  CreateJob("j1", {.array_count = 5}, /*now_ms=*/1234);
  v1::Job job = Job("j1");
  EXPECT_EQ(job.id(), "j1");
  EXPECT_EQ(job.spec_digest(), "sha256:spec-j1");
  EXPECT_EQ(job.created_at_ms(), 1234);
  EXPECT_TRUE(MessageDifferencer::Equals(job.spec(), Spec({.array_count = 5})));
  EXPECT_EQ(job.state(), v1::QUEUED);
  ASSERT_EQ(job.tasks_size(), 5);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(job.tasks(i).index(), static_cast<uint32_t>(i));
    EXPECT_EQ(job.tasks(i).state(), v1::QUEUED);
    EXPECT_EQ(job.tasks(i).attempts_size(), 0);
  }
  EXPECT_EQ(job.task_counts().at("queued"), 5u);

  // A plain job (array_count unset) still has its one task.
  CreateJob("plain", {.array_count = 0});
  EXPECT_EQ(Job("plain").tasks_size(), 1);
}

TEST_P(StoreTest, CreateJobWithATakenIdIsAlreadyExistsAndChangesNothing) {
  CreateJob("j1", {.array_count = 2});
  v1::JobSpec other = Spec({.array_count = 7});
  other.set_name("other");
  Status st = store_->CreateJob("j1", other, "sha256:other", 5000);
  EXPECT_EQ(st.code(), Code::kAlreadyExists) << st.ToString();
  v1::Job job = Job("j1");
  EXPECT_EQ(job.tasks_size(), 2);
  EXPECT_EQ(job.spec().name(), "sweep");
  EXPECT_EQ(job.spec_digest(), "sha256:spec-j1");
}

TEST_P(StoreTest, GetJobOfAnUnknownIdIsNotFound) { EXPECT_EQ(store_->GetJob("nope").status().code(), Code::kNotFound); }

TEST_P(StoreTest, ListJobsIsNewestFirstWithCounts) {
  CreateJob("b", {.array_count = 2});
  CreateJob("a", {.array_count = 3});
  Assign("a", 0, "att-1", "n1");
  auto jobs = store_->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].id(), "a");
  EXPECT_EQ((*jobs)[1].id(), "b");
  EXPECT_EQ((*jobs)[0].tasks_size(), 0);
  EXPECT_EQ((*jobs)[0].task_counts().at("queued"), 2u);
  EXPECT_EQ((*jobs)[0].task_counts().at("assigned"), 1u);
  EXPECT_EQ((*jobs)[0].state(), v1::RUNNING);
  EXPECT_EQ((*jobs)[1].state(), v1::QUEUED);
}

TEST_P(StoreTest, QueuedTasksComeInSubmissionOrder) {
  // Ids sort the other way round, so id order would show up as a failure.
  CreateJob("zz", {.array_count = 2}, 1000);
  CreateJob("aa", {.array_count = 3}, 1000);
  EXPECT_EQ(QueuedKeys(), (std::vector<std::string>{"zz/0", "zz/1", "aa/0", "aa/1", "aa/2"}));
  EXPECT_EQ(QueuedKeys(3), (std::vector<std::string>{"zz/0", "zz/1", "aa/0"}));

  Assign("zz", 1, "att-1", "n1");
  EXPECT_EQ(QueuedKeys(), (std::vector<std::string>{"zz/0", "aa/0", "aa/1", "aa/2"}));

  auto q = store_->QueuedTasks(1);
  ASSERT_TRUE(q.ok());
  ASSERT_EQ(q->size(), 1u);
  EXPECT_EQ((*q)[0].spec.name(), "sweep");
  EXPECT_EQ((*q)[0].queued_ms, 1000);
  EXPECT_TRUE((*q)[0].excluded_nodes.empty());
}

TEST_P(StoreTest, CommitAssignmentsAssignsOnlyStillQueuedTasks) {
  CreateJob("j", {.array_count = 3, .cpu = 1.5, .memory = 3 << 20, .gpus = 1});
  // The same task twice in one batch: only the first one takes it.
  auto first = store_->CommitAssignments(
      {{"att-1", "j", 0, "n1", 2000}, {"att-2", "j", 0, "n2", 2000}, {"att-3", "j", 1, "n2", 2000}});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->size(), 2u);
  EXPECT_EQ((*first)[0].attempt_id, "att-1");
  EXPECT_EQ((*first)[1].attempt_id, "att-3");
  // And again in a later batch.
  auto second = store_->CommitAssignments({{"att-4", "j", 0, "n3", 2100}});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_TRUE(second->empty());

  v1::Task t0 = TaskOf("j", 0);
  EXPECT_EQ(t0.state(), v1::ASSIGNED);
  ASSERT_EQ(t0.attempts_size(), 1);
  EXPECT_EQ(t0.attempts(0).id(), "att-1");
  EXPECT_EQ(t0.attempts(0).node_id(), "n1");
  EXPECT_EQ(t0.attempts(0).state(), v1::ASSIGNED);
  EXPECT_EQ(t0.attempts(0).assigned_at_ms(), 2000);
  EXPECT_EQ(t0.attempts(0).runtime(), "runc");
  EXPECT_EQ(TaskOf("j", 2).state(), v1::QUEUED);

  // The reservation is copied from the spec, so capacity accounting survives restarts.
  Reopen();
  auto active = store_->ActiveAttempts();
  ASSERT_TRUE(active.ok());
  ASSERT_EQ(active->size(), 2u);
  for (const auto& a : *active) {
    EXPECT_DOUBLE_EQ(a.cpu, 1.5);
    EXPECT_EQ(a.memory, uint64_t{3} << 20);
    EXPECT_EQ(a.gpus, 1u);
    EXPECT_EQ(a.state, v1::ASSIGNED);
  }
  auto on_n2 = store_->AssignedAttempts("n2");
  ASSERT_TRUE(on_n2.ok());
  ASSERT_EQ(on_n2->size(), 1u);
  EXPECT_EQ((*on_n2)[0].attempt_id, "att-3");
  EXPECT_EQ((*on_n2)[0].index, 1u);

  auto owner = store_->GetAttemptOwner("att-3");
  ASSERT_TRUE(owner.ok());
  EXPECT_EQ(owner->job_id, "j");
  EXPECT_EQ(owner->node_id, "n2");
  EXPECT_EQ(owner->index, 1u);
  EXPECT_EQ(owner->state, v1::ASSIGNED);
  EXPECT_EQ(store_->GetAttemptOwner("att-2").status().code(), Code::kNotFound);
}

TEST_P(StoreTest, CommitAssignmentsKeepsHowEachAttemptWasPlacedAndPriced) {
  CreateJob("j", {.array_count = 2, .gpus = 1});
  NewAttempt shared{"att-1", "j", 0, "n1", 2000, {"GPU-a"}};
  shared.placement.set_policy("cheapest");
  shared.placement.set_pricing_rule("pay-as-ask");
  shared.placement.set_ask_per_gpu_hour(0.25);
  shared.placement.set_bid_per_gpu_hour(0.5);
  shared.placement.set_gpu_milli(500);
  NewAttempt whole{"att-2", "j", 1, "n1", 2000, {"GPU-b"}};
  auto r = store_->CommitAssignments({shared, whole});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  Reopen();
  auto listed = store_->ActiveAttempts();
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  std::map<std::string, ActiveAttempt> active;
  for (const auto& a : *listed) active[a.attempt_id] = a;
  EXPECT_EQ(active["att-1"].gpu_milli, 500u);
  EXPECT_EQ(active["att-1"].device_uuids, std::vector<std::string>{"GPU-a"});
  EXPECT_EQ(active["att-2"].gpu_milli, 0u);
  v1::Task t0 = TaskOf("j", 0);
  ASSERT_EQ(t0.attempts_size(), 1);
  EXPECT_TRUE(MessageDifferencer::Equals(t0.attempts(0).placement(), shared.placement));
}

TEST_P(StoreTest, CancelledTasksAreNotAssigned) {
  CreateJob("j");
  ASSERT_TRUE(store_->CancelJob("j", 1500).ok());
  auto r = store_->CommitAssignments({{"att-1", "j", 0, "n1", 2000}});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
  EXPECT_EQ(TaskOf("j", 0).attempts_size(), 0);
}

TEST_P(StoreTest, FullLifeCycleWithOutputs) {
  CreateJob("j");
  Assign("j", 0, "att-1", "n1", 2000);

  auto accepted = store_->ApplyAttemptReport("n1", Report("att-1", v1::ACCEPTED), 2100);
  ASSERT_TRUE(accepted.ok()) << accepted.status().ToString();
  EXPECT_FALSE(accepted->outcome.changed);
  EXPECT_EQ(TaskOf("j", 0).state(), v1::ASSIGNED);

  ReportOk("n1", Report("att-1", v1::STARTED), 2200);
  v1::Task running = TaskOf("j", 0);
  EXPECT_EQ(running.state(), v1::RUNNING);
  EXPECT_EQ(running.attempts(0).state(), v1::RUNNING);
  EXPECT_EQ(running.attempts(0).started_at_ms(), 2200);
  EXPECT_EQ(Job("j").state(), v1::RUNNING);

  v1::ReportAttemptRequest exited = Report("att-1", v1::EXITED, 0);
  exited.set_runtime("runc");
  auto* f1 = exited.add_outputs();
  f1->set_path("result.csv");
  f1->set_digest("sha256:" + std::string(64, 'b'));
  f1->set_size(42);
  auto* f2 = exited.add_outputs();
  f2->set_path("plots/a.png");
  f2->set_digest("sha256:" + std::string(64, 'c'));
  f2->set_size(7);
  auto done = store_->ApplyAttemptReport("n1", exited, 2300);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->job_id, "j");
  EXPECT_EQ(done->index, 0u);
  EXPECT_EQ(done->outcome.task_state, v1::SUCCEEDED);

  Reopen();
  v1::Job job = Job("j");
  EXPECT_EQ(job.state(), v1::SUCCEEDED);
  ASSERT_EQ(job.tasks_size(), 1);
  EXPECT_EQ(job.tasks(0).state(), v1::SUCCEEDED);
  ASSERT_EQ(job.tasks(0).attempts_size(), 1);
  const v1::Attempt& a = job.tasks(0).attempts(0);
  EXPECT_EQ(a.state(), v1::SUCCEEDED);
  EXPECT_EQ(a.exit_code(), 0);
  EXPECT_EQ(a.started_at_ms(), 2200);
  EXPECT_EQ(a.finished_at_ms(), 2300);
  ASSERT_EQ(a.outputs_size(), 2);
  EXPECT_TRUE(MessageDifferencer::Equals(a.outputs(0), *f1));
  EXPECT_TRUE(MessageDifferencer::Equals(a.outputs(1), *f2));
  auto active = store_->ActiveAttempts();
  ASSERT_TRUE(active.ok());
  EXPECT_TRUE(active->empty()) << "a finished attempt still holds capacity";
}

TEST_P(StoreTest, ReportFromAnotherNodeIsPermissionDeniedAndChangesNothing) {
  CreateJob("j");
  Assign("j", 0, "att-1", "n1");
  v1::Job before = Job("j");
  for (auto event : {v1::ACCEPTED, v1::STARTED, v1::EXITED, v1::ERRORED, v1::REJECTED}) {
    auto r = store_->ApplyAttemptReport("n2", Report("att-1", event, 1), 3000);
    EXPECT_EQ(r.status().code(), Code::kPermissionDenied) << v1::AttemptEvent_Name(event);
  }
  EXPECT_TRUE(MessageDifferencer::Equals(before, Job("j")));
  EXPECT_EQ(store_->ApplyAttemptReport("n1", Report("no-such-attempt", v1::STARTED), 3000).status().code(),
            Code::kNotFound);
}

TEST_P(StoreTest, CancelledAttemptHoldsItsNodeUntilTheStopAndThenRefusesLateReports) {
  CreateJob("j");
  Assign("j", 0, "att-1", "n1");
  ReportOk("n1", Report("att-1", v1::STARTED));
  auto cancelled = store_->CancelJob("j", 4000);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status().ToString();
  v1::Job before = Job("j");
  EXPECT_EQ(before.state(), v1::CANCELLED);
  EXPECT_EQ(before.tasks(0).state(), v1::CANCELLED);
  // The container may still be running: the attempt keeps its node until the agent confirms.
  EXPECT_EQ(before.tasks(0).attempts(0).state(), v1::RUNNING);
  EXPECT_EQ(before.tasks(0).attempts(0).message(), "cancel requested");
  ASSERT_EQ(store_->ActiveAttempts()->size(), 1u);

  // Reports that do not end the container change nothing.
  for (auto event : {v1::STARTED, v1::ACCEPTED}) {
    auto r = store_->ApplyAttemptReport("n1", Report("att-1", event, 0), 4500);
    ASSERT_TRUE(r.ok()) << v1::AttemptEvent_Name(event);
    EXPECT_FALSE(r->outcome.changed);
  }
  EXPECT_TRUE(MessageDifferencer::Equals(before, Job("j")));

  // The agent confirms the stop: the attempt is cancelled and frees its node.
  auto stopped = store_->ApplyAttemptReport("n1", Report("att-1", v1::STOPPED), 5000);
  ASSERT_TRUE(stopped.ok()) << stopped.status().ToString();
  v1::Job after = Job("j");
  EXPECT_EQ(after.state(), v1::CANCELLED);
  EXPECT_EQ(after.tasks(0).failure_reason(), v1::USER_CANCEL);
  ASSERT_EQ(after.tasks(0).attempts_size(), 1);
  EXPECT_EQ(after.tasks(0).attempts(0).state(), v1::CANCELLED);
  EXPECT_EQ(after.tasks(0).attempts(0).failure_reason(), v1::USER_CANCEL);
  EXPECT_EQ(after.tasks(0).attempts(0).finished_at_ms(), 5000);
  EXPECT_TRUE(store_->ActiveAttempts()->empty());

  // Anything later is stale: refused, nothing changes.
  for (auto event : {v1::EXITED, v1::STARTED, v1::ERRORED, v1::ACCEPTED}) {
    auto late = store_->ApplyAttemptReport("n1", Report("att-1", event, 0), 6000);
    EXPECT_EQ(late.status().code(), Code::kFailedPrecondition) << v1::AttemptEvent_Name(event);
  }
  EXPECT_TRUE(MessageDifferencer::Equals(after, Job("j")));
}

TEST_P(StoreTest, CancelJobStopsActiveAttemptsAndCancelsUnfinishedTasks) {
  CreateJob("j", {.array_count = 4});
  Assign("j", 0, "att-0", "n1");
  ReportOk("n1", Report("att-0", v1::STARTED));
  ReportOk("n1", Report("att-0", v1::EXITED, 0));
  Assign("j", 1, "att-1", "n1");
  ReportOk("n1", Report("att-1", v1::STARTED));
  Assign("j", 2, "att-2", "n2");
  // Task 3 stays queued.

  auto r = store_->CancelJob("j", 9000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::map<std::string, std::string> stopped;  // attempt -> node
  for (const auto& a : r->stopped) {
    stopped[a.attempt_id] = a.node_id;
    EXPECT_EQ(a.job_id, "j");
  }
  EXPECT_EQ(stopped, (std::map<std::string, std::string>{{"att-1", "n1"}, {"att-2", "n2"}}));
  const v1::TaskState kWant[] = {v1::SUCCEEDED, v1::CANCELLED, v1::CANCELLED, v1::CANCELLED};
  ASSERT_EQ(r->job.tasks_size(), 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(r->job.tasks(i).state(), kWant[i]) << "task " << i;
  EXPECT_EQ(r->job.tasks(3).failure_reason(), v1::USER_CANCEL);
  EXPECT_EQ(r->job.tasks(0).attempts(0).state(), v1::SUCCEEDED);
  EXPECT_EQ(r->job.state(), v1::CANCELLED);
  auto active = store_->ActiveAttempts();
  ASSERT_TRUE(active.ok());
  EXPECT_EQ(active->size(), 2u) << "attempts hold their nodes until the agents confirm the stop";
  ReportOk("n1", Report("att-1", v1::STOPPED));
  ReportOk("n2", Report("att-2", v1::STOPPED));
  EXPECT_TRUE(store_->ActiveAttempts()->empty());
  EXPECT_EQ(Job("j").tasks(1).attempts(0).state(), v1::CANCELLED);

  // Cancelling again finds nothing left to stop.
  auto again = store_->CancelJob("j", 9500);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->stopped.empty());
  EXPECT_EQ(store_->CancelJob("nope", 9500).status().code(), Code::kNotFound);
}

TEST_P(StoreTest, FailNodeAttemptsRequeuesIdempotentTasksAndFailsTheRest) {
  CreateJob("idem", {.retries = 1, .idempotent = true});
  CreateJob("once", {.retries = 1, .idempotent = false});
  CreateJob("elsewhere");
  Assign("idem", 0, "att-i", "n1");
  ReportOk("n1", Report("att-i", v1::STARTED));
  Assign("once", 0, "att-o", "n1");  // assigned, not started
  Assign("elsewhere", 0, "att-e", "n2");

  auto lost = store_->FailNodeAttempts("n1", 7000);
  ASSERT_TRUE(lost.ok()) << lost.status().ToString();
  ASSERT_EQ(lost->size(), 2u);

  v1::Task idem = TaskOf("idem", 0);
  EXPECT_EQ(idem.state(), v1::QUEUED);
  EXPECT_EQ(idem.attempts(0).state(), v1::FAILED);
  EXPECT_EQ(idem.attempts(0).failure_reason(), v1::NODE_LOST);
  auto q = store_->QueuedTasks(10);
  ASSERT_TRUE(q.ok());
  ASSERT_EQ(q->size(), 1u);
  EXPECT_EQ((*q)[0].job_id, "idem");
  EXPECT_EQ((*q)[0].excluded_nodes, std::vector<std::string>{"n1"});
  EXPECT_EQ((*q)[0].queued_ms, 7000) << "the queue clock restarts on requeue";

  // Not idempotent: lost, waiting for the user's decision.
  v1::Task once = TaskOf("once", 0);
  EXPECT_EQ(once.state(), v1::LOST);
  EXPECT_EQ(once.failure_reason(), v1::NODE_LOST);
  EXPECT_NE(once.message().find("idlegrid retry"), std::string::npos) << once.message();
  EXPECT_EQ(once.attempts(0).state(), v1::FAILED);
  EXPECT_EQ(Job("once").state(), v1::LOST);
  EXPECT_EQ(TaskOf("elsewhere", 0).state(), v1::ASSIGNED);
  // Retry puts it back in the queue; abandon (on a second lost task) fails it.
  EXPECT_EQ(store_->ResolveLost("idem", true, 7100).status().code(), Code::kFailedPrecondition);
  auto retried = store_->ResolveLost("once", true, 7100);
  ASSERT_TRUE(retried.ok()) << retried.status().ToString();
  EXPECT_EQ(retried->tasks(0).state(), v1::QUEUED);
  EXPECT_EQ(store_->ResolveLost("once", false, 7200).status().code(), Code::kFailedPrecondition)
      << "nothing is lost any more";

  // Nothing is left on n1, so a second sweep changes nothing.
  v1::Job before = Job("idem");
  auto again = store_->FailNodeAttempts("n1", 8000);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());
  EXPECT_TRUE(MessageDifferencer::Equals(before, Job("idem")));
}

// Contract: both lists come in assignment order. SQLite used to return them in
// index order (ASSIGNED before RUNNING, or by task index), PostgreSQL in
// assignment order.
TEST_P(StoreTest, LostAndCancelledAttemptsComeInAssignmentOrder) {
  CreateJob("first");
  CreateJob("second");
  Assign("first", 0, "att-1", "n1", 2000);
  ReportOk("n1", Report("att-1", v1::STARTED));
  Assign("second", 0, "att-2", "n1", 2500);  // still ASSIGNED
  auto lost = store_->FailNodeAttempts("n1", 7000);
  ASSERT_TRUE(lost.ok()) << lost.status().ToString();
  ASSERT_EQ(lost->size(), 2u);
  EXPECT_EQ((*lost)[0].job_id, "first");
  EXPECT_EQ((*lost)[1].job_id, "second");

  CreateJob("array", {.array_count = 2});
  Assign("array", 1, "att-b", "n2", 3000);
  Assign("array", 0, "att-a", "n2", 3500);
  auto cancelled = store_->CancelJob("array", 9000);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status().ToString();
  ASSERT_EQ(cancelled->stopped.size(), 2u);
  EXPECT_EQ(cancelled->stopped[0].attempt_id, "att-b");
  EXPECT_EQ(cancelled->stopped[1].attempt_id, "att-a");
}

// Contract: a node's reliability counts sort every ended attempt the same way
// on both backends (jobs::FaultOf).
TEST_P(StoreTest, RecentNodeOutcomesSortAttemptsByFault) {
  CreateJob("ok");
  CreateJob("crash");
  CreateJob("platform", {.retries = 1});
  CreateJob("refused");
  Assign("ok", 0, "att-ok", "n1");
  ReportOk("n1", Report("att-ok", v1::EXITED, 0));
  Assign("crash", 0, "att-crash", "n1");
  ReportOk("n1", Report("att-crash", v1::EXITED, 2));
  Assign("platform", 0, "att-platform", "n1");
  ReportOk("n1", Report("att-platform", v1::ERRORED));
  Assign("refused", 0, "att-refused", "n1");
  ReportOk("n1", Report("att-refused", v1::REJECTED));
  auto outcomes = store_->RecentNodeOutcomes(0);
  ASSERT_TRUE(outcomes.ok()) << outcomes.status().ToString();
  const NodeOutcomes& n1 = (*outcomes)["n1"];
  EXPECT_EQ(n1.succeeded, 1u);
  EXPECT_EQ(n1.job_failed, 1u);
  EXPECT_EQ(n1.node_failed, 1u);
  EXPECT_EQ(n1.node_lost, 0u);
}

// The plan's acknowledgement write (jobs::PlanReport): an ACCEPTED, or a
// STARTED whose ACCEPTED was lost, takes the attempt off the ack-timeout list.
TEST_P(StoreTest, AnAcknowledgementStopsTheAckTimeout) {
  CreateJob("j", {.array_count = 3});
  Assign("j", 0, "att-0", "n1", 2000);
  Assign("j", 1, "att-1", "n1", 2000);
  Assign("j", 2, "att-2", "n1", 2000);
  ReportOk("n1", Report("att-0", v1::ACCEPTED));
  ReportOk("n1", Report("att-1", v1::STARTED));
  ReportOk("n1", Report("att-0", v1::ACCEPTED), 4000);  // a repeat changes nothing
  auto late = store_->UnacknowledgedAttempts(5000);
  ASSERT_TRUE(late.ok()) << late.status().ToString();
  ASSERT_EQ(late->size(), 1u);
  EXPECT_EQ((*late)[0].attempt_id, "att-2");
}

// The plan's retry-after and exclusion writes: a crash backs off, a busy node
// pauses the task briefly without ruling the node out.
TEST_P(StoreTest, RequeuedTasksWaitTheirRetryAfter) {
  CreateJob("crash", {.retries = 1});
  CreateJob("busy");
  Assign("crash", 0, "att-c", "n1");
  ReportOk("n1", Report("att-c", v1::EXITED, 1), 3000);
  Assign("busy", 0, "att-b", "n2");
  ReportOk("n2", Report("att-b", v1::REJECTED, 0, v1::NODE_BUSY), 3000);
  auto keys = [&](int64_t now_ms) {
    std::vector<std::string> out;
    auto q = store_->QueuedTasks(10, now_ms);
    EXPECT_TRUE(q.ok()) << q.status().ToString();
    if (q.ok()) {
      for (const auto& t : *q) out.push_back(t.job_id);
    }
    return out;
  };
  EXPECT_TRUE(keys(3499).empty());
  EXPECT_EQ(keys(3500), std::vector<std::string>{"busy"});
  EXPECT_EQ(keys(4000), (std::vector<std::string>{"crash", "busy"}));
  auto q = store_->QueuedTasks(10);
  ASSERT_TRUE(q.ok());
  ASSERT_EQ(q->size(), 2u);
  EXPECT_TRUE((*q)[0].excluded_nodes.empty()) << "a crash is the job's fault, not the node's";
  EXPECT_TRUE((*q)[1].excluded_nodes.empty()) << "a busy node is not unfit";
}

TEST_P(StoreTest, FailedAttemptsAreRetriedUntilTheBudgetIsSpent) {
  CreateJob("j", {.retries = 1});
  Assign("j", 0, "att-1", "n1");
  ReportOk("n1", Report("att-1", v1::STARTED));
  auto first = store_->ApplyAttemptReport("n1", Report("att-1", v1::EXITED, 3), 3000);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->outcome.retried);
  v1::Task t = TaskOf("j", 0);
  EXPECT_EQ(t.state(), v1::QUEUED);
  EXPECT_NE(t.message().find("3"), std::string::npos) << t.message();

  Assign("j", 0, "att-2", "n1", 4000);
  ReportOk("n1", Report("att-2", v1::STARTED), 4100);
  ReportOk("n1", Report("att-2", v1::EXITED, 3), 4200);
  t = TaskOf("j", 0);
  EXPECT_EQ(t.state(), v1::FAILED);
  EXPECT_EQ(t.failure_reason(), v1::NONZERO_EXIT);
  ASSERT_EQ(t.attempts_size(), 2);
  EXPECT_EQ(t.attempts(0).exit_code(), 3);
  EXPECT_EQ(t.attempts(1).state(), v1::FAILED);
  EXPECT_EQ(Job("j").state(), v1::FAILED);
}

TEST_P(StoreTest, ARejectionRequeuesExcludesTheNodeAndUsesNoRetry) {
  CreateJob("j", {.retries = 1});
  Assign("j", 0, "att-1", "n1");
  auto rejected = store_->ApplyAttemptReport("n1", Report("att-1", v1::REJECTED), 2500);
  ASSERT_TRUE(rejected.ok()) << rejected.status().ToString();
  EXPECT_TRUE(rejected->outcome.exclude_node);
  v1::Task t = TaskOf("j", 0);
  EXPECT_EQ(t.state(), v1::QUEUED);
  EXPECT_EQ(t.attempts(0).failure_reason(), v1::POLICY_REJECTED);
  auto q = store_->QueuedTasks(10, 2500);
  ASSERT_TRUE(q.ok());
  ASSERT_EQ(q->size(), 1u) << "a rejection goes elsewhere at once, without backoff";
  EXPECT_EQ((*q)[0].excluded_nodes, std::vector<std::string>{"n1"});

  // The job's one retry is still there: the first real failure is retried...
  Assign("j", 0, "att-2", "n2", 3000);
  ReportOk("n2", Report("att-2", v1::STARTED), 3100);
  auto failed = store_->ApplyAttemptReport("n2", Report("att-2", v1::EXITED, 1), 3200);
  ASSERT_TRUE(failed.ok()) << failed.status().ToString();
  EXPECT_TRUE(failed->outcome.retried);
  EXPECT_EQ(TaskOf("j", 0).state(), v1::QUEUED);
  // ...after a backoff: not offered before 1 s has passed.
  EXPECT_TRUE(store_->QueuedTasks(10, 3200 + 999)->empty());
  EXPECT_EQ(store_->QueuedTasks(10, 3200 + 1000)->size(), 1u);
  // ...and the second is final.
  Assign("j", 0, "att-3", "n2", 4000);
  ReportOk("n2", Report("att-3", v1::STARTED), 4100);
  ReportOk("n2", Report("att-3", v1::EXITED, 1), 4200);
  EXPECT_EQ(TaskOf("j", 0).state(), v1::FAILED);
  EXPECT_EQ(TaskOf("j", 0).attempts_size(), 3);
}

TEST_P(StoreTest, ExitWhoseStartReportWasLostStillCounts) {
  CreateJob("j");
  Assign("j", 0, "att-1", "n1", 2000);
  auto r = store_->ApplyAttemptReport("n1", Report("att-1", v1::EXITED, 0), 2500);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  v1::Task t = TaskOf("j", 0);
  EXPECT_EQ(t.state(), v1::SUCCEEDED);
  EXPECT_EQ(t.attempts(0).state(), v1::SUCCEEDED);
  EXPECT_GT(t.attempts(0).started_at_ms(), 0);
}

TEST_P(StoreTest, ExpireQueuedTasksHonorsTheQueueTimeout) {
  CreateJob("short", {.array_count = 2, .queue_timeout_seconds = 10}, /*now_ms=*/1000);
  CreateJob("forever", {.queue_timeout_seconds = 0}, 1000);
  Assign("short", 1, "att-1", "n1", 1500);  // assigned tasks do not expire

  auto none = store_->ExpireQueuedTasks(11000);  // exactly the timeout: not yet longer
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(*none, 0);
  auto one = store_->ExpireQueuedTasks(11001);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, 1);
  v1::Task t = TaskOf("short", 0);
  EXPECT_EQ(t.state(), v1::FAILED);
  EXPECT_EQ(t.failure_reason(), v1::QUEUE_TIMEOUT);
  // PostgreSQL restates jobs::QueueTimedOut in SQL; the boundaries above and
  // the message pin it to the one rule.
  EXPECT_EQ(t.message(), jobs::QueueTimeoutMove().message);
  EXPECT_EQ(TaskOf("short", 1).state(), v1::ASSIGNED);
  EXPECT_EQ(TaskOf("forever", 0).state(), v1::QUEUED);

  auto much_later = store_->ExpireQueuedTasks(int64_t{1} << 40);
  ASSERT_TRUE(much_later.ok());
  EXPECT_EQ(*much_later, 0);
}

TEST_P(StoreTest, ARequeuedTaskWaitsAFullQueueTimeoutAgain) {
  CreateJob("j", {.queue_timeout_seconds = 10}, 0);
  Assign("j", 0, "att-1", "n1", 5000);
  ReportOk("n1", Report("att-1", v1::REJECTED), 9000);
  auto early = store_->ExpireQueuedTasks(15000);
  ASSERT_TRUE(early.ok());
  EXPECT_EQ(*early, 0);
  auto late = store_->ExpireQueuedTasks(19001);
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(*late, 1);
}

TEST_P(StoreTest, FailQueuedTaskFailsOnlyQueuedTasks) {
  CreateJob("j", {.array_count = 3});
  Status st = store_->FailQueuedTask("j", 0, v1::PLATFORM_FAILURE, "unknown image", 2000);
  ASSERT_TRUE(st.ok()) << st.ToString();
  v1::Task t = TaskOf("j", 0);
  EXPECT_EQ(t.state(), v1::FAILED);
  EXPECT_EQ(t.failure_reason(), v1::PLATFORM_FAILURE);
  EXPECT_EQ(t.message(), "unknown image");

  // Illegal transitions through the store are refused and change nothing.
  Assign("j", 1, "att-1", "n1");
  ReportOk("n1", Report("att-1", v1::STARTED));
  ReportOk("n1", Report("att-1", v1::EXITED, 0));
  ASSERT_EQ(TaskOf("j", 1).state(), v1::SUCCEEDED);
  v1::Job before = Job("j");
  EXPECT_EQ(store_->FailQueuedTask("j", 1, v1::PLATFORM_FAILURE, "x", 3000).code(), Code::kFailedPrecondition);
  EXPECT_EQ(store_->FailQueuedTask("j", 0, v1::PLATFORM_FAILURE, "x", 3000).code(), Code::kFailedPrecondition)
      << "FAILED -> FAILED with a new reason";
  // An assigned task has an attempt holding capacity on a node: failing the
  // task alone would strand it.
  Assign("j", 2, "att-2", "n1");
  v1::Job assigned = Job("j");
  EXPECT_EQ(store_->FailQueuedTask("j", 2, v1::PLATFORM_FAILURE, "x", 3000).code(), Code::kFailedPrecondition);
  EXPECT_TRUE(MessageDifferencer::Equals(assigned, Job("j")));
  EXPECT_EQ(before.tasks(1).state(), Job("j").tasks(1).state());
  EXPECT_EQ(store_->FailQueuedTask("j", 9, v1::PLATFORM_FAILURE, "x", 3000).code(), Code::kNotFound);
}

// --- logs ---------------------------------------------------------------------

v1::LogChunk Chunk(uint32_t index, const std::string& stream, const std::string& data) {
  v1::LogChunk c;
  c.set_task_index(index);
  c.set_attempt_id("att-" + std::to_string(index));
  c.set_stream(stream);
  c.set_data(data);
  return c;
}

TEST_P(StoreTest, LogsReadBackInOrderAfterASequenceNumber) {
  const std::string binary("a\0b\xff", 4);
  ASSERT_TRUE(store_->AppendLogs("j", {Chunk(0, "stdout", "one\n"), Chunk(1, "stderr", binary)}, {}).ok());
  ASSERT_TRUE(store_->AppendLogs("k", {Chunk(0, "stdout", "other job\n")}, {}).ok());
  ASSERT_TRUE(store_->AppendLogs("j", {Chunk(0, "stdout", "three\n")}, {}).ok());

  auto all = store_->ReadLogs("j", 0, 100);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].data(), "one\n");
  EXPECT_EQ((*all)[1].data(), binary);
  EXPECT_EQ((*all)[1].stream(), "stderr");
  EXPECT_EQ((*all)[1].task_index(), 1u);
  EXPECT_EQ((*all)[1].attempt_id(), "att-1");
  EXPECT_EQ((*all)[2].data(), "three\n");
  EXPECT_LT((*all)[0].seq(), (*all)[1].seq());
  EXPECT_LT((*all)[1].seq(), (*all)[2].seq());

  auto after_first = store_->ReadLogs("j", (*all)[0].seq(), 100);
  ASSERT_TRUE(after_first.ok());
  ASSERT_EQ(after_first->size(), 2u);
  EXPECT_EQ((*after_first)[0].seq(), (*all)[1].seq());

  auto limited = store_->ReadLogs("j", 0, 1);
  ASSERT_TRUE(limited.ok());
  ASSERT_EQ(limited->size(), 1u);
  EXPECT_EQ((*limited)[0].data(), "one\n");

  auto caught_up = store_->ReadLogs("j", (*all)[2].seq(), 100);
  ASSERT_TRUE(caught_up.ok());
  EXPECT_TRUE(caught_up->empty());
}

// Past its cap a task's log keeps its head and its tail, with one note
// between, and counts what it dropped; other tasks are untouched.
TEST_P(StoreTest, LogCapKeepsTheHeadAndTheTailAndCountsWhatItDropped) {
  CreateJob("j", {.array_count = 2});
  const jobs::LogCap cap{10, 6};
  ASSERT_TRUE(store_->AppendLogs("j", {Chunk(0, "stdout", "0123456789"), Chunk(1, "stdout", "small")}, cap).ok());
  ASSERT_TRUE(store_->AppendLogs("j", {Chunk(0, "stdout", "abcdef")}, cap).ok());
  ASSERT_TRUE(store_->AppendLogs("j", {Chunk(0, "stderr", "ghij")}, cap).ok());
  auto all = store_->ReadLogs("j", 0, 100);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  std::vector<std::string> rows;
  for (const auto& c : *all)
    rows.push_back(std::to_string(c.task_index()) + ":" + c.stream() + ":" + c.data().substr(0, 12));
  EXPECT_EQ(rows, (std::vector<std::string>{"0:stdout:0123456789", "1:stdout:small", "0:idlegrid:[idlegrid] t",
                                            "0:stderr:ghij"}));
  v1::Job job = Job("j");
  EXPECT_EQ(job.tasks(0).logs_dropped_bytes(), 6u) << "abcdef was evicted by ghij";
  EXPECT_EQ(job.tasks(1).logs_dropped_bytes(), 0u);
  // Reopening keeps the accounting: the next byte still evicts from the tail.
  Reopen();
  ASSERT_TRUE(store_->AppendLogs("j", {Chunk(0, "stdout", "klm")}, cap).ok());
  EXPECT_EQ(Job("j").tasks(0).logs_dropped_bytes(), 10u) << "ghij went too";
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM logs WHERE job_id = 'j' AND idx = 0"), 3);
}

// --- nodes, tokens, artifacts, images ----------------------------------------------

NodeRecord NodeRec(const std::string& id, const std::string& name, uint32_t cores) {
  NodeRecord n;
  n.id = id;
  n.name = name;
  n.info.set_hostname(name + ".lan");
  n.info.set_cpu_cores(cores);
  n.info.add_runtimes("runc");
  n.info.mutable_enforcement()->set_memory("cgroup");
  n.registered_ms = 100;
  return n;
}

TEST_P(StoreTest, NodesRoundTrip) {
  ASSERT_TRUE(store_->UpsertNode(NodeRec("n2", "beta", 8), "hash-b").ok());
  ASSERT_TRUE(store_->UpsertNode(NodeRec("n1", "alpha", 4), "hash-a").ok());

  auto by_token = store_->NodeByTokenHash("hash-b");
  ASSERT_TRUE(by_token.ok());
  ASSERT_TRUE(by_token->has_value());
  EXPECT_EQ((*by_token)->id, "n2");
  EXPECT_EQ((*by_token)->info.cpu_cores(), 8u);
  EXPECT_EQ((*by_token)->info.enforcement().memory(), "cgroup");
  EXPECT_EQ((*by_token)->registered_ms, 100);
  auto unknown = store_->NodeByTokenHash("hash-x");
  ASSERT_TRUE(unknown.ok());
  EXPECT_FALSE(unknown->has_value());

  v1::NodeInfo beat = NodeRec("n1", "alpha", 6).info;
  ASSERT_TRUE(store_->RecordHeartbeat("n1", beat, 5000).ok());
  // Re-registering rotates the token.
  ASSERT_TRUE(store_->UpsertNode(NodeRec("n2", "beta", 8), "hash-b2").ok());
  Reopen();

  auto nodes = store_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].name, "alpha");
  EXPECT_EQ((*nodes)[0].info.cpu_cores(), 6u);
  EXPECT_EQ((*nodes)[0].last_heartbeat_ms, 5000);
  EXPECT_EQ((*nodes)[1].name, "beta");
  EXPECT_FALSE(store_->NodeByTokenHash("hash-b")->has_value());
  auto rotated = store_->NodeByTokenHash("hash-b2");
  ASSERT_TRUE(rotated.ok());
  ASSERT_TRUE(rotated->has_value());
  EXPECT_EQ((*rotated)->id, "n2");
}

TEST_P(StoreTest, AccountsTokensAndJoinTokensRoundTrip) {
  // The operator account exists from the schema on (old data belongs to it).
  auto op = store_->GetAccount(kOperatorAccount);
  ASSERT_TRUE(op.ok()) << op.status().ToString();
  ASSERT_TRUE(op->has_value());
  EXPECT_EQ((*op)->role, "operator");
  AccountRecord alice{"alice", "requester", 5, 2.0, 10, 3, 1000};
  ASSERT_TRUE(store_->CreateAccount(alice).ok());
  EXPECT_EQ(store_->CreateAccount(alice).code(), Code::kAlreadyExists);

  auto none = store_->TokenByHash("sha256:aa");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  TokenRecord t;
  t.id = "aa00";
  t.hash = "sha256:aa";
  t.account = "alice";
  t.scopes = 3;
  t.created_ms = 10;
  t.expires_ms = 99;
  t.name = "laptop";
  ASSERT_TRUE(store_->AddApiToken(t).ok());
  TokenRecord orphan = t;
  orphan.hash = "sha256:bb";
  orphan.account = "nobody";
  EXPECT_EQ(store_->AddApiToken(orphan).code(), Code::kNotFound) << "a token needs an existing account";
  Reopen();

  auto got = store_->TokenByHash("sha256:aa");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->account, "alice");
  EXPECT_EQ((*got)->role, "requester") << "the role is the account's";
  EXPECT_EQ((*got)->scopes, 3u);
  EXPECT_EQ((*got)->expires_ms, 99);
  EXPECT_EQ((*got)->revoked_ms, 0);
  EXPECT_EQ((*got)->name, "laptop");
  auto revoked = store_->RevokeToken("aa00", 50);
  ASSERT_TRUE(revoked.ok());
  EXPECT_EQ(revoked->revoked_ms, 50);
  EXPECT_EQ(store_->RevokeToken("aa00", 60)->revoked_ms, 50) << "revoking twice keeps the first time";
  EXPECT_EQ(store_->RevokeToken("nosuch", 60).status().code(), Code::kNotFound);
  EXPECT_EQ(store_->ListTokens("alice")->size(), 1u);
  EXPECT_EQ(store_->ListTokens(kOperatorAccount)->size(), 0u);

  auto accounts = store_->ListAccounts();
  ASSERT_TRUE(accounts.ok());
  ASSERT_EQ(accounts->size(), 2u);
  EXPECT_EQ((*accounts)[0].name, "alice");
  EXPECT_EQ((*accounts)[0].weight, 2.0);
  EXPECT_EQ((*accounts)[0].max_queued_tasks, 10u);
  EXPECT_EQ((*accounts)[0].max_stored_bytes, 1000u);

  ASSERT_TRUE(store_->CreateAccount({"prov", "provider", 5}).ok());
  ASSERT_TRUE(store_->AddJoinToken({"sha256:jj", "prov", 5, 0}).ok());
  EXPECT_EQ(store_->AddJoinToken({"sha256:kk", "nobody", 5, 0}).code(), Code::kNotFound);
  auto join = store_->JoinTokenByHash("sha256:jj");
  ASSERT_TRUE(join.ok() && join->has_value());
  EXPECT_EQ((*join)->provider, "prov");
  EXPECT_FALSE(store_->JoinTokenByHash("sha256:kk")->has_value());
}

TEST_P(StoreTest, JobsBelongToAccountsAndUsageCountsThem) {
  ASSERT_TRUE(store_->CreateAccount({"alice", "requester", 5}).ok());
  ASSERT_TRUE(store_->CreateJob("ja", Spec({3}), "d", 100, "alice").ok());
  ASSERT_TRUE(store_->CreateJob("jo", Spec({1}), "d", 100).ok());
  EXPECT_EQ(store_->GetJob("ja")->account(), "alice");
  EXPECT_EQ(store_->GetJob("jo")->account(), kOperatorAccount);
  EXPECT_EQ(store_->JobAccount("ja")->value_or(""), "alice");
  EXPECT_FALSE(store_->JobAccount("nosuch")->has_value());
  auto mine = store_->ListJobs("alice");
  ASSERT_TRUE(mine.ok());
  ASSERT_EQ(mine->size(), 1u);
  EXPECT_EQ((*mine)[0].id(), "ja");
  EXPECT_EQ(store_->ListJobs()->size(), 2u);
  auto use = store_->UsageOf("alice");
  ASSERT_TRUE(use.ok()) << use.status().ToString();
  EXPECT_EQ(use->queued_tasks, 3u);
  EXPECT_EQ(use->running_tasks, 0u);

  const std::string blob = "sha256:" + std::string(64, 'a');
  ASSERT_TRUE(store_->RecordArtifact(blob, 700, "input", 10).ok());
  ASSERT_TRUE(store_->AddArtifactRefs({{blob, "job:ja", "alice", 0}, {blob, "upload:alice", "alice", 500}}).ok());
  EXPECT_EQ(store_->UsageOf("alice")->stored_bytes, 700u) << "a blob held twice counts once";
  auto access = store_->ArtifactAccessOf(blob);
  ASSERT_TRUE(access.ok());
  EXPECT_TRUE(access->exists);
  EXPECT_FALSE(access->is_public);
  EXPECT_EQ(access->accounts, std::set<std::string>{"alice"});
  ASSERT_TRUE(store_->SetArtifactPublic(blob).ok());
  EXPECT_TRUE(store_->ArtifactAccessOf(blob)->is_public);
  EXPECT_FALSE(store_->ArtifactAccessOf("sha256:" + std::string(64, 'f'))->exists);
}

// One account's long queue cannot fill the scheduler's window: accounts take turns.
TEST_P(StoreTest, QueuedWindowTakesAccountsInTurn) {
  ASSERT_TRUE(store_->CreateAccount({"big", "requester", 5}).ok());
  ASSERT_TRUE(store_->CreateAccount({"small", "requester", 5}).ok());
  ASSERT_TRUE(store_->CreateJob("jbig", Spec({50}), "d", 100, "big").ok());
  ASSERT_TRUE(store_->CreateJob("jsmall", Spec({2}), "d", 101, "small").ok());
  auto window = store_->QueuedTasks(4);
  ASSERT_TRUE(window.ok()) << window.status().ToString();
  ASSERT_EQ(window->size(), 4u);
  std::vector<std::string> order;
  for (const auto& t : *window) order.push_back(t.account + "/" + std::to_string(t.index));
  EXPECT_EQ(order, (std::vector<std::string>{"big/0", "small/0", "big/1", "small/1"}));
}

TEST_P(StoreTest, ArtifactsAndImagesRoundTrip) {
  const std::string digest = "sha256:" + std::string(64, 'd');
  EXPECT_FALSE(*store_->HasArtifact(digest));
  ASSERT_TRUE(store_->RecordArtifact(digest, 123, "input", 10).ok());
  ASSERT_TRUE(store_->RecordArtifact(digest, 123, "input", 20).ok()) << "recording twice is harmless";
  EXPECT_TRUE(*store_->HasArtifact(digest));
  EXPECT_FALSE(*store_->HasArtifact("sha256:" + std::string(64, 'e')));

  ImageRecord image{"sha256:" + std::string(64, '1'), "sha256:" + std::string(64, '2'),
                    "sha256:" + std::string(64, '3')};
  auto missing = store_->GetImage(image.manifest_digest);
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  ASSERT_TRUE(store_->RegisterImage(image, 30).ok());
  Reopen();
  EXPECT_TRUE(*store_->HasArtifact(digest));
  auto got = store_->GetImage(image.manifest_digest);
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->config_digest, image.config_digest);
  EXPECT_EQ((*got)->archive_digest, image.archive_digest);
}

// --- crash safety -------------------------------------------------------------------

// Runs in the forked child: assigns every queued task, a batch per
// transaction, reporting the running total of committed tasks after each
// commit. Then waits to be killed. Never returns.
[[noreturn]] void AssignUntilKilled(const std::string& path, int round, int progress_fd) {
  constexpr size_t kBatch = 8;
  auto opened = OpenStore(LocationForChild(path, ::getpid()));
  if (!opened.ok()) _exit(2);
  Store& store = **opened;
  auto queued = store.QueuedTasks(1000000);
  if (!queued.ok()) _exit(3);
  uint32_t committed = 0;
  for (size_t i = 0; i < queued->size(); i += kBatch) {
    std::vector<NewAttempt> batch;
    for (size_t k = i; k < std::min(i + kBatch, queued->size()); ++k) {
      const QueuedTask& t = (*queued)[k];
      batch.push_back({"r" + std::to_string(round) + "-" + t.job_id + "-" + std::to_string(t.index), t.job_id, t.index,
                       "n" + std::to_string(k % 4), 1000 + static_cast<int64_t>(k)});
    }
    auto r = store.CommitAssignments(batch);
    if (!r.ok() || r->size() != batch.size()) _exit(4);
    committed += static_cast<uint32_t>(r->size());
    if (::write(progress_fd, &committed, sizeof committed) != sizeof committed) _exit(5);
  }
  // Out of work before the parent struck: say so (the parent's read ends) and
  // wait for the kill anyway.
  ::close(progress_fd);
  for (;;) ::pause();
}

TEST_P(StoreTest, KilledWriterLeavesEveryAssignmentWholeOrAbsent) {
  constexpr int kJobs = 40;
  constexpr uint32_t kTasksPerJob = 100;
  constexpr uint32_t kTotal = kJobs * kTasksPerJob;
  for (int j = 0; j < kJobs; ++j) {
    CreateJob("j" + std::to_string(j), {.array_count = kTasksPerJob, .cpu = 0.5, .memory = 1 << 20, .gpus = 0});
  }
  std::mt19937 rng(20240611);
  uint32_t assigned_before = 0;
  int killed_mid_run = 0;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    // No database connection may cross fork(): the child opens its own.
    store_.reset();
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      AssignUntilKilled(path_, round, fds[1]);
    }
    ::close(fds[1]);
    // Let it commit a random number of batches, then kill it wherever it is.
    const int reports = std::uniform_int_distribution<int>(1, 60)(rng);
    uint32_t reported = 0;
    for (int i = 0; i < reports; ++i) {
      uint32_t v;
      if (::read(fds[0], &v, sizeof v) != sizeof v) break;
      reported = v;
    }
    ::kill(pid, SIGKILL);
    int wstatus = 0;
    ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
    ::close(fds[0]);
    ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL)
        << "the writer failed on its own, status " << wstatus;
    ASSERT_GT(reported, 0u) << "the writer reported no progress";
    WaitForSessionGone(pid);
    if (HasFatalFailure()) return;

    auto integrity = db_->IntegrityOk();
    ASSERT_TRUE(integrity.ok()) << integrity.status().ToString();
    EXPECT_TRUE(*integrity);
    Open();
    auto active = store_->ActiveAttempts();
    ASSERT_TRUE(active.ok()) << active.status().ToString();
    std::map<std::string, const ActiveAttempt*> by_id;
    for (const auto& a : *active) by_id[a.attempt_id] = &a;
    uint32_t assigned = 0;
    for (int j = 0; j < kJobs; ++j) {
      v1::Job job = Job("j" + std::to_string(j));
      ASSERT_EQ(job.tasks_size(), static_cast<int>(kTasksPerJob));
      for (const auto& t : job.tasks()) {
        if (t.state() == v1::QUEUED) {
          EXPECT_EQ(t.attempts_size(), 0) << job.id() << "/" << t.index() << " queued with an attempt";
          continue;
        }
        ASSERT_EQ(t.state(), v1::ASSIGNED) << job.id() << "/" << t.index();
        ASSERT_EQ(t.attempts_size(), 1) << job.id() << "/" << t.index() << " assigned without exactly one attempt";
        ++assigned;
        const v1::Attempt& a = t.attempts(0);
        EXPECT_EQ(a.state(), v1::ASSIGNED);
        EXPECT_FALSE(a.node_id().empty());
        auto it = by_id.find(a.id());
        ASSERT_NE(it, by_id.end()) << a.id() << " holds no capacity";
        EXPECT_DOUBLE_EQ(it->second->cpu, 0.5) << a.id() << " lost its reservation";
        EXPECT_EQ(it->second->memory, uint64_t{1} << 20);
      }
    }
    EXPECT_EQ(by_id.size(), assigned);
    // Every batch the writer saw committed survived the kill.
    EXPECT_GE(assigned, assigned_before + reported);
    if (assigned < kTotal) ++killed_mid_run;
    assigned_before = assigned;
  }
  // The kills landed while work remained (500 batches, at most 180 allowed).
  EXPECT_GT(killed_mid_run, 0);
}

}  // namespace
}  // namespace idlegrid::store

namespace idlegrid::store {
namespace {

TEST_P(StoreTest, HeartbeatsOfManyNodesInOneBatchNeverGoBackwards) {
  for (const char* id : {"n1", "n2"}) {
    NodeRecord rec;
    rec.id = id;
    rec.name = id;
    rec.last_heartbeat_ms = 100;
    ASSERT_TRUE(store_->UpsertNode(rec, std::string("tok-") + id).ok());
  }
  ASSERT_TRUE(store_->RecordHeartbeats({{"n1", 500}, {"n2", 700}, {"unknown", 900}}).ok());
  ASSERT_TRUE(store_->RecordHeartbeats({{"n1", 300}}).ok());  // an older time never wins
  auto n1 = store_->GetNode("n1");
  auto n2 = store_->GetNode("n2");
  ASSERT_TRUE(n1.ok() && *n1 && n2.ok() && *n2);
  EXPECT_EQ((*n1)->last_heartbeat_ms, 500);
  EXPECT_EQ((*n2)->last_heartbeat_ms, 700);
}

// The CA the database's nodes pin (schema v20): the first coordinator's is
// kept; another coordinator's is returned the recorded one, unless it asks to
// replace it.
TEST_P(StoreTest, TheClusterCaIsRecordedOnceAndReplacedOnlyWhenAsked) {
  auto first = store_->PinClusterCa("sha256:aaaa", false);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, "sha256:aaaa");
  auto other = store_->PinClusterCa("sha256:bbbb", false);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(*other, "sha256:aaaa") << "the first CA recorded stays";
  auto replaced = store_->PinClusterCa("sha256:bbbb", true);
  ASSERT_TRUE(replaced.ok());
  EXPECT_EQ(*replaced, "sha256:bbbb");
  auto again = store_->PinClusterCa("sha256:aaaa", false);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, "sha256:bbbb");
}

}  // namespace
}  // namespace idlegrid::store
