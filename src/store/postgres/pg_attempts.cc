// Attempts: agents' reports, lost nodes, checkpoints and the queries over
// attempts in PostgreSQL. The read-modify-write transactions here run
// SERIALIZABLE (see postgres_store.h).
#include <algorithm>
#include <iterator>
#include <optional>
#include <set>
#include <vector>

#include "jobs/lease.h"
#include "jobs/task_state.h"
#include "store/postgres/pg_codec.h"
#include "store/retry_budget_sql.h"
#include "store/postgres/postgres_store.h"

namespace idlegrid::store {

using pg::Connection;
using pg::Isolation;
using pg::Params;
using pg::Rows;

namespace {

// The attempt's context for jobs::ApplyAttemptEvent, from columns
// (attempt state, task state, attempts used, spec) at `col`, `col`+1, ...
Result<jobs::AttemptContext> ReadContext(const Rows& q, int row, int col) {
  IG_ASSIGN_OR_RETURN(v1::JobSpec spec, pg::ParseSpec(q.Text(row, col + 3)));
  jobs::AttemptContext ctx;
  ctx.attempt_state = static_cast<v1::TaskState>(q.Int(row, col));
  ctx.task_state = static_cast<v1::TaskState>(q.Int(row, col + 1));
  ctx.attempts_used = static_cast<uint32_t>(q.Int(row, col + 2));
  ctx.retries = spec.retries();
  ctx.idempotent = spec.idempotent();
  ctx.verified = jobs::VerifiedJob(spec);
  return ctx;
}

// attempts_used leaves out rejections: a node's refusal never consumes a retry;
// nor do the attempts before a user's retry (tasks.retry_base).
// $1 is the list of jobs::kNoFaultReasons (NoFaultReasons()).
const std::string kAttemptsUsed = "(" + CountedAttemptsSql("a.job_id", "a.idx", kPgNotNoFault) + " - t.retry_base)";

Params NoFaultReasons() {
  Params p;
  p.IntArray(std::vector<int64_t>(std::begin(jobs::kNoFaultReasons), std::end(jobs::kNoFaultReasons)));
  return p;
}

}  // namespace

Status PgRole::WriteTask(Connection& c, const std::string& job_id, uint32_t index, const jobs::TaskWrite& write) {
  return c
      .Exec(
          "UPDATE tasks SET state = $1, reason = $2, message = $3, updated_ms = $4, "
          "queued_ms = CASE WHEN $5::integer <> 0 THEN $6 ELSE queued_ms END WHERE job_id = $7 AND idx = $8",
          Params()
              .Int(write.state)
              .Int(write.reason)
              .Text(write.message)
              .Int(write.updated_ms)
              .Int(write.queued_ms.has_value())
              .Int(write.queued_ms.value_or(0))
              .Text(job_id)
              .Int(index))
      .status();
}

Status PgJobs::MoveTask(Connection& c, const std::string& job_id, uint32_t index, const jobs::TaskMove& move,
                        int64_t now_ms) {
  IG_ASSIGN_OR_RETURN(Rows cur, c.Exec("SELECT state FROM tasks WHERE job_id = $1 AND idx = $2 FOR UPDATE",
                                       Params().Text(job_id).Int(index)));
  if (cur.empty()) return Status::NotFound("task " + job_id + "/" + std::to_string(index));
  IG_ASSIGN_OR_RETURN(std::optional<jobs::TaskWrite> write,
                      jobs::PlanTaskMove(static_cast<v1::TaskState>(cur.Int(0, 0)), move, now_ms));
  return write ? WriteTask(c, job_id, index, *write) : Status::Ok();
}

Status PgAttempts::ExecutePlan(Connection& c, const std::string& attempt_id, const std::string& job_id, uint32_t index,
                               const jobs::OutcomePlan& plan) {
  if (plan.accepted_ms) {
    IG_RETURN_IF_ERROR(
        c.Exec("UPDATE attempts SET accepted_ms = $1 WHERE id = $2", Params().Int(*plan.accepted_ms).Text(attempt_id))
            .status());
  }
  if (plan.attempt) {
    const jobs::AttemptWrite& a = *plan.attempt;
    IG_RETURN_IF_ERROR(c.Exec("UPDATE attempts SET state = $1, reason = $2, message = $3, "
                              "exit_code = CASE WHEN $4::integer <> 0 THEN $5 ELSE exit_code END, "
                              "started_ms = CASE WHEN $6::integer <> 0 THEN $7 ELSE started_ms END, "
                              "finished_ms = CASE WHEN $8::integer <> 0 THEN $9 ELSE finished_ms END, "
                              "runtime = CASE WHEN $10::integer <> 0 THEN $11 ELSE runtime END, "
                              "outputs = CASE WHEN $12::integer <> 0 THEN $13 ELSE outputs END, "
                              "provenance = CASE WHEN $14::integer <> 0 THEN $15 ELSE provenance END WHERE id = $16",
                              Params()
                                  .Int(a.state)
                                  .Int(a.reason)
                                  .Text(a.message)
                                  .Int(a.exit_code.has_value())
                                  .Int(a.exit_code.value_or(0))
                                  .Int(a.started_ms.has_value())
                                  .Int(a.started_ms.value_or(0))
                                  .Int(a.finished_ms.has_value())
                                  .Int(a.finished_ms.value_or(0))
                                  .Int(a.runtime.has_value())
                                  .Text(a.runtime.value_or(""))
                                  .Int(a.outputs.has_value())
                                  .Bytes(a.outputs ? a.outputs->SerializeAsString() : "")
                                  .Int(a.provenance.has_value())
                                  .Bytes(a.provenance ? a.provenance->SerializeAsString() : "")
                                  .Text(attempt_id))
                           .status());
    if (a.vote) {
      IG_RETURN_IF_ERROR(c.Exec("UPDATE attempts SET vote = $1, vote_reason = '' WHERE id = $2",
                                Params().Text(*a.vote).Text(attempt_id))
                             .status());
    }
  }
  if (plan.task) IG_RETURN_IF_ERROR(WriteTask(c, job_id, index, *plan.task));
  if (plan.task_not_before_ms) {
    IG_RETURN_IF_ERROR(c.Exec("UPDATE tasks SET not_before_ms = $1 WHERE job_id = $2 AND idx = $3",
                              Params().Int(*plan.task_not_before_ms).Text(job_id).Int(index))
                           .status());
  }
  if (plan.exclude_node) {
    IG_RETURN_IF_ERROR(c.Exec("UPDATE tasks SET excluded = excluded || $1 || ',' WHERE job_id = $2 AND idx = $3",
                              Params().Text(*plan.exclude_node).Text(job_id).Int(index))
                           .status());
  }
  return Status::Ok();
}

Status PgAttempts::RecordCheckpoint(Connection& c, const v1::ReportAttemptRequest& report, const std::string& job_id,
                                    uint32_t index, uint64_t epoch, int64_t now_ms) {
  IG_RETURN_IF_ERROR(jobs::ValidateCheckpointFiles(report.checkpoint()));
  // Restoring a file the coordinator does not hold would fail the next
  // attempt: every file must already be a published artifact.
  std::vector<std::string> digests;
  for (const auto& f : report.checkpoint()) {
    for (const std::string& blob : jobs::CheckpointBlobs(f)) digests.push_back(blob);
  }
  IG_ASSIGN_OR_RETURN(
      Rows known, c.Exec("SELECT digest FROM artifacts WHERE digest = ANY($1::text[])", Params().TextArray(digests)));
  std::set<std::string> have;
  for (int r = 0; r < known.size(); ++r) have.insert(known.Text(r, 0));
  for (const auto& f : report.checkpoint()) {
    for (const std::string& blob : jobs::CheckpointBlobs(f)) {
      if (!have.count(blob)) {
        return Status::NotFound("checkpoint file " + f.path() + ": artifact " + blob + " was never uploaded");
      }
    }
  }
  v1::Checkpoint cp;
  cp.set_attempt_id(report.attempt_id());
  cp.set_lease_epoch(epoch);
  *cp.mutable_files() = report.checkpoint();
  cp.set_created_at_ms(now_ms);
  IG_RETURN_IF_ERROR(c.Exec("INSERT INTO checkpoints(job_id, idx, attempt_id, epoch, files, created_ms) "
                            "VALUES($1, $2, $3, $4, $5, $6) ON CONFLICT(job_id, idx) DO UPDATE SET "
                            "attempt_id = excluded.attempt_id, epoch = excluded.epoch, files = excluded.files, "
                            "created_ms = excluded.created_ms",
                            Params()
                                .Text(job_id)
                                .Int(index)
                                .Text(report.attempt_id())
                                .Int(static_cast<int64_t>(epoch))
                                .Bytes(cp.SerializeAsString())
                                .Int(now_ms))
                         .status());
  return c
      .Exec("UPDATE attempts SET checkpoints = checkpoints + 1, last_checkpoint_ms = $1 WHERE id = $2",
            Params().Int(now_ms).Text(report.attempt_id()))
      .status();
}

Result<EventResult> PgAttempts::ApplyAttemptReport(const std::string& node_id, const v1::ReportAttemptRequest& report,
                                                   int64_t now_ms) {
  EventResult result;
  IG_RETURN_IF_ERROR(Tx(Isolation::kSerializable, [&](Connection& c) -> Status {
    static const std::string kQuery =
        std::string("SELECT a.job_id, a.idx, a.node_id, a.epoch, t.attempts, a.state, t.state, ") + kAttemptsUsed +
        ", j.spec, a.accepted_ms FROM attempts a JOIN tasks t ON t.job_id = a.job_id AND t.idx = a.idx "
        "JOIN jobs j ON j.id = a.job_id WHERE a.id = $2";
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec(kQuery.c_str(), NoFaultReasons().Text(report.attempt_id())));
    if (q.empty()) return Status::NotFound("attempt " + report.attempt_id() + " does not exist");
    if (q.Text(0, 2) != node_id) {
      return Status::PermissionDenied("attempt " + report.attempt_id() + " is not assigned to this node");
    }
    const auto epoch = static_cast<uint64_t>(q.Int(0, 3));
    IG_RETURN_IF_ERROR(jobs::CheckLeaseEpoch(report, epoch, static_cast<uint64_t>(q.Int(0, 4))));
    jobs::AttemptRow row;
    IG_ASSIGN_OR_RETURN(row.ctx, ReadContext(q, 0, 5));
    row.node_id = node_id;
    row.accepted_ms = q.Int(0, 9);
    result = {q.Text(0, 0), static_cast<uint32_t>(q.Int(0, 1)), {}};
    IG_ASSIGN_OR_RETURN(jobs::OutcomePlan plan, jobs::PlanReport(row, report, now_ms));
    IG_RETURN_IF_ERROR(ExecutePlan(c, report.attempt_id(), result.job_id, result.index, plan));
    if (plan.record_checkpoint) {
      IG_RETURN_IF_ERROR(RecordCheckpoint(c, report, result.job_id, result.index, epoch, now_ms));
    }
    result.outcome = std::move(plan.outcome);
    return Status::Ok();
  }));
  return result;
}

Result<std::vector<EventResult>> PgAttempts::FailNodeAttempts(const std::string& node_id, int64_t now_ms) {
  std::vector<EventResult> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kSerializable, [&](Connection& c) -> Status {
    out.clear();
    static const std::string kQuery =
        std::string("SELECT a.id, a.job_id, a.idx, a.state, t.state, ") + kAttemptsUsed +
        ", j.spec FROM attempts a JOIN tasks t ON t.job_id = a.job_id AND t.idx = a.idx "
        "JOIN jobs j ON j.id = a.job_id WHERE a.node_id = $2 AND a.state IN ($3, $4) ORDER BY a.assigned_ms, a.seq";
    IG_ASSIGN_OR_RETURN(Rows q,
                        c.Exec(kQuery.c_str(), NoFaultReasons().Text(node_id).Int(v1::ASSIGNED).Int(v1::RUNNING)));
    for (int r = 0; r < q.size(); ++r) {
      jobs::AttemptRow row;
      IG_ASSIGN_OR_RETURN(row.ctx, ReadContext(q, r, 3));
      row.node_id = node_id;
      EventResult res{q.Text(r, 1), static_cast<uint32_t>(q.Int(r, 2)), {}};
      IG_ASSIGN_OR_RETURN(jobs::OutcomePlan plan, jobs::PlanNodeLost(row, now_ms));
      IG_RETURN_IF_ERROR(ExecutePlan(c, q.Text(r, 0), res.job_id, res.index, plan));
      res.outcome = std::move(plan.outcome);
      out.push_back(std::move(res));
    }
    return Status::Ok();
  }));
  return out;
}

Result<Store::AttemptOwner> PgAttempts::GetAttemptOwner(const std::string& attempt_id) {
  AttemptOwner owner;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(
        Rows q, c.Exec("SELECT job_id, node_id, idx, state FROM attempts WHERE id = $1", Params().Text(attempt_id)));
    if (q.empty()) return Status::NotFound("attempt " + attempt_id + " does not exist");
    owner = {q.Text(0, 0), q.Text(0, 1), static_cast<uint32_t>(q.Int(0, 2)), static_cast<v1::TaskState>(q.Int(0, 3))};
    return Status::Ok();
  }));
  return owner;
}

Result<std::vector<ActiveAttempt>> PgAttempts::UnacknowledgedAttempts(int64_t assigned_before_ms) {
  std::vector<ActiveAttempt> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("SELECT id, job_id, idx, node_id, state FROM attempts "
                                       "WHERE state = $1 AND accepted_ms = 0 AND assigned_ms < $2 "
                                       "ORDER BY assigned_ms, seq",
                                       Params().Int(v1::ASSIGNED).Int(assigned_before_ms)));
    out.clear();
    for (int r = 0; r < q.size(); ++r) {
      ActiveAttempt a;
      a.attempt_id = q.Text(r, 0);
      a.job_id = q.Text(r, 1);
      a.index = static_cast<uint32_t>(q.Int(r, 2));
      a.node_id = q.Text(r, 3);
      a.state = static_cast<v1::TaskState>(q.Int(r, 4));
      out.push_back(std::move(a));
    }
    return Status::Ok();
  }));
  return out;
}

Result<std::vector<ActiveAttempt>> PgAttempts::AssignedAttempts(const std::string& node_id) {
  std::vector<ActiveAttempt> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("SELECT id, job_id, idx, node_id, state, cpu, memory, gpus FROM attempts "
                                       "WHERE node_id = $1 AND state = $2 ORDER BY assigned_ms, seq",
                                       Params().Text(node_id).Int(v1::ASSIGNED)));
    out.clear();
    for (int r = 0; r < q.size(); ++r) out.push_back(pg::ReadActiveAttempt(q, r));
    return Status::Ok();
  }));
  return out;
}

Result<std::map<std::string, NodeOutcomes>> PgAttempts::RecentNodeOutcomes(int64_t since_ms) {
  std::map<std::string, NodeOutcomes> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("SELECT node_id, state, reason, COUNT(*) FROM attempts "
                                       "WHERE finished_ms >= $1 AND finished_ms > 0 GROUP BY node_id, state, reason",
                                       Params().Int(since_ms)));
    out.clear();
    for (int r = 0; r < q.size(); ++r) {
      out[q.Text(r, 0)].Add(static_cast<v1::TaskState>(q.Int(r, 1)), static_cast<v1::FailureReason>(q.Int(r, 2)),
                            static_cast<uint32_t>(q.Int(r, 3)));
    }
    return Status::Ok();
  }));
  return out;
}

Status PgAttempts::PutReceipt(const std::string& attempt_id, const v1::Receipt& receipt) {
  return Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows r, c.Exec("UPDATE attempts SET receipt = $1 WHERE id = $2",
                                       Params().Bytes(receipt.SerializeAsString()).Text(attempt_id)));
    if (r.affected() != 1) return Status::NotFound("no attempt " + attempt_id);
    return Status::Ok();
  });
}

}  // namespace idlegrid::store
