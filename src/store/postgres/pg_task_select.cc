// A user's cancel of some tasks and retry of finished ones, in PostgreSQL:
// read the job's task rows (locked), ask jobs/task_select.h for the plan,
// write it.
#include "jobs/task_select.h"
#include "store/postgres/pg_codec.h"
#include "store/postgres/postgres_store.h"
#include "store/retry_budget_sql.h"

namespace idlegrid::store {

using pg::Connection;
using pg::Isolation;
using pg::Params;
using pg::Rows;

Result<std::vector<jobs::TaskStateRow>> PgJobs::TaskStates(Connection& c, const std::string& job_id) {
  IG_ASSIGN_OR_RETURN(Rows exists, c.Exec("SELECT 1 FROM jobs WHERE id = $1", Params().Text(job_id)));
  if (exists.empty()) return Status::NotFound("job " + job_id + " does not exist");
  IG_ASSIGN_OR_RETURN(
      Rows q, c.Exec("SELECT idx, state FROM tasks WHERE job_id = $1 ORDER BY idx FOR UPDATE", Params().Text(job_id)));
  std::vector<jobs::TaskStateRow> rows;
  for (int r = 0; r < q.size(); ++r) {
    rows.push_back({static_cast<uint32_t>(q.Int(r, 0)), static_cast<v1::TaskState>(q.Int(r, 1))});
  }
  return rows;
}

Result<CancelResult> PgJobs::CancelTasks(const std::string& job_id, const jobs::TaskSelection& selection,
                                         int64_t now_ms) {
  CancelResult result;
  IG_RETURN_IF_ERROR(Tx(Isolation::kSerializable, [&](Connection& c) -> Status {
    result.stopped.clear();
    IG_ASSIGN_OR_RETURN(auto rows, TaskStates(c, job_id));
    IG_ASSIGN_OR_RETURN(auto plan, jobs::PlanCancelTasks(job_id, rows, selection, now_ms));
    for (const jobs::IndexedWrite& w : plan) {
      IG_ASSIGN_OR_RETURN(Rows active, c.Exec("SELECT id, node_id, state FROM attempts WHERE job_id = $1 AND idx = $2 "
                                              "AND state IN ($3, $4) ORDER BY assigned_ms, seq",
                                              Params().Text(job_id).Int(w.index).Int(v1::ASSIGNED).Int(v1::RUNNING)));
      for (int r = 0; r < active.size(); ++r) {
        ActiveAttempt a;
        a.attempt_id = active.Text(r, 0);
        a.job_id = job_id;
        a.index = w.index;
        a.node_id = active.Text(r, 1);
        a.state = static_cast<v1::TaskState>(active.Int(r, 2));
        result.stopped.push_back(std::move(a));
      }
      // As for a whole job's cancel: the attempt holds its node until the agent confirms the stop.
      IG_RETURN_IF_ERROR(
          c.Exec("UPDATE attempts SET reason = $1, message = 'cancel requested' "
                 "WHERE job_id = $2 AND idx = $3 AND state IN ($4, $5)",
                 Params().Int(v1::USER_CANCEL).Text(job_id).Int(w.index).Int(v1::ASSIGNED).Int(v1::RUNNING))
              .status());
      IG_RETURN_IF_ERROR(WriteTask(c, job_id, w.index, w.write));
    }
    return Status::Ok();
  }));
  IG_ASSIGN_OR_RETURN(result.job, GetJob(job_id));
  return result;
}

Result<v1::Job> PgJobs::RetryTasks(const std::string& job_id, const jobs::RetrySelection& selection, int64_t now_ms) {
  IG_RETURN_IF_ERROR(Tx(Isolation::kSerializable, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(auto rows, TaskStates(c, job_id));
    IG_ASSIGN_OR_RETURN(auto plan, jobs::PlanRetryTasks(job_id, rows, selection, now_ms));
    for (const jobs::IndexedWrite& w : plan) {
      IG_RETURN_IF_ERROR(WriteTask(c, job_id, w.index, w.write));
      if (!w.fresh_start) continue;
      // A fresh retry budget: what counts as used from now on is what comes
      // after the attempts that count now (kAttemptsUsed).
      Params p;
      p.IntArray(std::vector<int64_t>(std::begin(jobs::kNoFaultReasons), std::end(jobs::kNoFaultReasons)));
      static const std::string kFresh = "UPDATE tasks SET excluded = '', not_before_ms = 0, retry_base = " +
                                        CountedAttemptsSql("$2", "$3", kPgNotNoFault) +
                                        " WHERE job_id = $2 AND idx = $3";
      IG_RETURN_IF_ERROR(c.Exec(kFresh.c_str(), p.Text(job_id).Int(w.index)).status());
    }
    return Status::Ok();
  }));
  return GetJob(job_id);
}

}  // namespace idlegrid::store
