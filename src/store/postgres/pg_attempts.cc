// Attempts: agents' reports, lost nodes, checkpoints and the queries over
// attempts in PostgreSQL. The read-modify-write transactions here run
// SERIALIZABLE (see postgres_store.h).
#include <algorithm>
#include <set>

#include "jobs/lease.h"
#include "jobs/task_state.h"
#include "store/postgres/pg_codec.h"
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
  return ctx;
}

// attempts_used leaves out rejections: a node's refusal never consumes a retry.
constexpr char kAttemptsUsed[] =
    "(SELECT COUNT(*) FROM attempts x WHERE x.job_id = a.job_id AND x.idx = a.idx AND x.reason NOT IN ($1, $2, $3, $4))";

// Parameters $1..$4 of kAttemptsUsed.
Params NoFaultReasons() {
  static_assert(std::size(jobs::kNoFaultReasons) == 4, "kAttemptsUsed lists four reasons");
  Params p;
  for (auto r : jobs::kNoFaultReasons) p.Int(r);
  return p;
}

}  // namespace

Status PostgresStore::SetTaskState(Connection& c, const std::string& job_id, uint32_t index, v1::TaskState to,
                                   v1::FailureReason reason, const std::string& message, int64_t now_ms) {
  IG_ASSIGN_OR_RETURN(Rows cur, c.Exec("SELECT state FROM tasks WHERE job_id = $1 AND idx = $2 FOR UPDATE",
                                       Params().Text(job_id).Int(index)));
  if (cur.empty()) return Status::NotFound("task " + job_id + "/" + std::to_string(index));
  auto from = static_cast<v1::TaskState>(cur.Int(0, 0));
  if (from == to) return Status::Ok();
  IG_RETURN_IF_ERROR(jobs::CheckTaskTransition(from, to));
  return c
      .Exec("UPDATE tasks SET state = $1, reason = $2, message = $3, updated_ms = $4, "
            "queued_ms = CASE WHEN $1::integer = $5::integer THEN $4 ELSE queued_ms END WHERE job_id = $6 AND idx = $7",
            Params().Int(to).Int(reason).Text(message).Int(now_ms).Int(v1::QUEUED).Text(job_id).Int(index))
      .status();
}

Result<EventResult> PostgresStore::ApplyOutcome(Connection& c, const std::string& attempt_id,
                                                const jobs::AttemptContext& ctx, const jobs::AttemptOutcome& outcome,
                                                const v1::ReportAttemptRequest& report, const std::string& job_id,
                                                uint32_t index, const std::string& node_id, int64_t now_ms) {
  EventResult result{job_id, index, outcome};
  if (!outcome.changed) return result;
  v1::TaskState from = ctx.attempt_state;
  if (outcome.implied_start) {
    IG_RETURN_IF_ERROR(jobs::CheckAttemptTransition(from, v1::RUNNING));
    IG_RETURN_IF_ERROR(SetTaskState(c, job_id, index, v1::RUNNING, v1::FAILURE_REASON_UNSPECIFIED, "", now_ms));
    from = v1::RUNNING;
  }
  if (outcome.attempt_state != from) {
    IG_RETURN_IF_ERROR(jobs::CheckAttemptTransition(from, outcome.attempt_state));
  }
  bool started = outcome.attempt_state == v1::RUNNING || outcome.implied_start;
  bool finished = jobs::IsTerminal(outcome.attempt_state);
  v1::Attempt outputs;
  *outputs.mutable_outputs() = report.outputs();
  // Only an exit report carries an exit code and outputs; a confirmation of a
  // stop keeps the time the cancel happened.
  bool exited = report.event() == v1::EXITED;
  bool first_finish = finished && !jobs::IsTerminal(ctx.attempt_state);
  IG_RETURN_IF_ERROR(c.Exec("UPDATE attempts SET state = $1, reason = $2, message = $3, "
                            "exit_code = CASE WHEN $4 THEN $5 ELSE exit_code END, "
                            "started_ms = CASE WHEN $6 THEN $7 ELSE started_ms END, "
                            "finished_ms = CASE WHEN $8 THEN $7 ELSE finished_ms END, "
                            "runtime = CASE WHEN $9 <> '' THEN $9 ELSE runtime END, "
                            "outputs = CASE WHEN $4 THEN $10 ELSE outputs END WHERE id = $11",
                            Params()
                                .Int(outcome.attempt_state)
                                .Int(outcome.reason)
                                .Text(outcome.message)
                                .Int(exited)
                                .Int(report.exit_code())
                                .Int(started)
                                .Int(now_ms)
                                .Int(first_finish)
                                .Text(report.runtime())
                                .Bytes(outputs.SerializeAsString())
                                .Text(attempt_id))
                         .status());
  IG_RETURN_IF_ERROR(SetTaskState(c, job_id, index, outcome.task_state, outcome.task_reason, outcome.task_message,
                                  now_ms));
  if (outcome.retry_after_ms > 0) {
    IG_RETURN_IF_ERROR(c.Exec("UPDATE tasks SET not_before_ms = $1 WHERE job_id = $2 AND idx = $3",
                              Params().Int(now_ms + outcome.retry_after_ms).Text(job_id).Int(index))
                           .status());
  }
  if (outcome.exclude_node) {
    IG_RETURN_IF_ERROR(c.Exec("UPDATE tasks SET excluded = excluded || $1 || ',' WHERE job_id = $2 AND idx = $3",
                              Params().Text(node_id).Text(job_id).Int(index))
                           .status());
  }
  return result;
}

Status PostgresStore::RecordCheckpoint(Connection& c, const v1::ReportAttemptRequest& report,
                                       const std::string& job_id, uint32_t index, uint64_t epoch, int64_t now_ms) {
  IG_RETURN_IF_ERROR(jobs::ValidateCheckpointFiles(report.checkpoint()));
  // Restoring a file the coordinator does not hold would fail the next
  // attempt: every file must already be a published artifact.
  std::vector<std::string> digests;
  for (const auto& f : report.checkpoint()) digests.push_back(f.digest());
  IG_ASSIGN_OR_RETURN(Rows known, c.Exec("SELECT digest FROM artifacts WHERE digest = ANY($1::text[])",
                                         Params().TextArray(digests)));
  std::set<std::string> have;
  for (int r = 0; r < known.size(); ++r) have.insert(known.Text(r, 0));
  for (const auto& f : report.checkpoint()) {
    if (!have.count(f.digest())) {
      return Status::NotFound("checkpoint file " + f.path() + ": artifact " + f.digest() + " was never uploaded");
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

Result<EventResult> PostgresStore::ApplyAttemptReport(const std::string& node_id,
                                                      const v1::ReportAttemptRequest& report, int64_t now_ms) {
  EventResult result;
  IG_RETURN_IF_ERROR(Tx(Isolation::kSerializable, [&](Connection& c) -> Status {
    static const std::string kQuery =
        std::string("SELECT a.job_id, a.idx, a.node_id, a.epoch, t.attempts, a.state, t.state, ") + kAttemptsUsed +
        ", j.spec FROM attempts a JOIN tasks t ON t.job_id = a.job_id AND t.idx = a.idx "
        "JOIN jobs j ON j.id = a.job_id WHERE a.id = $5";
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec(kQuery.c_str(), NoFaultReasons().Text(report.attempt_id())));
    if (q.empty()) return Status::NotFound("attempt " + report.attempt_id() + " does not exist");
    if (q.Text(0, 2) != node_id) {
      return Status::PermissionDenied("attempt " + report.attempt_id() + " is not assigned to this node");
    }
    const auto epoch = static_cast<uint64_t>(q.Int(0, 3));
    IG_RETURN_IF_ERROR(jobs::CheckLeaseEpoch(report, epoch, static_cast<uint64_t>(q.Int(0, 4))));
    IG_ASSIGN_OR_RETURN(jobs::AttemptContext ctx, ReadContext(q, 0, 5));
    std::string job_id = q.Text(0, 0);
    auto index = static_cast<uint32_t>(q.Int(0, 1));
    IG_ASSIGN_OR_RETURN(jobs::AttemptOutcome outcome, jobs::ApplyAttemptEvent(ctx, report));
    if (report.event() == v1::ACCEPTED || report.event() == v1::STARTED) {
      // The acknowledgement stops the ack timeout (a STARTED implies one that was lost).
      IG_RETURN_IF_ERROR(c.Exec("UPDATE attempts SET accepted_ms = $1 WHERE id = $2 AND accepted_ms = 0",
                                Params().Int(now_ms).Text(report.attempt_id()))
                             .status());
    }
    IG_ASSIGN_OR_RETURN(result,
                        ApplyOutcome(c, report.attempt_id(), ctx, outcome, report, job_id, index, node_id, now_ms));
    if (outcome.record_checkpoint) {
      IG_RETURN_IF_ERROR(RecordCheckpoint(c, report, job_id, index, epoch, now_ms));
    }
    return Status::Ok();
  }));
  return result;
}

Result<std::vector<EventResult>> PostgresStore::FailNodeAttempts(const std::string& node_id, int64_t now_ms) {
  std::vector<EventResult> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kSerializable, [&](Connection& c) -> Status {
    out.clear();
    static const std::string kQuery =
        std::string("SELECT a.id, a.job_id, a.idx, a.state, t.state, ") + kAttemptsUsed +
        ", j.spec FROM attempts a JOIN tasks t ON t.job_id = a.job_id AND t.idx = a.idx "
        "JOIN jobs j ON j.id = a.job_id WHERE a.node_id = $5 AND a.state IN ($6, $7) ORDER BY a.assigned_ms, a.seq";
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec(kQuery.c_str(),
                                       NoFaultReasons().Text(node_id).Int(v1::ASSIGNED).Int(v1::RUNNING)));
    for (int r = 0; r < q.size(); ++r) {
      IG_ASSIGN_OR_RETURN(jobs::AttemptContext ctx, ReadContext(q, r, 3));
      v1::ReportAttemptRequest none;
      IG_ASSIGN_OR_RETURN(EventResult res, ApplyOutcome(c, q.Text(r, 0), ctx, jobs::NodeLostOutcome(ctx), none,
                                                        q.Text(r, 1), static_cast<uint32_t>(q.Int(r, 2)), node_id,
                                                        now_ms));
      out.push_back(std::move(res));
    }
    return Status::Ok();
  }));
  return out;
}

Result<Store::AttemptOwner> PostgresStore::GetAttemptOwner(const std::string& attempt_id) {
  AttemptOwner owner;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("SELECT job_id, node_id, idx, state FROM attempts WHERE id = $1",
                                       Params().Text(attempt_id)));
    if (q.empty()) return Status::NotFound("attempt " + attempt_id + " does not exist");
    owner = {q.Text(0, 0), q.Text(0, 1), static_cast<uint32_t>(q.Int(0, 2)), static_cast<v1::TaskState>(q.Int(0, 3))};
    return Status::Ok();
  }));
  return owner;
}

Result<std::vector<ActiveAttempt>> PostgresStore::UnacknowledgedAttempts(int64_t assigned_before_ms) {
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

Result<std::vector<ActiveAttempt>> PostgresStore::AssignedAttempts(const std::string& node_id) {
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

Result<std::map<std::string, NodeOutcomes>> PostgresStore::RecentNodeOutcomes(int64_t since_ms) {
  std::map<std::string, NodeOutcomes> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("SELECT node_id, state, reason, COUNT(*) FROM attempts "
                                       "WHERE finished_ms >= $1 AND finished_ms > 0 GROUP BY node_id, state, reason",
                                       Params().Int(since_ms)));
    out.clear();
    for (int r = 0; r < q.size(); ++r) {
      auto& o = out[q.Text(r, 0)];
      auto state = static_cast<v1::TaskState>(q.Int(r, 1));
      auto reason = static_cast<v1::FailureReason>(q.Int(r, 2));
      auto n = static_cast<uint32_t>(q.Int(r, 3));
      if (state == v1::SUCCEEDED) {
        o.succeeded += n;
      } else if (reason == v1::NODE_LOST) {
        o.node_lost += n;
      } else if (reason == v1::PLATFORM_FAILURE || reason == v1::ACK_TIMEOUT) {
        o.node_failed += n;
      } else if (reason == v1::NONZERO_EXIT || reason == v1::OUT_OF_MEMORY || reason == v1::RUN_TIMEOUT) {
        o.job_failed += n;
      }
    }
    return Status::Ok();
  }));
  return out;
}

}  // namespace idlegrid::store
