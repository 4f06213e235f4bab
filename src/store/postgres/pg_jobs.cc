// Jobs, tasks and the assignment of tasks to nodes in PostgreSQL.
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "jobs/lease.h"
#include "jobs/task_state.h"
#include "jobs/task_write.h"
#include "capacity/batch_admission.h"
#include "store/postgres/pg_codec.h"
#include "store/postgres/postgres_store.h"

namespace idlegrid::store {

using pg::Connection;
using pg::Isolation;
using pg::Params;
using pg::Rows;

Status PgJobs::CreateJob(const std::string& job_id, const v1::JobSpec& spec, const std::string& spec_digest,
                         int64_t now_ms, const std::string& account) {
  const uint32_t count = spec.array_count() == 0 ? 1 : spec.array_count();
  const JobColumns columns = JobColumnsOf(spec);
  return Tx(Isolation::kReadCommitted, [&](Connection& c) -> Status {
    // A concurrent insert of the same id waits for the first and then does nothing.
    IG_ASSIGN_OR_RETURN(
        Rows job,
        c.Exec("INSERT INTO jobs(id, spec, spec_digest, created_ms, cpu, memory, gpus, gpu_memory, runtime, "
               "queue_timeout_ms, account, retention_ms) VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) "
               "ON CONFLICT(id) DO NOTHING RETURNING seq",
               Params()
                   .Text(job_id)
                   .Bytes(spec.SerializeAsString())
                   .Text(spec_digest)
                   .Int(now_ms)
                   .Double(columns.cpu)
                   .Int(columns.memory)
                   .Int(columns.gpus)
                   .Int(columns.gpu_memory)
                   .Text(columns.runtime)
                   .Int(columns.queue_timeout_ms)
                   .Text(account)
                   .Int(columns.retention_ms)));
    if (job.empty()) return Status::AlreadyExists("job " + job_id + " already exists");
    return c
        .Exec(
            "INSERT INTO tasks(job_id, idx, job_seq, state, queued_ms, updated_ms) "
            "SELECT $1::text, g, $2::bigint, $3::integer, $4::bigint, $4::bigint "
            "FROM generate_series(0, $5::integer - 1) AS g",
            Params().Text(job_id).Int(job.Int(0, 0)).Int(v1::QUEUED).Int(now_ms).Int(count))
        .status();
  });
}

namespace {

// Adds the job's tasks to `job`, in index order, indexed in `by_index` and
// counted by state in `counts`.
Status ReadTasks(Connection& c, const std::string& job_id, v1::Job& job, std::map<uint32_t, v1::Task*>* by_index,
                 std::map<v1::TaskState, int>* counts) {
  IG_ASSIGN_OR_RETURN(Rows tq, c.Exec("SELECT idx, state, reason, message, verification FROM tasks WHERE job_id = $1 "
                                      "ORDER BY idx",
                                      Params().Text(job_id)));
  for (int r = 0; r < tq.size(); ++r) {
    v1::Task* t = job.add_tasks();
    t->set_job_id(job_id);
    t->set_index(static_cast<uint32_t>(tq.Int(r, 0)));
    t->set_state(static_cast<v1::TaskState>(tq.Int(r, 1)));
    t->set_failure_reason(static_cast<v1::FailureReason>(tq.Int(r, 2)));
    t->set_message(tq.Text(r, 3));
    t->set_verification(tq.Text(r, 4));
    (*by_index)[t->index()] = t;
    (*counts)[t->state()]++;
  }
  return Status::Ok();
}

// Fills `a` from row `r` of `aq` (the columns ReadAttempts selects); DataLoss
// for a stored provenance or receipt that does not parse.
Status AttemptOfRow(const Rows& aq, int r, v1::Attempt* a) {
  a->set_id(aq.Text(r, 0));
  a->set_node_id(aq.Text(r, 2));
  a->set_state(static_cast<v1::TaskState>(aq.Int(r, 3)));
  a->set_failure_reason(static_cast<v1::FailureReason>(aq.Int(r, 4)));
  a->set_message(aq.Text(r, 5));
  a->set_exit_code(static_cast<int32_t>(aq.Int(r, 6)));
  a->set_assigned_at_ms(aq.Int(r, 7));
  a->set_started_at_ms(aq.Int(r, 8));
  a->set_finished_at_ms(aq.Int(r, 9));
  a->set_runtime(aq.Text(r, 10));
  for (const auto& d : pg::SplitCommaList(aq.Text(r, 12))) a->add_device_uuids(d);
  if (!aq.IsNull(r, 11)) {
    v1::Attempt outputs;
    if (outputs.ParseFromString(aq.Text(r, 11))) *a->mutable_outputs() = outputs.outputs();
  }
  a->set_lease_epoch(static_cast<uint64_t>(aq.Int(r, 13)));
  a->set_checkpoints(static_cast<uint32_t>(aq.Int(r, 14)));
  a->set_last_checkpoint_at_ms(aq.Int(r, 15));
  a->set_restored_from_attempt(aq.Text(r, 16));
  a->set_work_lost_ms(jobs::WorkLostMs(*a));
  if (!aq.IsNull(r, 17)) a->mutable_placement()->ParseFromString(aq.Text(r, 17));
  if (!aq.IsNull(r, 18) && !a->mutable_provenance()->ParseFromString(aq.Text(r, 18))) {
    return Status::DataLoss("stored provenance of attempt " + a->id() + " does not parse");
  }
  if (!aq.IsNull(r, 19)) {
    if (!a->mutable_receipt()->ParseFromString(aq.Text(r, 19))) {
      return Status::DataLoss("stored receipt of attempt " + a->id() + " does not parse");
    }
    *a->mutable_metering() = a->receipt().statement().metering();
  }
  a->set_vote(aq.Text(r, 20));
  a->set_vote_reason(aq.Text(r, 21));
  return Status::Ok();
}

// Adds the job's attempts to their tasks, in assignment order; each one's
// lost work counts as its task's redone work.
Status ReadAttempts(Connection& c, const std::string& job_id, const std::map<uint32_t, v1::Task*>& by_index) {
  IG_ASSIGN_OR_RETURN(
      Rows aq, c.Exec("SELECT id, idx, node_id, state, reason, message, exit_code, assigned_ms, started_ms, "
                      "finished_ms, runtime, outputs, devices, epoch, checkpoints, last_checkpoint_ms, restored_from, "
                      "placement, provenance, receipt, vote, vote_reason FROM attempts WHERE job_id = $1 "
                      "ORDER BY assigned_ms, seq",
                      Params().Text(job_id)));
  for (int r = 0; r < aq.size(); ++r) {
    auto it = by_index.find(static_cast<uint32_t>(aq.Int(r, 1)));
    if (it == by_index.end()) continue;
    v1::Attempt* a = it->second->add_attempts();
    IG_RETURN_IF_ERROR(AttemptOfRow(aq, r, a));
    it->second->set_work_redone_ms(it->second->work_redone_ms() + a->work_lost_ms());
  }
  return Status::Ok();
}

// Sets the checkpoint of each task of the job that has one; DataLoss for one
// that does not parse.
Status ReadCheckpoints(Connection& c, const std::string& job_id, const std::map<uint32_t, v1::Task*>& by_index) {
  IG_ASSIGN_OR_RETURN(Rows cq, c.Exec("SELECT idx, files FROM checkpoints WHERE job_id = $1", Params().Text(job_id)));
  for (int r = 0; r < cq.size(); ++r) {
    auto it = by_index.find(static_cast<uint32_t>(cq.Int(r, 0)));
    if (it == by_index.end()) continue;
    if (!it->second->mutable_checkpoint()->ParseFromString(cq.Text(r, 1))) {
      return Status::DataLoss("stored checkpoint of " + job_id + "/" + std::to_string(it->first) + " does not parse");
    }
  }
  return Status::Ok();
}

// Sets the log bytes dropped of each task of the job that dropped some.
Status ReadLogUsage(Connection& c, const std::string& job_id, const std::map<uint32_t, v1::Task*>& by_index) {
  IG_ASSIGN_OR_RETURN(Rows lq,
                      c.Exec("SELECT idx, dropped_bytes FROM log_usage WHERE job_id = $1 AND dropped_bytes > 0",
                             Params().Text(job_id)));
  for (int r = 0; r < lq.size(); ++r) {
    auto it = by_index.find(static_cast<uint32_t>(lq.Int(r, 0)));
    if (it != by_index.end()) it->second->set_logs_dropped_bytes(static_cast<uint64_t>(lq.Int(r, 1)));
  }
  return Status::Ok();
}

}  // namespace

// PgAttempts' query, here beside AttemptOfRow, which it shares with GetJob.
Result<std::vector<NodeAttemptRow>> PgAttempts::NodeAttempts(const std::string& node_id,
                                                             std::optional<jobs::AttemptCursor> before, size_t limit) {
  std::vector<NodeAttemptRow> out;
  const jobs::AttemptCursor from = before.value_or(jobs::AttemptCursor{});
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(
        Rows q, c.Exec("SELECT id, idx, node_id, state, reason, message, exit_code, assigned_ms, started_ms, "
                       "finished_ms, runtime, outputs, devices, epoch, checkpoints, last_checkpoint_ms, restored_from, "
                       "placement, provenance, receipt, vote, vote_reason, job_id, seq FROM attempts "
                       "WHERE node_id = $1 AND ($2 = 0 OR assigned_ms < $3 OR (assigned_ms = $3 AND seq < $4)) "
                       "ORDER BY assigned_ms DESC, seq DESC LIMIT $5",
                       Params()
                           .Text(node_id)
                           .Int(before.has_value() ? 1 : 0)
                           .Int(from.assigned_ms)
                           .Int(from.seq)
                           .Int(static_cast<int64_t>(limit))));
    out.clear();
    for (int r = 0; r < q.size(); ++r) {
      NodeAttemptRow row;
      IG_RETURN_IF_ERROR(AttemptOfRow(q, r, &row.attempt));
      row.task_index = static_cast<uint32_t>(q.Int(r, 1));
      row.job_id = q.Text(r, 22);
      row.cursor = {row.attempt.assigned_at_ms(), q.Int(r, 23)};
      out.push_back(std::move(row));
    }
    return Status::Ok();
  }));
  return out;
}

Result<v1::Job> PgJobs::ReadJob(Connection& c, const std::string& job_id) {
  IG_ASSIGN_OR_RETURN(
      Rows jq, c.Exec("SELECT spec, spec_digest, created_ms, account FROM jobs WHERE id = $1", Params().Text(job_id)));
  if (jq.empty()) return Status::NotFound("job " + job_id + " does not exist");
  v1::Job job;
  job.set_id(job_id);
  IG_ASSIGN_OR_RETURN(*job.mutable_spec(), pg::ParseSpec(jq.Text(0, 0)));
  job.set_spec_digest(jq.Text(0, 1));
  job.set_created_at_ms(jq.Int(0, 2));
  job.set_account(jq.Text(0, 3));

  std::map<uint32_t, v1::Task*> by_index;
  std::map<v1::TaskState, int> counts;
  IG_RETURN_IF_ERROR(ReadTasks(c, job_id, job, &by_index, &counts));
  IG_RETURN_IF_ERROR(ReadAttempts(c, job_id, by_index));
  IG_RETURN_IF_ERROR(ReadCheckpoints(c, job_id, by_index));
  IG_RETURN_IF_ERROR(ReadLogUsage(c, job_id, by_index));
  jobs::SetTaskCounts(job, counts);
  return job;
}

Result<v1::Job> PgJobs::GetJob(const std::string& job_id) {
  v1::Job job;
  IG_RETURN_IF_ERROR(Tx(Isolation::kReadOnlySnapshot, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(job, ReadJob(c, job_id));
    return Status::Ok();
  }));
  return job;
}

Result<std::vector<v1::Job>> PgJobs::ListJobs(const std::string& account) {
  std::vector<v1::Job> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kReadOnlySnapshot, [&](Connection& c) -> Status {
    out.clear();
    std::map<std::string, size_t> pos;
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("SELECT id, spec, spec_digest, created_ms, account FROM jobs "
                                       "WHERE $1 = '' OR account = $1 ORDER BY seq DESC",
                                       Params().Text(account)));
    for (int r = 0; r < q.size(); ++r) {
      v1::Job job;
      job.set_id(q.Text(r, 0));
      IG_ASSIGN_OR_RETURN(*job.mutable_spec(), pg::ParseSpec(q.Text(r, 1)));
      job.set_spec_digest(q.Text(r, 2));
      job.set_created_at_ms(q.Int(r, 3));
      job.set_account(q.Text(r, 4));
      pos[job.id()] = out.size();
      out.push_back(std::move(job));
    }
    IG_ASSIGN_OR_RETURN(Rows cq, c.Exec("SELECT job_id, state, COUNT(*) FROM tasks GROUP BY job_id, state"));
    std::map<std::string, std::map<v1::TaskState, int>> counts;
    for (int r = 0; r < cq.size(); ++r) {
      counts[cq.Text(r, 0)][static_cast<v1::TaskState>(cq.Int(r, 1))] = static_cast<int>(cq.Int(r, 2));
    }
    for (auto& [id, by_state] : counts) {
      auto it = pos.find(id);
      if (it == pos.end()) continue;
      jobs::SetTaskCounts(out[it->second], by_state);
    }
    return Status::Ok();
  }));
  return out;
}

Result<std::vector<QueuedTask>> PgAttempts::QueuedTasks(size_t limit, int64_t now_ms) {
  std::vector<QueuedTask> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    out.clear();
    int64_t max_rows = limit > static_cast<size_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(limit);
    // The window takes accounts in turn (each one's first task, then each
    // one's second, ...), so one account's long queue cannot fill it. A task
    // without a job row has no account: it is reported below, not skipped.
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("SELECT q.job_id, q.idx, q.excluded, q.queued_ms, COALESCE(q.account, '') FROM ("
                                       "SELECT t.job_id, t.idx, t.excluded, t.queued_ms, t.job_seq, j.account, "
                                       "ROW_NUMBER() OVER (PARTITION BY j.account ORDER BY t.job_seq, t.idx) AS turn "
                                       "FROM tasks t LEFT JOIN jobs j ON j.id = t.job_id "
                                       "WHERE t.state = $1 AND t.not_before_ms <= $2) q "
                                       "ORDER BY q.turn, q.job_seq, q.idx LIMIT $3",
                                       Params().Int(v1::QUEUED).Int(now_ms).Int(max_rows)));
    // Specs never change once stored: fetch each job's once, not once per task.
    std::vector<std::string> ids;
    std::set<std::string> seen;
    for (int r = 0; r < q.size(); ++r) {
      if (seen.insert(q.Text(r, 0)).second) ids.push_back(q.Text(r, 0));
    }
    std::map<std::string, v1::JobSpec> specs;
    if (!ids.empty()) {
      IG_ASSIGN_OR_RETURN(Rows sq,
                          c.Exec("SELECT id, spec FROM jobs WHERE id = ANY($1::text[])", Params().TextArray(ids)));
      for (int r = 0; r < sq.size(); ++r) {
        IG_ASSIGN_OR_RETURN(specs[sq.Text(r, 0)], pg::ParseSpec(sq.Text(r, 1)));
      }
    }
    out.reserve(q.size());
    for (int r = 0; r < q.size(); ++r) {
      QueuedTask t;
      t.job_id = q.Text(r, 0);
      t.index = static_cast<uint32_t>(q.Int(r, 1));
      t.excluded_nodes = pg::SplitCommaList(q.Text(r, 2));
      t.queued_ms = q.Int(r, 3);
      t.account = q.Text(r, 4);
      auto it = specs.find(t.job_id);
      if (it == specs.end()) return Status::DataLoss("task " + t.job_id + " has no job");
      t.spec = it->second;
      out.push_back(std::move(t));
    }
    return Status::Ok();
  }));
  return out;
}

Result<std::vector<ActiveAttempt>> PgAttempts::ActiveAttempts() {
  std::vector<ActiveAttempt> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("SELECT a.id, a.job_id, a.idx, a.node_id, a.state, a.cpu, a.memory, a.gpus, "
                                       "a.devices, a.gpu_memory, a.epoch, a.gpu_milli, COALESCE(j.account, '') "
                                       "FROM attempts a LEFT JOIN jobs j ON j.id = a.job_id WHERE a.state IN ($1, $2)",
                                       Params().Int(v1::ASSIGNED).Int(v1::RUNNING)));
    out.clear();
    for (int r = 0; r < q.size(); ++r) {
      ActiveAttempt a = pg::ReadActiveAttempt(q, r);
      a.device_uuids = pg::SplitCommaList(q.Text(r, 8));
      a.gpu_memory_bytes = static_cast<uint64_t>(q.Int(r, 9));
      a.lease_epoch = static_cast<uint64_t>(q.Int(r, 10));
      a.gpu_milli = static_cast<uint32_t>(q.Int(r, 11));
      a.account = q.Text(r, 12);
      out.push_back(std::move(a));
    }
    return Status::Ok();
  }));
  return out;
}

namespace {

// The batch's distinct node ids, in id order.
std::vector<std::string> DistinctNodes(const std::vector<const NewAttempt*>& batch) {
  std::set<std::string> distinct;
  for (const NewAttempt* a : batch) distinct.insert(a->node_id);
  return std::vector<std::string>(distinct.begin(), distinct.end());
}

// A queued task's reservation, copied from its job's columns.
struct Reservation {
  double cpu;
  uint64_t memory, gpu_memory;
};

// What CommitAssignments reads inside its transaction: the batch admission
// rule (capacity/batch_admission.h) loaded with the batch's nodes and what
// their active attempts hold, and the reservation of each of its tasks that
// is still queued.
struct BatchRead {
  capacity::BatchAdmission admission;
  std::vector<std::string> checked;  // the nodes the rule took
  std::map<std::pair<std::string, uint32_t>, Reservation> queued;
};

// Adds the batch's nodes to the rule.
Status LoadNodes(Connection& c, const std::vector<std::string>& node_ids, BatchRead& read) {
  // Lock the batch's node rows first, in id order: coordinators committing
  // onto the same node take turns (and never deadlock), so what LoadHolds
  // sums stays true until COMMIT.
  IG_ASSIGN_OR_RETURN(Rows nq, c.Exec("SELECT id, info, advertisement FROM nodes WHERE id = ANY($1::text[]) "
                                      "ORDER BY id FOR UPDATE",
                                      Params().TextArray(node_ids)));
  for (int r = 0; r < nq.size(); ++r) {
    v1::NodeInfo info;
    v1::Advertisement ad;
    if (!nq.IsNull(r, 1)) info.ParseFromString(nq.Text(r, 1));
    if (!nq.IsNull(r, 2)) ad.ParseFromString(nq.Text(r, 2));
    std::string id = nq.Text(r, 0);
    if (read.admission.AddNode(id, info, ad)) read.checked.push_back(std::move(id));
  }
  return Status::Ok();
}

// The batch's tasks that are still queued, locked, skipping any another
// coordinator holds right now, with their jobs' reservations.
Status LockQueuedTasks(Connection& c, const std::vector<const NewAttempt*>& batch, BatchRead& read) {
  std::vector<std::string> jobs, indexes;
  for (const NewAttempt* a : batch) {
    jobs.push_back(a->job_id);
    indexes.push_back(std::to_string(a->index));
  }
  IG_ASSIGN_OR_RETURN(Rows tq, c.Exec("SELECT t.job_id, t.idx, j.cpu, j.memory, j.gpu_memory FROM tasks t "
                                      "JOIN unnest($1::text[], $2::integer[]) AS i(job_id, idx) "
                                      "ON t.job_id = i.job_id AND t.idx = i.idx JOIN jobs j ON j.id = t.job_id "
                                      "WHERE t.state = $3 FOR UPDATE OF t SKIP LOCKED",
                                      Params().TextArray(jobs).TextArray(indexes).Int(v1::QUEUED)));
  for (int r = 0; r < tq.size(); ++r) {
    read.queued[{tq.Text(r, 0), static_cast<uint32_t>(tq.Int(r, 1))}] = {
        tq.Double(r, 2), static_cast<uint64_t>(tq.Int(r, 3)), static_cast<uint64_t>(tq.Int(r, 4))};
  }
  return Status::Ok();
}

// Adds to the rule what the active attempts on the checked nodes hold.
Status LoadHolds(Connection& c, BatchRead& read) {
  if (read.checked.empty()) return Status::Ok();
  IG_ASSIGN_OR_RETURN(Rows hq, c.Exec("SELECT node_id, cpu, memory, devices, gpu_memory, gpu_milli FROM attempts "
                                      "WHERE node_id = ANY($1::text[]) AND state IN ($2, $3)",
                                      Params().TextArray(read.checked).Int(v1::ASSIGNED).Int(v1::RUNNING)));
  capacity::AttemptHold held;
  for (int r = 0; r < hq.size(); ++r) {
    held.cpu = hq.Double(r, 1);
    held.memory = static_cast<uint64_t>(hq.Int(r, 2));
    capacity::SplitDeviceList(hq.Text(r, 3), &held.devices);
    held.gpu_memory = static_cast<uint64_t>(hq.Int(r, 4));
    held.gpu_milli = static_cast<uint32_t>(hq.Int(r, 5));
    read.admission.Hold(hq.Text(r, 0), held);
  }
  return Status::Ok();
}

// The read phase, four statements whatever the batch's size: the nodes, then
// the queued tasks, then what the nodes hold.
Status ReadBatch(Connection& c, const std::vector<const NewAttempt*>& batch, const std::vector<std::string>& node_ids,
                 BatchRead& read) {
  IG_RETURN_IF_ERROR(LoadNodes(c, node_ids, read));
  IG_RETURN_IF_ERROR(LockQueuedTasks(c, batch, read));
  return LoadHolds(c, read);
}

// The rule's candidates, one per attempt of the batch; one whose task is not
// queued (or is locked by another coordinator) wants nothing.
std::vector<capacity::BatchCandidate> Candidates(const std::vector<const NewAttempt*>& batch, const BatchRead& read) {
  std::vector<capacity::BatchCandidate> candidates;
  candidates.reserve(batch.size());
  for (const NewAttempt* a : batch) {
    auto it = read.queued.find({a->job_id, a->index});
    capacity::BatchCandidate candidate{a->node_id, a->job_id, a->index, it != read.queued.end(), {}};
    if (candidate.queued) {
      candidate.want = {it->second.cpu, it->second.memory, it->second.gpu_memory, a->placement.gpu_milli(),
                        a->device_uuids};
    }
    candidates.push_back(std::move(candidate));
  }
  return candidates;
}

// The admitted attempts as the columns of the write's arrays, in order.
struct AttemptColumns {
  std::vector<std::string> ids, jobs, indexes, nodes, times, devices, placements, gpu_millis, restore_only;
};

AttemptColumns ColumnsOf(const std::vector<const NewAttempt*>& batch, const std::vector<size_t>& admitted) {
  AttemptColumns out;
  for (size_t i : admitted) {
    const NewAttempt* a = batch[i];
    out.ids.push_back(a->attempt_id);
    out.jobs.push_back(a->job_id);
    out.indexes.push_back(std::to_string(a->index));
    out.nodes.push_back(a->node_id);
    out.times.push_back(std::to_string(a->now_ms));
    std::string d;
    for (const auto& uuid : a->device_uuids) d += uuid + ",";
    out.devices.push_back(std::move(d));
    out.placements.push_back(pg::ByteaLiteral(a->placement.SerializeAsString()));
    out.gpu_millis.push_back(std::to_string(a->placement.gpu_milli()));
    out.restore_only.push_back(a->restore_only_from);
  }
  return out;
}

// The write phase, one statement: claims the tasks of what the rule admitted
// (indices into `batch`) and inserts their attempts; `epochs` gets each
// committed attempt's lease epoch.
Status WriteAdmitted(Connection& c, const std::vector<const NewAttempt*>& batch, const std::vector<size_t>& admitted,
                     std::map<std::string, uint64_t>* epochs) {
  const AttemptColumns in = ColumnsOf(batch, admitted);
  if (in.ids.empty()) return Status::Ok();
  // The lease epoch is the task's attempt ordinal; the attempt starts from
  // the task's latest checkpoint, if it has one. The reservation is copied
  // from the job so capacity accounting survives restarts.
  IG_ASSIGN_OR_RETURN(
      Rows q,
      c.Exec("WITH input AS (SELECT * FROM unnest($1::text[], $2::text[], $3::integer[], $4::text[], "
             "$5::bigint[], $6::text[], $9::bytea[], $10::integer[], $11::text[]) "
             "AS i(attempt_id, job_id, idx, node_id, now_ms, devices, placement, gpu_milli, restore_only)), "
             "claimed AS (UPDATE tasks t SET state = $7, attempts = t.attempts + 1, updated_ms = i.now_ms "
             "FROM input i WHERE t.job_id = i.job_id AND t.idx = i.idx AND t.state = $8 "
             "RETURNING i.attempt_id, i.job_id, i.idx, i.node_id, i.now_ms, i.devices, i.placement, i.gpu_milli, "
             "i.restore_only, t.attempts AS epoch) "
             "INSERT INTO attempts(id, job_id, idx, node_id, state, assigned_ms, cpu, memory, gpus, gpu_memory, "
             "runtime, devices, epoch, restored_from, placement, gpu_milli) "
             "SELECT m.attempt_id, m.job_id, m.idx, m.node_id, $7, m.now_ms, j.cpu, j.memory, j.gpus, "
             "j.gpu_memory, j.runtime, m.devices, m.epoch, "
             // store::MayRestoreFrom: only a checkpoint of the attempt's own provider, when it names one.
             "CASE WHEN k.attempt_id IS NULL THEN '' WHEN m.restore_only = '' OR m.restore_only = "
             "(SELECT n.provider FROM attempts ka JOIN nodes n ON n.id = ka.node_id WHERE ka.id = k.attempt_id) "
             "THEN k.attempt_id ELSE '' END, m.placement, m.gpu_milli "
             "FROM claimed m JOIN jobs j ON j.id = m.job_id "
             "LEFT JOIN checkpoints k ON k.job_id = m.job_id AND k.idx = m.idx RETURNING id, epoch",
             Params()
                 .TextArray(in.ids)
                 .TextArray(in.jobs)
                 .TextArray(in.indexes)
                 .TextArray(in.nodes)
                 .TextArray(in.times)
                 .TextArray(in.devices)
                 .Int(v1::ASSIGNED)
                 .Int(v1::QUEUED)
                 .TextArray(in.placements)
                 .TextArray(in.gpu_millis)
                 .TextArray(in.restore_only)));
  for (int r = 0; r < q.size(); ++r) (*epochs)[q.Text(r, 0)] = static_cast<uint64_t>(q.Int(r, 1));
  return Status::Ok();
}

// The batch's attempts that committed, in batch order, with their lease epochs.
std::vector<NewAttempt> Committed(const std::vector<const NewAttempt*>& batch,
                                  const std::map<std::string, uint64_t>& epochs) {
  std::vector<NewAttempt> committed;
  for (const NewAttempt* a : batch) {
    auto it = epochs.find(a->attempt_id);
    if (it == epochs.end()) continue;
    NewAttempt done = *a;
    done.lease_epoch = it->second;
    committed.push_back(std::move(done));
  }
  return committed;
}

}  // namespace

Result<std::vector<NewAttempt>> PgAttempts::CommitAssignments(const std::vector<NewAttempt>& attempts) {
  // One READ COMMITTED transaction for the whole batch, four statements
  // whatever its size: lock the batch's node rows (in id order), lock its
  // tasks that are still queued (skipping any another coordinator holds right
  // now: that one is granting it; if it gives up, the task stays queued for
  // the next cycle), sum what the nodes' active attempts hold, then claim the
  // tasks and insert the attempts that fit in one statement. Under READ
  // COMMITTED a row updated since the statement began is re-checked against
  // "state = QUEUED" on its newest version, so each task is granted exactly
  // once; the node locks make the capacity sums exact. The same task twice in
  // the batch: the first one that fits takes it.
  std::vector<const NewAttempt*> batch;
  for (const auto& a : attempts) batch.push_back(&a);
  if (batch.empty()) return std::vector<NewAttempt>();
  const std::vector<std::string> node_ids = DistinctNodes(batch);
  std::map<std::string, uint64_t> epochs;  // committed attempt -> lease epoch
  IG_RETURN_IF_ERROR(Tx(Isolation::kReadCommitted, [&](Connection& c) -> Status {
    epochs.clear();
    BatchRead read;
    IG_RETURN_IF_ERROR(ReadBatch(c, batch, node_ids, read));
    // Admit the batch by the rule; the rest stays queued.
    const std::vector<size_t> admitted = read.admission.Admit(Candidates(batch, read));
    return WriteAdmitted(c, batch, admitted, &epochs);
  }));
  return Committed(batch, epochs);
}

Result<CancelResult> PgJobs::CancelJob(const std::string& job_id, int64_t now_ms) {
  CancelResult result;
  IG_RETURN_IF_ERROR(Tx(Isolation::kSerializable, [&](Connection& c) -> Status {
    result.stopped.clear();
    IG_ASSIGN_OR_RETURN(Rows exists, c.Exec("SELECT 1 FROM jobs WHERE id = $1", Params().Text(job_id)));
    if (exists.empty()) return Status::NotFound("job " + job_id + " does not exist");
    IG_ASSIGN_OR_RETURN(Rows active, c.Exec("SELECT id, idx, node_id, state FROM attempts "
                                            "WHERE job_id = $1 AND state IN ($2, $3) ORDER BY assigned_ms, seq",
                                            Params().Text(job_id).Int(v1::ASSIGNED).Int(v1::RUNNING)));
    for (int r = 0; r < active.size(); ++r) {
      ActiveAttempt a;
      a.attempt_id = active.Text(r, 0);
      a.job_id = job_id;
      a.index = static_cast<uint32_t>(active.Int(r, 1));
      a.node_id = active.Text(r, 2);
      a.state = static_cast<v1::TaskState>(active.Int(r, 3));
      result.stopped.push_back(std::move(a));
    }
    // Active attempts keep holding their node until the agent confirms the stop.
    IG_RETURN_IF_ERROR(c.Exec("UPDATE attempts SET reason = $1, message = 'cancel requested' "
                              "WHERE job_id = $2 AND state IN ($3, $4)",
                              Params().Int(v1::USER_CANCEL).Text(job_id).Int(v1::ASSIGNED).Int(v1::RUNNING))
                           .status());
    // One statement for every task the cancel moves (none re-enters the queue,
    // so queued_ms stands).
    const jobs::TaskMove cancel = jobs::CancelMove();
    std::vector<int64_t> cancellable;
    for (v1::TaskState state : jobs::CancellableStates()) cancellable.push_back(state);
    return c
        .Exec(
            "UPDATE tasks SET state = $1, reason = $2, message = $3, updated_ms = $4 "
            "WHERE job_id = $5 AND state = ANY($6::integer[])",
            Params()
                .Int(cancel.to)
                .Int(cancel.reason)
                .Text(cancel.message)
                .Int(now_ms)
                .Text(job_id)
                .IntArray(cancellable))
        .status();
  }));
  IG_ASSIGN_OR_RETURN(result.job, GetJob(job_id));
  return result;
}

Result<v1::Job> PgJobs::ResolveLost(const std::string& job_id, bool retry, int64_t now_ms) {
  IG_RETURN_IF_ERROR(Tx(Isolation::kSerializable, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows lost, c.Exec("SELECT idx FROM tasks WHERE job_id = $1 AND state = $2 ORDER BY idx",
                                          Params().Text(job_id).Int(v1::LOST)));
    if (lost.empty()) return Status::FailedPrecondition("job " + job_id + " has no lost tasks");
    for (int r = 0; r < lost.size(); ++r) {
      IG_RETURN_IF_ERROR(
          MoveTask(c, job_id, static_cast<uint32_t>(lost.Int(r, 0)), jobs::ResolveLostMove(retry), now_ms));
    }
    return Status::Ok();
  }));
  return GetJob(job_id);
}

Result<int> PgJobs::ExpireQueuedTasks(int64_t now_ms) {
  int expired = 0;
  IG_RETURN_IF_ERROR(Tx(Isolation::kReadCommitted, [&](Connection& c) -> Status {
    expired = 0;
    // Locked rows are being assigned by another coordinator right now: skip
    // them. A row locked here is re-read as it is, so an assigned task no
    // longer matches.
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("SELECT t.job_id, t.idx, t.queued_ms, j.queue_timeout_ms FROM tasks t "
                                       "JOIN jobs j ON j.id = t.job_id WHERE t.state = $1 AND j.queue_timeout_ms > 0 "
                                       "AND t.not_before_ms < $2 FOR UPDATE OF t SKIP LOCKED",
                                       Params().Int(v1::QUEUED).Int(jobs::kVerdictHoldMs)));
    for (int r = 0; r < q.size(); ++r) {
      if (!jobs::QueueTimedOut(q.Int(r, 2), q.Int(r, 3), now_ms)) continue;
      IG_RETURN_IF_ERROR(
          MoveTask(c, q.Text(r, 0), static_cast<uint32_t>(q.Int(r, 1)), jobs::QueueTimeoutMove(), now_ms));
      ++expired;
    }
    return Status::Ok();
  }));
  return expired;
}

Status PgJobs::FailQueuedTask(const std::string& job_id, uint32_t index, v1::FailureReason reason,
                              const std::string& message, int64_t now_ms) {
  return Tx(Isolation::kReadCommitted, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows cur, c.Exec("SELECT state FROM tasks WHERE job_id = $1 AND idx = $2 FOR UPDATE",
                                         Params().Text(job_id).Int(index)));
    if (cur.empty()) return Status::NotFound("task " + job_id + "/" + std::to_string(index) + " does not exist");
    IG_RETURN_IF_ERROR(jobs::CheckFailQueued(job_id, index, static_cast<v1::TaskState>(cur.Int(0, 0))));
    return MoveTask(c, job_id, index, {v1::FAILED, reason, message}, now_ms);
  });
}

}  // namespace idlegrid::store
