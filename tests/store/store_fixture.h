#pragma once
// What the store tests share: job specs and reports to feed the store, and a
// fixture holding a fresh database of one backend (see store_backend.h).
#include <thread>
#include <chrono>
#include <sys/types.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "store/store.h"
#include "store/store_backend.h"

namespace idlegrid::store::backends {

struct SpecOptions {
  uint32_t array_count = 1;
  uint32_t retries = 0;
  bool idempotent = false;
  uint32_t queue_timeout_seconds = 0;
  double cpu = 1;
  uint64_t memory = 1 << 28;
  uint32_t gpus = 0;
};

// Takes a database back from schema v15 (verification) to v14, for the
// upgrade tests of earlier versions.
inline constexpr char kUndoV15[] =
    "ALTER TABLE attempts DROP COLUMN vote; ALTER TABLE attempts DROP COLUMN vote_reason; "
    "ALTER TABLE tasks DROP COLUMN verification; DROP TABLE provider_trust";

// Takes a database back from schema v16 (workflows) to v15.
inline constexpr char kUndoV16[] = "DROP TABLE workflow_steps; DROP TABLE workflows";

// Takes a database back from schema v17 (a user's retry is a fresh budget) to v16.
inline constexpr char kUndoV17[] = "ALTER TABLE tasks DROP COLUMN retry_base";

// Takes a database back from schema v18 (webhooks) to v17.
inline constexpr char kUndoV18[] = "DROP TABLE webhooks";

// Takes a database back from schema v19 (a node's attempt history) to v18.
inline constexpr char kUndoV19[] = "DROP INDEX attempts_by_node_assigned";

inline v1::JobSpec Spec(const SpecOptions& o = {}) {
  v1::JobSpec s;
  s.set_api_version("idlegrid/v1");
  s.set_name("sweep");
  s.set_image("sha256:" + std::string(64, 'a'));
  s.mutable_resources()->set_cpu(o.cpu);
  s.mutable_resources()->set_memory_bytes(o.memory);
  s.mutable_resources()->set_gpus(o.gpus);
  s.set_output_path("/out");
  s.set_runtime("runc");
  s.set_array_count(o.array_count);
  s.set_retries(o.retries);
  s.set_idempotent(o.idempotent);
  s.set_queue_timeout_seconds(o.queue_timeout_seconds);
  return s;
}

inline v1::ReportAttemptRequest Report(const std::string& attempt_id, v1::AttemptEvent event, int32_t exit_code = 0,
                                       v1::FailureReason reason = v1::FAILURE_REASON_UNSPECIFIED) {
  v1::ReportAttemptRequest r;
  r.set_attempt_id(attempt_id);
  r.set_event(event);
  r.set_exit_code(exit_code);
  r.set_failure_reason(reason);
  return r;
}

// A child process's store location: on PostgreSQL its session is named after
// the process, so StoreFixture::WaitForSessionGone can tell when the server
// dropped it.
inline std::string LocationForChild(std::string location, pid_t pid) {
  if (location.rfind("postgres", 0) == 0) location += "&application_name=igkill_" + std::to_string(pid);
  return location;
}

// A fresh database of one backend per test. TEST_P(StoreTest, ...) runs on
// every backend; TEST_F on a subclass pins one.
class StoreFixture {
 protected:
  void CreateDatabase(BackendKind kind) {
    auto db = backends::CreateTestDatabase(kind);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(*db);
    path_ = db_->location();
    Open();
  }

  void Open() {
    auto opened = OpenStore(path_);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(*opened);
  }

  void Reopen() {
    store_.reset();
    Open();
  }

  int64_t QueryInt(const std::string& sql) {
    auto v = db_->QueryInt(sql);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : -1;
  }

  void CreateJob(const std::string& id, const SpecOptions& o = {}, int64_t now_ms = 1000) {
    Status st = store_->CreateJob(id, Spec(o), "sha256:spec-" + id, now_ms);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

  // Assigns one task and expects it to be committed.
  void Assign(const std::string& job, uint32_t index, const std::string& attempt, const std::string& node,
              int64_t now_ms = 2000) {
    auto r = store_->CommitAssignments({{attempt, job, index, node, now_ms}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->size(), 1u) << job << "/" << index << " was not committed";
  }

  void ReportOk(const std::string& node, const v1::ReportAttemptRequest& report, int64_t now_ms = 3000) {
    auto r = store_->ApplyAttemptReport(node, report, now_ms);
    ASSERT_TRUE(r.ok()) << v1::AttemptEvent_Name(report.event()) << ": " << r.status().ToString();
  }

  // A node of `provider`'s account (verification and earnings count per provider).
  void AddNode(const std::string& id, const std::string& provider) {
    NodeRecord n;
    n.id = id;
    n.name = id;
    n.provider = provider;
    ASSERT_TRUE(store_->UpsertNode(n, "tok-" + id).ok());
  }

  // After a kill -9 of `pid`: the server finishes (or rolls back) what the
  // dead client had sent, a COMMIT included, so look only once its session
  // is gone. No event announces that; the server's own view is polled.
  void WaitForSessionGone(pid_t pid) {
    if (path_.rfind("postgres", 0) != 0) return;
    const std::string session =
        "SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = 'igkill_" + std::to_string(pid) + "'";
    for (int i = 0; i < 1000 && QueryInt(session) > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_EQ(QueryInt(session), 0) << "the killed process's session outlived it by 10 s";
  }

  v1::Job Job(const std::string& id) {
    auto job = store_->GetJob(id);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return job.ok() ? *job : v1::Job();
  }

  v1::Task TaskOf(const std::string& job, uint32_t index) {
    v1::Job j = Job(job);
    for (const auto& t : j.tasks()) {
      if (t.index() == index) return t;
    }
    ADD_FAILURE() << "no task " << job << "/" << index;
    return v1::Task();
  }

  std::vector<std::string> QueuedKeys(size_t limit = 1000) {
    std::vector<std::string> out;
    auto q = store_->QueuedTasks(limit);
    EXPECT_TRUE(q.ok()) << q.status().ToString();
    if (q.ok()) {
      for (const auto& t : *q) out.push_back(t.job_id + "/" + std::to_string(t.index));
    }
    return out;
  }

  std::unique_ptr<backends::TestDatabase> db_;
  std::string path_;  // what OpenStore takes: a file or a postgresql:// URL
  std::unique_ptr<Store> store_;
};

}  // namespace idlegrid::store::backends
