// Jobs, tasks and attempts in SQLite.
#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "jobs/lease.h"
#include "jobs/task_state.h"
#include "jobs/task_write.h"
#include "capacity/batch_admission.h"
#include "store/codec.h"
#include "store/retry_budget_sql.h"
#include "store/sqlite/sqlite_store.h"

namespace idlegrid::store {

namespace {

// "?, ?, ..." for an IN list of `n` values.
std::string Placeholders(size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += i == 0 ? "?" : ", ?";
  return out;
}

// How many attempts of the task in the query's `a` row count against its
// retries: a node's refusal never consumes one. Its parameters are 1..n
// (BindNoFaultReasons).
const std::string& AttemptsUsedColumn() {
  static const std::string kColumn =
      "(" + CountedAttemptsSql("a.job_id", "a.idx", SqliteNotNoFault()) + " - t.retry_base)";
  return kColumn;
}

// Binds the parameters of AttemptsUsedColumn(); the next free one is returned.
int BindNoFaultReasons(Stmt& q) {
  int i = 1;
  for (auto reason : jobs::kNoFaultReasons) q.Bind(i++, int64_t{reason});
  return i;
}

}  // namespace

Status SqliteJobs::CreateJob(const std::string& job_id, const v1::JobSpec& spec, const std::string& spec_digest,
                             int64_t now_ms, const std::string& account) {
  std::lock_guard<std::mutex> lock(mu_);
  Transaction tx(db_);
  IG_RETURN_IF_ERROR(tx.status());
  Stmt exists(db_, "SELECT 1 FROM jobs WHERE id = ?");
  exists.Bind(1, job_id);
  if (exists.Step()) return Status::AlreadyExists("job " + job_id + " already exists");
  const JobColumns columns = JobColumnsOf(spec);
  Stmt ins(db_,
           "INSERT INTO jobs(id, spec, spec_digest, created_ms, seq, cpu, memory, gpus, gpu_memory, runtime, "
           "queue_timeout_ms, account, retention_ms) "
           "VALUES(?, ?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM jobs), ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq");
  ins.Bind(1, job_id).BindBlob(2, spec.SerializeAsString()).Bind(3, spec_digest).Bind(4, now_ms);
  ins.Bind(5, columns.cpu).Bind(6, columns.memory).Bind(7, columns.gpus).Bind(8, columns.gpu_memory);
  ins.Bind(9, columns.runtime).Bind(10, columns.queue_timeout_ms).Bind(11, account).Bind(12, columns.retention_ms);
  if (!ins.Step()) {
    IG_RETURN_IF_ERROR(ins.status());
    return Status::Internal("inserting job " + job_id + " returned no sequence number");
  }
  const int64_t job_seq = ins.Int(0);
  ins.Reset();  // a statement still stepping would keep the transaction from committing
  uint32_t count = spec.array_count() == 0 ? 1 : spec.array_count();
  Stmt t(db_, "INSERT INTO tasks(job_id, idx, job_seq, state, queued_ms, updated_ms) VALUES(?, ?, ?, ?, ?, ?)");
  for (uint32_t i = 0; i < count; ++i) {
    t.Reset().Bind(1, job_id).Bind(2, int64_t{i}).Bind(3, job_seq).Bind(4, int64_t{v1::QUEUED});
    t.Bind(5, now_ms).Bind(6, now_ms);
    t.Step();
    IG_RETURN_IF_ERROR(t.status());
  }
  return tx.Commit();
}

namespace {

// The job of the jobs row `q` stands on (spec_digest, created_ms, account
// after its spec), without its tasks.
Result<v1::Job> JobOfRow(const Stmt& q, const std::string& job_id) {
  v1::Job job;
  job.set_id(job_id);
  IG_ASSIGN_OR_RETURN(*job.mutable_spec(), ParseSpec(q.Blob(0)));
  job.set_spec_digest(q.Text(1));
  job.set_created_at_ms(q.Int(2));
  job.set_account(q.Text(3));
  return job;
}

// Adds the job's tasks to `job`, in index order, indexed in `by_index` and
// counted by state in `counts`.
Status ReadTasks(sqlite3* db, const std::string& job_id, v1::Job& job, std::map<uint32_t, v1::Task*>* by_index,
                 std::map<v1::TaskState, int>* counts) {
  Stmt tq(db, "SELECT idx, state, reason, message, verification FROM tasks WHERE job_id = ? ORDER BY idx");
  tq.Bind(1, job_id);
  while (tq.Step()) {
    v1::Task* t = job.add_tasks();
    t->set_job_id(job_id);
    t->set_index(static_cast<uint32_t>(tq.Int(0)));
    t->set_state(static_cast<v1::TaskState>(tq.Int(1)));
    t->set_failure_reason(static_cast<v1::FailureReason>(tq.Int(2)));
    t->set_message(tq.Text(3));
    t->set_verification(tq.Text(4));
    (*by_index)[t->index()] = t;
    (*counts)[t->state()]++;
  }
  return tq.status();
}

// Fills `a` from the attempts row `aq` stands on (the columns ReadAttempts
// selects); DataLoss for a stored provenance or receipt that does not parse.
Status AttemptOfRow(const Stmt& aq, v1::Attempt* a) {
  a->set_id(aq.Text(0));
  a->set_node_id(aq.Text(2));
  a->set_state(static_cast<v1::TaskState>(aq.Int(3)));
  a->set_failure_reason(static_cast<v1::FailureReason>(aq.Int(4)));
  a->set_message(aq.Text(5));
  a->set_exit_code(static_cast<int32_t>(aq.Int(6)));
  a->set_assigned_at_ms(aq.Int(7));
  a->set_started_at_ms(aq.Int(8));
  a->set_finished_at_ms(aq.Int(9));
  a->set_runtime(aq.Text(10));
  for (const auto& d : SplitCommaList(aq.Text(12))) a->add_device_uuids(d);
  if (!aq.IsNull(11)) {
    v1::Attempt outputs;
    if (outputs.ParseFromString(aq.Blob(11))) *a->mutable_outputs() = outputs.outputs();
  }
  a->set_lease_epoch(static_cast<uint64_t>(aq.Int(13)));
  a->set_checkpoints(static_cast<uint32_t>(aq.Int(14)));
  a->set_last_checkpoint_at_ms(aq.Int(15));
  a->set_restored_from_attempt(aq.Text(16));
  a->set_work_lost_ms(jobs::WorkLostMs(*a));
  if (!aq.IsNull(17)) a->mutable_placement()->ParseFromString(aq.Blob(17));
  if (!aq.IsNull(18) && !a->mutable_provenance()->ParseFromString(aq.Blob(18))) {
    return Status::DataLoss("stored provenance of attempt " + a->id() + " does not parse");
  }
  if (!aq.IsNull(19)) {
    if (!a->mutable_receipt()->ParseFromString(aq.Blob(19))) {
      return Status::DataLoss("stored receipt of attempt " + a->id() + " does not parse");
    }
    *a->mutable_metering() = a->receipt().statement().metering();
  }
  a->set_vote(aq.Text(20));
  a->set_vote_reason(aq.Text(21));
  return Status::Ok();
}

// Adds the job's attempts to their tasks, in assignment order; each one's
// lost work counts as its task's redone work.
Status ReadAttempts(sqlite3* db, const std::string& job_id, const std::map<uint32_t, v1::Task*>& by_index) {
  Stmt aq(db,
          "SELECT id, idx, node_id, state, reason, message, exit_code, assigned_ms, started_ms, "
          "finished_ms, runtime, outputs, devices, epoch, checkpoints, last_checkpoint_ms, restored_from, "
          "placement, provenance, receipt, vote, vote_reason FROM attempts WHERE job_id = ? "
          "ORDER BY assigned_ms, seq");
  aq.Bind(1, job_id);
  while (aq.Step()) {
    auto it = by_index.find(static_cast<uint32_t>(aq.Int(1)));
    if (it == by_index.end()) continue;
    v1::Attempt* a = it->second->add_attempts();
    IG_RETURN_IF_ERROR(AttemptOfRow(aq, a));
    it->second->set_work_redone_ms(it->second->work_redone_ms() + a->work_lost_ms());
  }
  return aq.status();
}

// Sets the log bytes dropped of each task of the job that dropped some.
Status ReadLogUsage(sqlite3* db, const std::string& job_id, const std::map<uint32_t, v1::Task*>& by_index) {
  Stmt lq(db, "SELECT idx, dropped_bytes FROM log_usage WHERE job_id = ? AND dropped_bytes > 0");
  lq.Bind(1, job_id);
  while (lq.Step()) {
    auto it = by_index.find(static_cast<uint32_t>(lq.Int(0)));
    if (it != by_index.end()) it->second->set_logs_dropped_bytes(static_cast<uint64_t>(lq.Int(1)));
  }
  return lq.status();
}

}  // namespace

Result<v1::Job> SqliteJobs::GetJob(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  // `q` stays on its row until GetJob returns: that keeps SQLite's read
  // transaction open, so the reads below see the same snapshot as this one.
  Stmt q(db_, "SELECT spec, spec_digest, created_ms, account FROM jobs WHERE id = ?");
  q.Bind(1, job_id);
  if (!q.Step()) {
    IG_RETURN_IF_ERROR(q.status());
    return Status::NotFound("job " + job_id + " does not exist");
  }
  IG_ASSIGN_OR_RETURN(v1::Job job, JobOfRow(q, job_id));
  std::map<uint32_t, v1::Task*> by_index;
  std::map<v1::TaskState, int> counts;
  IG_RETURN_IF_ERROR(ReadTasks(db_, job_id, job, &by_index, &counts));
  IG_RETURN_IF_ERROR(ReadAttempts(db_, job_id, by_index));
  IG_RETURN_IF_ERROR(LoadCheckpointsLocked(job_id, by_index));
  IG_RETURN_IF_ERROR(ReadLogUsage(db_, job_id, by_index));
  jobs::SetTaskCounts(job, counts);
  return job;
}

Result<std::vector<v1::Job>> SqliteJobs::ListJobs(const std::string& account) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<v1::Job> out;
  std::map<std::string, size_t> pos;
  Stmt q(db_,
         "SELECT id, spec, spec_digest, created_ms, account FROM jobs WHERE ? = '' OR account = ? "
         "ORDER BY seq DESC");
  q.Bind(1, account).Bind(2, account);
  while (q.Step()) {
    v1::Job job;
    job.set_id(q.Text(0));
    IG_ASSIGN_OR_RETURN(*job.mutable_spec(), ParseSpec(q.Blob(1)));
    job.set_spec_digest(q.Text(2));
    job.set_created_at_ms(q.Int(3));
    job.set_account(q.Text(4));
    pos[job.id()] = out.size();
    out.push_back(std::move(job));
  }
  IG_RETURN_IF_ERROR(q.status());
  std::map<std::string, std::map<v1::TaskState, int>> counts;
  Stmt c(db_, "SELECT job_id, state, COUNT(*) FROM tasks GROUP BY job_id, state");
  while (c.Step()) counts[c.Text(0)][static_cast<v1::TaskState>(c.Int(1))] = static_cast<int>(c.Int(2));
  IG_RETURN_IF_ERROR(c.status());
  for (auto& [id, by_state] : counts) {
    auto it = pos.find(id);
    if (it == pos.end()) continue;
    jobs::SetTaskCounts(out[it->second], by_state);
  }
  return out;
}

Result<std::vector<QueuedTask>> SqliteAttempts::QueuedTasks(size_t limit, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<QueuedTask> out;
  std::map<std::string, v1::JobSpec> specs;
  // LEFT JOIN: a task whose job row is gone is damage to report, not to skip.
  // The window takes accounts in turn (each one's first task, then each
  // one's second, ...), so one account's long queue cannot fill it.
  Stmt q(db_,
         "SELECT q.job_id, q.idx, q.excluded, q.queued_ms, j.spec, j.account FROM ("
         "SELECT t.job_id, t.idx, t.excluded, t.queued_ms, t.job_seq, "
         "ROW_NUMBER() OVER (PARTITION BY a.account ORDER BY t.job_seq, t.idx) AS turn "
         "FROM tasks t LEFT JOIN jobs a ON a.id = t.job_id WHERE t.state = ? AND t.not_before_ms <= ?) q "
         "LEFT JOIN jobs j ON j.id = q.job_id ORDER BY q.turn, q.job_seq, q.idx LIMIT ?");
  q.Bind(1, int64_t{v1::QUEUED}).Bind(2, now_ms).Bind(3, static_cast<int64_t>(limit));
  while (q.Step()) {
    QueuedTask t;
    t.job_id = q.Text(0);
    t.index = static_cast<uint32_t>(q.Int(1));
    t.excluded_nodes = SplitCommaList(q.Text(2));
    t.queued_ms = q.Int(3);
    t.account = q.Text(5);
    auto it = specs.find(t.job_id);
    if (it == specs.end()) {
      if (q.IsNull(4)) return Status::DataLoss("task " + t.job_id + " has no job");
      IG_ASSIGN_OR_RETURN(v1::JobSpec spec, ParseSpec(q.Blob(4)));
      it = specs.emplace(t.job_id, std::move(spec)).first;
    }
    t.spec = it->second;
    out.push_back(std::move(t));
  }
  IG_RETURN_IF_ERROR(q.status());
  return out;
}

Result<std::vector<ActiveAttempt>> SqliteAttempts::ActiveAttempts() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ActiveAttempt> out;
  Stmt q(db_,
         "SELECT a.id, a.job_id, a.idx, a.node_id, a.state, a.cpu, a.memory, a.gpus, a.devices, a.gpu_memory, "
         "a.epoch, a.gpu_milli, COALESCE(j.account, '') FROM attempts a LEFT JOIN jobs j ON j.id = a.job_id "
         "WHERE a.state IN (?, ?)");
  q.Bind(1, int64_t{v1::ASSIGNED}).Bind(2, int64_t{v1::RUNNING});
  while (q.Step()) {
    out.push_back({q.Text(0), q.Text(1), static_cast<uint32_t>(q.Int(2)), q.Text(3),
                   static_cast<v1::TaskState>(q.Int(4)), q.Double(5), static_cast<uint64_t>(q.Int(6)),
                   static_cast<uint32_t>(q.Int(7)), SplitCommaList(q.Text(8)), static_cast<uint64_t>(q.Int(9)),
                   static_cast<uint64_t>(q.Int(10)), static_cast<uint32_t>(q.Int(11)), q.Text(12)});
  }
  IG_RETURN_IF_ERROR(q.status());
  return out;
}

namespace {

// The statements CommitAssignments runs, each prepared once for the whole batch.
struct CommitStatements {
  explicit CommitStatements(sqlite3* db)
      : job_q(db, "SELECT spec FROM jobs WHERE id = ?"),
        node_q(db, "SELECT info, advertisement FROM nodes WHERE id = ?"),
        held_q(db,
               "SELECT cpu, memory, devices, gpu_memory, gpu_milli FROM attempts "
               "WHERE state IN (?, ?) AND node_id = ?"),
        // The task's row, attempts so far and latest checkpoint (if any), then an
        // update by rowid: cheaper than a conditional UPDATE ... RETURNING.
        task_q(db,
               "SELECT t.rowid, t.state, t.attempts, COALESCE(c.attempt_id, ''), COALESCE((SELECT n.provider FROM "
               "attempts ca JOIN nodes n ON n.id = ca.node_id WHERE ca.id = c.attempt_id), '') FROM tasks t "
               "LEFT JOIN checkpoints c ON c.job_id = t.job_id AND c.idx = t.idx WHERE t.job_id = ? AND t.idx = ?"),
        upd(db, "UPDATE tasks SET state = ?, attempts = ?, updated_ms = ? WHERE rowid = ?"),
        ins(db,
            "INSERT INTO attempts(id, job_id, idx, node_id, state, assigned_ms, cpu, memory, gpus, runtime, "
            "gpu_memory, devices, epoch, restored_from, placement, gpu_milli, seq) "
            "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(rowid), 0) + 1 FROM "
            "attempts))") {}
  // The first error preparing them, if any.
  Status status() const {
    for (const Stmt* s : {&job_q, &node_q, &held_q, &task_q, &upd, &ins}) IG_RETURN_IF_ERROR(s->status());
    return Status::Ok();
  }

  Stmt job_q, node_q, held_q, task_q, upd, ins;
};

// What the write of an attempt needs of its task, read with it.
struct TaskRow {
  int64_t rowid = 0;
  int64_t epoch = 0;
  std::string restored_from;
  const v1::Resources* res = nullptr;
};

// What CommitAssignments reads inside its transaction: the batch admission
// rule (capacity/batch_admission.h) loaded with the batch's nodes and what
// their active attempts hold, its candidates and, per attempt, its task's row.
struct BatchRead {
  capacity::BatchAdmission admission;
  std::vector<capacity::BatchCandidate> candidates;
  std::vector<TaskRow> rows;
  // The reservation of each job of the batch, from its spec (copied into the
  // attempt so capacity accounting survives restarts); nullopt: no such job.
  std::unordered_map<std::string, std::optional<v1::Resources>> jobs;
  std::unordered_map<std::string, std::string> runtimes;
  std::unordered_set<std::string> loaded;  // the nodes already added to the rule
};

// The job's reservation (nullptr: no such job), read once per batch.
Result<const v1::Resources*> Reservation(Stmt& job_q, const std::string& job_id, BatchRead& read) {
  auto it = read.jobs.find(job_id);
  if (it == read.jobs.end()) {
    std::optional<v1::Resources> r;
    job_q.Reset().Bind(1, job_id);
    if (job_q.Step()) {
      IG_ASSIGN_OR_RETURN(v1::JobSpec js, ParseSpec(job_q.Blob(0)));
      r = js.resources();
      read.runtimes[job_id] = js.runtime();
    }
    IG_RETURN_IF_ERROR(job_q.status());
    it = read.jobs.emplace(job_id, std::move(r)).first;
  }
  return it->second ? &*it->second : nullptr;
}

// Adds the node to the rule, once per batch, with what its active attempts hold.
Status LoadNode(CommitStatements& s, const std::string& node_id, BatchRead& read) {
  if (!read.loaded.insert(node_id).second) return Status::Ok();
  s.node_q.Reset().Bind(1, node_id);
  if (!s.node_q.Step()) return s.node_q.status();
  v1::NodeInfo info;
  v1::Advertisement ad;
  if (!s.node_q.IsNull(0)) info.ParseFromString(s.node_q.Blob(0));
  if (!s.node_q.IsNull(1)) ad.ParseFromString(s.node_q.Blob(1));
  if (!read.admission.AddNode(node_id, info, ad)) return Status::Ok();
  s.held_q.Reset().Bind(1, int64_t{v1::ASSIGNED}).Bind(2, int64_t{v1::RUNNING}).Bind(3, node_id);
  capacity::AttemptHold held;
  while (s.held_q.Step()) {
    held.cpu = s.held_q.Double(0);
    held.memory = static_cast<uint64_t>(s.held_q.Int(1));
    capacity::SplitDeviceList(s.held_q.Text(2), &held.devices);
    held.gpu_memory = static_cast<uint64_t>(s.held_q.Int(3));
    held.gpu_milli = static_cast<uint32_t>(s.held_q.Int(4));
    read.admission.Hold(node_id, held);
  }
  return s.held_q.status();
}

// The read phase: what the rule needs, each task's row and its job's
// reservation; each node of the batch is loaded once.
Status ReadBatch(CommitStatements& s, const std::vector<NewAttempt>& attempts, BatchRead& read) {
  static const v1::Resources kNone;
  read.candidates.resize(attempts.size());
  read.rows.resize(attempts.size());
  for (size_t i = 0; i < attempts.size(); ++i) {
    const NewAttempt& a = attempts[i];
    capacity::BatchCandidate& candidate = read.candidates[i];
    TaskRow& row = read.rows[i];
    s.task_q.Reset().Bind(1, a.job_id).Bind(2, int64_t{a.index});
    if (!s.task_q.Step()) {
      IG_RETURN_IF_ERROR(s.task_q.status());
      continue;  // no such task: not queued
    }
    candidate.queued = s.task_q.Int(1) == v1::QUEUED;
    row = {s.task_q.Int(0), s.task_q.Int(2) + 1, s.task_q.Text(3), nullptr};
    if (!MayRestoreFrom(a, s.task_q.Text(4))) row.restored_from.clear();
    s.task_q.Reset();
    IG_ASSIGN_OR_RETURN(const v1::Resources* res, Reservation(s.job_q, a.job_id, read));
    row.res = res == nullptr ? &kNone : res;
    IG_RETURN_IF_ERROR(LoadNode(s, a.node_id, read));
    candidate.node_id = a.node_id;
    candidate.job_id = a.job_id;
    candidate.index = a.index;
    candidate.want = {row.res->cpu(), row.res->memory_bytes(), row.res->gpu_memory_bytes(), a.placement.gpu_milli(),
                      a.device_uuids};
  }
  return Status::Ok();
}

// Claims the attempt's task and inserts the attempt, with its job's
// reservation; `done` is the attempt as committed.
Status WriteAttempt(CommitStatements& s, const NewAttempt& a, const TaskRow& row, const std::string& runtime,
                    NewAttempt* done) {
  const v1::Resources* res = row.res;
  s.upd.Reset().Bind(1, int64_t{v1::ASSIGNED}).Bind(2, row.epoch).Bind(3, a.now_ms).Bind(4, row.rowid);
  s.upd.Step();
  IG_RETURN_IF_ERROR(s.upd.status());
  *done = a;
  done->lease_epoch = static_cast<uint64_t>(row.epoch);
  std::string devices;
  for (const auto& d : a.device_uuids) devices += d + ",";
  s.ins.Reset()
      .Bind(1, a.attempt_id)
      .Bind(2, a.job_id)
      .Bind(3, int64_t{a.index})
      .Bind(4, a.node_id)
      .Bind(5, int64_t{v1::ASSIGNED})
      .Bind(6, a.now_ms)
      .Bind(7, res->cpu())
      .Bind(8, static_cast<int64_t>(res->memory_bytes()))
      .Bind(9, int64_t{res->gpus()})
      .Bind(10, runtime)
      .Bind(11, static_cast<int64_t>(res->gpu_memory_bytes()))
      .Bind(12, devices)
      .Bind(13, static_cast<int64_t>(done->lease_epoch))
      .Bind(14, row.restored_from)
      .BindBlob(15, a.placement.SerializeAsString())
      .Bind(16, int64_t{a.placement.gpu_milli()});
  s.ins.Step();
  return s.ins.status();
}

// The write phase: what the rule admitted (indices into `attempts`), in
// order. The lease epoch is the task's attempt ordinal; the attempt starts
// from the task's latest checkpoint, if it has one.
Result<std::vector<NewAttempt>> WriteAdmitted(CommitStatements& s, const std::vector<NewAttempt>& attempts,
                                              const std::vector<size_t>& admitted, BatchRead& read) {
  std::vector<NewAttempt> committed;
  for (size_t i : admitted) {
    NewAttempt done;
    IG_RETURN_IF_ERROR(WriteAttempt(s, attempts[i], read.rows[i], read.runtimes[attempts[i].job_id], &done));
    committed.push_back(std::move(done));
  }
  return committed;
}

}  // namespace

Result<std::vector<NewAttempt>> SqliteAttempts::CommitAssignments(const std::vector<NewAttempt>& attempts) {
  std::lock_guard<std::mutex> lock(mu_);
  // BEGIN IMMEDIATE: the write lock is taken before the first read, so what
  // the checks below read stays true until COMMIT, even against another
  // process writing the same file.
  Transaction tx(db_);
  IG_RETURN_IF_ERROR(tx.status());
  CommitStatements s(db_);
  IG_RETURN_IF_ERROR(s.status());
  BatchRead read;
  IG_RETURN_IF_ERROR(ReadBatch(s, attempts, read));
  // What does not fit any more is not admitted: its task stays queued.
  const std::vector<size_t> admitted = read.admission.Admit(read.candidates);
  IG_ASSIGN_OR_RETURN(std::vector<NewAttempt> committed, WriteAdmitted(s, attempts, admitted, read));
  IG_RETURN_IF_ERROR(tx.Commit());
  return committed;
}

Status SqliteRole::WriteTaskLocked(const std::string& job_id, uint32_t index, const jobs::TaskWrite& write) {
  Stmt upd(db_,
           "UPDATE tasks SET state = ?, reason = ?, message = ?, updated_ms = ?, "
           "queued_ms = CASE WHEN ? THEN ? ELSE queued_ms END WHERE job_id = ? AND idx = ?");
  upd.Bind(1, int64_t{write.state})
      .Bind(2, int64_t{write.reason})
      .Bind(3, write.message)
      .Bind(4, write.updated_ms)
      .Bind(5, int64_t{write.queued_ms.has_value()})
      .Bind(6, write.queued_ms.value_or(0))
      .Bind(7, job_id)
      .Bind(8, int64_t{index});
  upd.Step();
  return upd.status();
}

Status SqliteJobs::MoveTaskLocked(const std::string& job_id, uint32_t index, const jobs::TaskMove& move,
                                  int64_t now_ms) {
  Stmt cur(db_, "SELECT state FROM tasks WHERE job_id = ? AND idx = ?");
  cur.Bind(1, job_id).Bind(2, int64_t{index});
  if (!cur.Step()) return Status::NotFound("task " + job_id + "/" + std::to_string(index));
  IG_ASSIGN_OR_RETURN(std::optional<jobs::TaskWrite> write,
                      jobs::PlanTaskMove(static_cast<v1::TaskState>(cur.Int(0)), move, now_ms));
  return write ? WriteTaskLocked(job_id, index, *write) : Status::Ok();
}

Status SqliteAttempts::ExecutePlanLocked(const std::string& attempt_id, const std::string& job_id, uint32_t index,
                                         const jobs::OutcomePlan& plan) {
  if (plan.accepted_ms) {
    Stmt ack(db_, "UPDATE attempts SET accepted_ms = ? WHERE id = ?");
    ack.Bind(1, *plan.accepted_ms).Bind(2, attempt_id);
    ack.Step();
    IG_RETURN_IF_ERROR(ack.status());
  }
  if (plan.attempt) {
    const jobs::AttemptWrite& a = *plan.attempt;
    Stmt upd(db_,
             "UPDATE attempts SET state = ?, reason = ?, message = ?, "
             "exit_code = CASE WHEN ? THEN ? ELSE exit_code END, "
             "started_ms = CASE WHEN ? THEN ? ELSE started_ms END, "
             "finished_ms = CASE WHEN ? THEN ? ELSE finished_ms END, "
             "runtime = CASE WHEN ? THEN ? ELSE runtime END, "
             "outputs = CASE WHEN ? THEN ? ELSE outputs END, "
             "provenance = CASE WHEN ? THEN ? ELSE provenance END WHERE id = ?");
    upd.Bind(1, int64_t{a.state})
        .Bind(2, int64_t{a.reason})
        .Bind(3, a.message)
        .Bind(4, int64_t{a.exit_code.has_value()})
        .Bind(5, int64_t{a.exit_code.value_or(0)})
        .Bind(6, int64_t{a.started_ms.has_value()})
        .Bind(7, a.started_ms.value_or(0))
        .Bind(8, int64_t{a.finished_ms.has_value()})
        .Bind(9, a.finished_ms.value_or(0))
        .Bind(10, int64_t{a.runtime.has_value()})
        .Bind(11, a.runtime.value_or(""))
        .Bind(12, int64_t{a.outputs.has_value()})
        .BindBlob(13, a.outputs ? a.outputs->SerializeAsString() : "")
        .Bind(14, int64_t{a.provenance.has_value()})
        .BindBlob(15, a.provenance ? a.provenance->SerializeAsString() : "")
        .Bind(16, attempt_id);
    upd.Step();
    IG_RETURN_IF_ERROR(upd.status());
    if (a.vote) {
      Stmt vote(db_, "UPDATE attempts SET vote = ?, vote_reason = '' WHERE id = ?");
      vote.Bind(1, *a.vote).Bind(2, attempt_id);
      vote.Step();
      IG_RETURN_IF_ERROR(vote.status());
    }
  }
  if (plan.task) IG_RETURN_IF_ERROR(WriteTaskLocked(job_id, index, *plan.task));
  if (plan.task_not_before_ms) {
    Stmt nb(db_, "UPDATE tasks SET not_before_ms = ? WHERE job_id = ? AND idx = ?");
    nb.Bind(1, *plan.task_not_before_ms).Bind(2, job_id).Bind(3, int64_t{index});
    nb.Step();
    IG_RETURN_IF_ERROR(nb.status());
  }
  if (plan.exclude_node) {
    Stmt ex(db_, "UPDATE tasks SET excluded = excluded || ? || ',' WHERE job_id = ? AND idx = ?");
    ex.Bind(1, *plan.exclude_node).Bind(2, job_id).Bind(3, int64_t{index});
    ex.Step();
    IG_RETURN_IF_ERROR(ex.status());
  }
  return Status::Ok();
}

Result<EventResult> SqliteAttempts::ApplyAttemptReport(const std::string& node_id,
                                                       const v1::ReportAttemptRequest& report, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Transaction tx(db_);
  IG_RETURN_IF_ERROR(tx.status());
  static const std::string kQuery = "SELECT a.job_id, a.idx, a.node_id, a.state, t.state, " + AttemptsUsedColumn() +
                                    ", j.spec, a.epoch, t.attempts, a.accepted_ms FROM attempts a "
                                    "JOIN tasks t ON t.job_id = a.job_id AND t.idx = a.idx "
                                    "JOIN jobs j ON j.id = a.job_id WHERE a.id = ?";
  Stmt q(db_, kQuery.c_str());
  q.Bind(BindNoFaultReasons(q), report.attempt_id());
  if (!q.Step()) {
    IG_RETURN_IF_ERROR(q.status());
    return Status::NotFound("attempt " + report.attempt_id() + " does not exist");
  }
  if (q.Text(2) != node_id) {
    return Status::PermissionDenied("attempt " + report.attempt_id() + " is not assigned to this node");
  }
  IG_RETURN_IF_ERROR(jobs::CheckLeaseEpoch(report, static_cast<uint64_t>(q.Int(7)), static_cast<uint64_t>(q.Int(8))));
  IG_ASSIGN_OR_RETURN(v1::JobSpec spec, ParseSpec(q.Blob(6)));
  jobs::AttemptRow row;
  row.ctx.attempt_state = static_cast<v1::TaskState>(q.Int(3));
  row.ctx.task_state = static_cast<v1::TaskState>(q.Int(4));
  row.ctx.attempts_used = static_cast<uint32_t>(q.Int(5));
  row.ctx.retries = spec.retries();
  row.ctx.idempotent = spec.idempotent();
  row.ctx.verified = jobs::VerifiedJob(spec);
  row.node_id = node_id;
  row.accepted_ms = q.Int(9);
  EventResult result{q.Text(0), static_cast<uint32_t>(q.Int(1)), {}};
  IG_ASSIGN_OR_RETURN(jobs::OutcomePlan plan, jobs::PlanReport(row, report, now_ms));
  IG_RETURN_IF_ERROR(ExecutePlanLocked(report.attempt_id(), result.job_id, result.index, plan));
  if (plan.record_checkpoint) {
    IG_RETURN_IF_ERROR(
        RecordCheckpointLocked(report, result.job_id, result.index, static_cast<uint64_t>(q.Int(7)), now_ms));
  }
  IG_RETURN_IF_ERROR(tx.Commit());
  result.outcome = std::move(plan.outcome);
  return result;
}

Result<std::vector<EventResult>> SqliteAttempts::FailNodeAttempts(const std::string& node_id, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Transaction tx(db_);
  IG_RETURN_IF_ERROR(tx.status());
  struct Row {
    std::string id, job_id;
    uint32_t index;
    jobs::AttemptContext ctx;
  };
  std::vector<Row> rows;
  static const std::string kQuery = "SELECT a.id, a.job_id, a.idx, a.state, t.state, " + AttemptsUsedColumn() +
                                    ", j.spec FROM attempts a "
                                    "JOIN tasks t ON t.job_id = a.job_id AND t.idx = a.idx "
                                    "JOIN jobs j ON j.id = a.job_id WHERE a.node_id = ? AND a.state IN (?, ?) "
                                    "ORDER BY a.assigned_ms, a.seq";
  Stmt q(db_, kQuery.c_str());
  const int next = BindNoFaultReasons(q);
  q.Bind(next, node_id).Bind(next + 1, int64_t{v1::ASSIGNED}).Bind(next + 2, int64_t{v1::RUNNING});
  while (q.Step()) {
    IG_ASSIGN_OR_RETURN(v1::JobSpec spec, ParseSpec(q.Blob(6)));
    Row r{q.Text(0), q.Text(1), static_cast<uint32_t>(q.Int(2)), {}};
    r.ctx.attempt_state = static_cast<v1::TaskState>(q.Int(3));
    r.ctx.task_state = static_cast<v1::TaskState>(q.Int(4));
    r.ctx.attempts_used = static_cast<uint32_t>(q.Int(5));
    r.ctx.retries = spec.retries();
    r.ctx.idempotent = spec.idempotent();
    rows.push_back(std::move(r));
  }
  IG_RETURN_IF_ERROR(q.status());
  std::vector<EventResult> out;
  for (const auto& r : rows) {
    IG_ASSIGN_OR_RETURN(jobs::OutcomePlan plan, jobs::PlanNodeLost({r.ctx, node_id}, now_ms));
    IG_RETURN_IF_ERROR(ExecutePlanLocked(r.id, r.job_id, r.index, plan));
    out.push_back({r.job_id, r.index, std::move(plan.outcome)});
  }
  IG_RETURN_IF_ERROR(tx.Commit());
  return out;
}

Result<CancelResult> SqliteJobs::CancelJob(const std::string& job_id, int64_t now_ms) {
  CancelResult result;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Transaction tx(db_);
    IG_RETURN_IF_ERROR(tx.status());
    Stmt exists(db_, "SELECT 1 FROM jobs WHERE id = ?");
    exists.Bind(1, job_id);
    if (!exists.Step()) return Status::NotFound("job " + job_id + " does not exist");
    Stmt active(db_,
                "SELECT id, idx, node_id, state FROM attempts WHERE job_id = ? AND state IN (?, ?) "
                "ORDER BY assigned_ms, seq");
    active.Bind(1, job_id).Bind(2, int64_t{v1::ASSIGNED}).Bind(3, int64_t{v1::RUNNING});
    while (active.Step()) {
      result.stopped.push_back({active.Text(0), job_id, static_cast<uint32_t>(active.Int(1)), active.Text(2),
                                static_cast<v1::TaskState>(active.Int(3))});
    }
    IG_RETURN_IF_ERROR(active.status());
    // Active attempts keep holding their node until the agent confirms the stop.
    Stmt a(db_, "UPDATE attempts SET reason = ?, message = 'cancel requested' WHERE job_id = ? AND state IN (?, ?)");
    a.Bind(1, int64_t{v1::USER_CANCEL}).Bind(2, job_id).Bind(3, int64_t{v1::ASSIGNED}).Bind(4, int64_t{v1::RUNNING});
    a.Step();
    IG_RETURN_IF_ERROR(a.status());
    // One statement for every task the cancel moves (none re-enters the queue,
    // so queued_ms stands).
    static const std::vector<v1::TaskState> kCancellable = jobs::CancellableStates();
    static const std::string kCancelTasks =
        "UPDATE tasks SET state = ?, reason = ?, message = ?, updated_ms = ? "
        "WHERE job_id = ? AND state IN (" +
        Placeholders(kCancellable.size()) + ")";
    const jobs::TaskMove cancel = jobs::CancelMove();
    Stmt t(db_, kCancelTasks.c_str());
    t.Bind(1, int64_t{cancel.to})
        .Bind(2, int64_t{cancel.reason})
        .Bind(3, cancel.message)
        .Bind(4, now_ms)
        .Bind(5, job_id);
    for (size_t i = 0; i < kCancellable.size(); ++i) t.Bind(static_cast<int>(6 + i), int64_t{kCancellable[i]});
    t.Step();
    IG_RETURN_IF_ERROR(t.status());
    IG_RETURN_IF_ERROR(tx.Commit());
  }
  IG_ASSIGN_OR_RETURN(result.job, GetJob(job_id));
  return result;
}

Result<v1::Job> SqliteJobs::ResolveLost(const std::string& job_id, bool retry, int64_t now_ms) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Transaction tx(db_);
    IG_RETURN_IF_ERROR(tx.status());
    std::vector<uint32_t> lost;
    Stmt q(db_, "SELECT idx FROM tasks WHERE job_id = ? AND state = ?");
    q.Bind(1, job_id).Bind(2, int64_t{v1::LOST});
    while (q.Step()) lost.push_back(static_cast<uint32_t>(q.Int(0)));
    IG_RETURN_IF_ERROR(q.status());
    if (lost.empty()) return Status::FailedPrecondition("job " + job_id + " has no lost tasks");
    for (uint32_t idx : lost) {
      IG_RETURN_IF_ERROR(MoveTaskLocked(job_id, idx, jobs::ResolveLostMove(retry), now_ms));
    }
    IG_RETURN_IF_ERROR(tx.Commit());
  }
  return GetJob(job_id);
}

Result<int> SqliteJobs::ExpireQueuedTasks(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Transaction tx(db_);
  IG_RETURN_IF_ERROR(tx.status());
  std::vector<std::pair<std::string, uint32_t>> expired;
  Stmt q(db_,
         "SELECT t.job_id, t.idx, t.queued_ms, j.queue_timeout_ms FROM tasks t JOIN jobs j ON j.id = t.job_id "
         "WHERE t.state = ? AND j.queue_timeout_ms > 0 AND t.not_before_ms < ?");
  q.Bind(1, int64_t{v1::QUEUED}).Bind(2, jobs::kVerdictHoldMs);
  while (q.Step()) {
    if (jobs::QueueTimedOut(q.Int(2), q.Int(3), now_ms))
      expired.emplace_back(q.Text(0), static_cast<uint32_t>(q.Int(1)));
  }
  IG_RETURN_IF_ERROR(q.status());
  for (const auto& [job, idx] : expired) {
    IG_RETURN_IF_ERROR(MoveTaskLocked(job, idx, jobs::QueueTimeoutMove(), now_ms));
  }
  IG_RETURN_IF_ERROR(tx.Commit());
  return static_cast<int>(expired.size());
}

Status SqliteJobs::FailQueuedTask(const std::string& job_id, uint32_t index, v1::FailureReason reason,
                                  const std::string& message, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Transaction tx(db_);
  IG_RETURN_IF_ERROR(tx.status());
  Stmt cur(db_, "SELECT state FROM tasks WHERE job_id = ? AND idx = ?");
  cur.Bind(1, job_id).Bind(2, int64_t{index});
  if (!cur.Step()) {
    IG_RETURN_IF_ERROR(cur.status());
    return Status::NotFound("task " + job_id + "/" + std::to_string(index) + " does not exist");
  }
  IG_RETURN_IF_ERROR(jobs::CheckFailQueued(job_id, index, static_cast<v1::TaskState>(cur.Int(0))));
  IG_RETURN_IF_ERROR(MoveTaskLocked(job_id, index, {v1::FAILED, reason, message}, now_ms));
  return tx.Commit();
}

}  // namespace idlegrid::store

namespace idlegrid::store {

Result<Store::AttemptOwner> SqliteAttempts::GetAttemptOwner(const std::string& attempt_id) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_, "SELECT job_id, node_id, idx, state FROM attempts WHERE id = ?");
  q.Bind(1, attempt_id);
  if (!q.Step()) {
    IG_RETURN_IF_ERROR(q.status());
    return Status::NotFound("attempt " + attempt_id + " does not exist");
  }
  return AttemptOwner{q.Text(0), q.Text(1), static_cast<uint32_t>(q.Int(2)), static_cast<v1::TaskState>(q.Int(3))};
}

Result<std::vector<ActiveAttempt>> SqliteAttempts::UnacknowledgedAttempts(int64_t assigned_before_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ActiveAttempt> out;
  Stmt q(db_,
         "SELECT id, job_id, idx, node_id, state FROM attempts "
         "WHERE state = ? AND accepted_ms = 0 AND assigned_ms < ? ORDER BY assigned_ms");
  q.Bind(1, int64_t{v1::ASSIGNED}).Bind(2, assigned_before_ms);
  while (q.Step()) {
    ActiveAttempt a;
    a.attempt_id = q.Text(0);
    a.job_id = q.Text(1);
    a.index = static_cast<uint32_t>(q.Int(2));
    a.node_id = q.Text(3);
    a.state = static_cast<v1::TaskState>(q.Int(4));
    out.push_back(std::move(a));
  }
  IG_RETURN_IF_ERROR(q.status());
  return out;
}

// Here beside AttemptOfRow, which it shares with GetJob.
Result<std::vector<NodeAttemptRow>> SqliteAttempts::NodeAttempts(const std::string& node_id,
                                                                 std::optional<jobs::AttemptCursor> before,
                                                                 size_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<NodeAttemptRow> out;
  Stmt q(db_,
         "SELECT id, idx, node_id, state, reason, message, exit_code, assigned_ms, started_ms, "
         "finished_ms, runtime, outputs, devices, epoch, checkpoints, last_checkpoint_ms, restored_from, "
         "placement, provenance, receipt, vote, vote_reason, job_id, seq FROM attempts "
         "WHERE node_id = ? AND (? = 0 OR assigned_ms < ? OR (assigned_ms = ? AND seq < ?)) "
         "ORDER BY assigned_ms DESC, seq DESC LIMIT ?");
  const jobs::AttemptCursor from = before.value_or(jobs::AttemptCursor{});
  q.Bind(1, node_id)
      .Bind(2, int64_t{before.has_value()})
      .Bind(3, from.assigned_ms)
      .Bind(4, from.assigned_ms)
      .Bind(5, from.seq)
      .Bind(6, static_cast<int64_t>(limit));
  while (q.Step()) {
    NodeAttemptRow row;
    IG_RETURN_IF_ERROR(AttemptOfRow(q, &row.attempt));
    row.task_index = static_cast<uint32_t>(q.Int(1));
    row.job_id = q.Text(22);
    row.cursor = {row.attempt.assigned_at_ms(), q.Int(23)};
    out.push_back(std::move(row));
  }
  IG_RETURN_IF_ERROR(q.status());
  return out;
}

Result<std::vector<ActiveAttempt>> SqliteAttempts::AssignedAttempts(const std::string& node_id) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ActiveAttempt> out;
  Stmt q(db_,
         "SELECT id, job_id, idx, node_id, state, cpu, memory, gpus FROM attempts "
         "WHERE node_id = ? AND state = ? ORDER BY assigned_ms");
  q.Bind(1, node_id).Bind(2, int64_t{v1::ASSIGNED});
  while (q.Step()) {
    out.push_back({q.Text(0), q.Text(1), static_cast<uint32_t>(q.Int(2)), q.Text(3),
                   static_cast<v1::TaskState>(q.Int(4)), q.Double(5), static_cast<uint64_t>(q.Int(6)),
                   static_cast<uint32_t>(q.Int(7))});
  }
  IG_RETURN_IF_ERROR(q.status());
  return out;
}

Status SqliteAttempts::PutReceipt(const std::string& attempt_id, const v1::Receipt& receipt) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_, "UPDATE attempts SET receipt = ? WHERE id = ?");
  q.BindBlob(1, receipt.SerializeAsString()).Bind(2, attempt_id);
  q.Step();
  IG_RETURN_IF_ERROR(q.status());
  if (sqlite3_changes(db_) == 0) return Status::NotFound("no attempt " + attempt_id);
  return Status::Ok();
}

}  // namespace idlegrid::store
