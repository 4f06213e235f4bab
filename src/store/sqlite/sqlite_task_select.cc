// A user's cancel of some tasks and retry of finished ones, in SQLite: read
// the job's task rows, ask jobs/task_select.h for the plan, write it.
#include "jobs/task_select.h"
#include "store/retry_budget_sql.h"
#include "store/sqlite/sqlite_store.h"

namespace idlegrid::store {

Result<std::vector<jobs::TaskStateRow>> SqliteJobs::TaskStatesLocked(const std::string& job_id) {
  Stmt exists(db_, "SELECT 1 FROM jobs WHERE id = ?");
  exists.Bind(1, job_id);
  if (!exists.Step()) {
    IG_RETURN_IF_ERROR(exists.status());
    return Status::NotFound("job " + job_id + " does not exist");
  }
  std::vector<jobs::TaskStateRow> rows;
  Stmt q(db_, "SELECT idx, state FROM tasks WHERE job_id = ? ORDER BY idx");
  q.Bind(1, job_id);
  while (q.Step()) rows.push_back({static_cast<uint32_t>(q.Int(0)), static_cast<v1::TaskState>(q.Int(1))});
  IG_RETURN_IF_ERROR(q.status());
  return rows;
}

Result<CancelResult> SqliteJobs::CancelTasks(const std::string& job_id, const jobs::TaskSelection& selection,
                                             int64_t now_ms) {
  CancelResult result;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Transaction tx(db_);
    IG_RETURN_IF_ERROR(tx.status());
    IG_ASSIGN_OR_RETURN(auto rows, TaskStatesLocked(job_id));
    IG_ASSIGN_OR_RETURN(auto plan, jobs::PlanCancelTasks(job_id, rows, selection, now_ms));
    for (const jobs::IndexedWrite& w : plan) {
      Stmt active(db_,
                  "SELECT id, node_id, state FROM attempts WHERE job_id = ? AND idx = ? AND state IN (?, ?) "
                  "ORDER BY assigned_ms, seq");
      active.Bind(1, job_id).Bind(2, int64_t{w.index}).Bind(3, int64_t{v1::ASSIGNED}).Bind(4, int64_t{v1::RUNNING});
      while (active.Step()) {
        ActiveAttempt a;
        a.attempt_id = active.Text(0);
        a.job_id = job_id;
        a.index = w.index;
        a.node_id = active.Text(1);
        a.state = static_cast<v1::TaskState>(active.Int(2));
        result.stopped.push_back(std::move(a));
      }
      IG_RETURN_IF_ERROR(active.status());
      // As for a whole job's cancel: the attempt holds its node until the agent confirms the stop.
      Stmt a(db_,
             "UPDATE attempts SET reason = ?, message = 'cancel requested' "
             "WHERE job_id = ? AND idx = ? AND state IN (?, ?)");
      a.Bind(1, int64_t{v1::USER_CANCEL})
          .Bind(2, job_id)
          .Bind(3, int64_t{w.index})
          .Bind(4, int64_t{v1::ASSIGNED})
          .Bind(5, int64_t{v1::RUNNING});
      a.Step();
      IG_RETURN_IF_ERROR(a.status());
      IG_RETURN_IF_ERROR(WriteTaskLocked(job_id, w.index, w.write));
    }
    IG_RETURN_IF_ERROR(tx.Commit());
  }
  IG_ASSIGN_OR_RETURN(result.job, GetJob(job_id));
  return result;
}

Result<v1::Job> SqliteJobs::RetryTasks(const std::string& job_id, const jobs::RetrySelection& selection,
                                       int64_t now_ms) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Transaction tx(db_);
    IG_RETURN_IF_ERROR(tx.status());
    IG_ASSIGN_OR_RETURN(auto rows, TaskStatesLocked(job_id));
    IG_ASSIGN_OR_RETURN(auto plan, jobs::PlanRetryTasks(job_id, rows, selection, now_ms));
    for (const jobs::IndexedWrite& w : plan) {
      IG_RETURN_IF_ERROR(WriteTaskLocked(job_id, w.index, w.write));
      if (!w.fresh_start) continue;
      // A fresh retry budget: what counts as used from now on is what comes
      // after the attempts that count now (AttemptsUsedColumn).
      static const std::string kFresh = "UPDATE tasks SET excluded = '', not_before_ms = 0, retry_base = " +
                                        CountedAttemptsSql("tasks.job_id", "tasks.idx", SqliteNotNoFault()) +
                                        " WHERE job_id = ? AND idx = ?";
      Stmt fresh(db_, kFresh.c_str());
      int next = 1;
      for (auto reason : jobs::kNoFaultReasons) fresh.Bind(next++, int64_t{reason});
      fresh.Bind(next, job_id).Bind(next + 1, int64_t{w.index});
      fresh.Step();
      IG_RETURN_IF_ERROR(fresh.status());
    }
    IG_RETURN_IF_ERROR(tx.Commit());
  }
  return GetJob(job_id);
}

}  // namespace idlegrid::store
