// Workflows' rows in SQLite (docs/workflows.md): the rules are the
// coordinator's (workflow/plan.h); this file stores what it decided.
#include "store/sqlite/sqlite_store.h"

namespace idlegrid::store {

Status SqliteWorkflows::CreateWorkflow(const std::string& id, const v1::WorkflowSpec& spec, const std::string& account,
                                       int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Transaction tx(db_);
  IG_RETURN_IF_ERROR(tx.status());
  Stmt ins(db_,
           "INSERT INTO workflows(id, account, spec, state, settled, created_ms, updated_ms) "
           "VALUES(?, ?, ?, 'running', 0, ?, ?) ON CONFLICT(id) DO NOTHING");
  ins.Bind(1, id).Bind(2, account).BindBlob(3, spec.SerializeAsString()).Bind(4, now_ms).Bind(5, now_ms);
  ins.Step();
  IG_RETURN_IF_ERROR(ins.status());
  if (sqlite3_changes(db_) == 0) return Status::AlreadyExists("workflow " + id + " already exists");
  Stmt step(db_, "INSERT INTO workflow_steps(workflow_id, idx, name, state) VALUES(?, ?, ?, 'waiting')");
  for (int i = 0; i < spec.steps_size(); ++i) {
    step.Reset().Bind(1, id).Bind(2, int64_t{i}).Bind(3, spec.steps(i).name());
    step.Step();
    IG_RETURN_IF_ERROR(step.status());
  }
  return tx.Commit();
}

Result<std::vector<v1::Workflow>> SqliteWorkflows::ReadWorkflowsLocked(const char* where, const std::string& arg) {
  std::string sql = std::string("SELECT id, account, spec, state, created_ms FROM workflows ") + where;
  Stmt q(db_, sql.c_str());
  if (!arg.empty()) q.Bind(1, arg);
  std::vector<v1::Workflow> out;
  while (q.Step()) {
    v1::Workflow& wf = out.emplace_back();
    wf.set_id(q.Text(0));
    wf.set_account(q.Text(1));
    if (!wf.mutable_spec()->ParseFromString(q.Blob(2))) return Status::DataLoss("stored workflow spec does not parse");
    wf.set_state(q.Text(3));
    wf.set_created_at_ms(q.Int(4));
  }
  IG_RETURN_IF_ERROR(q.status());
  Stmt steps(db_,
             "SELECT name, state, job_id, cache_key, cached, message FROM workflow_steps "
             "WHERE workflow_id = ? ORDER BY idx");
  for (v1::Workflow& wf : out) {
    steps.Reset().Bind(1, wf.id());
    while (steps.Step()) {
      v1::WorkflowStep* s = wf.add_steps();
      s->set_name(steps.Text(0));
      s->set_state(steps.Text(1));
      s->set_job_id(steps.Text(2));
      s->set_cache_key(steps.Text(3));
      s->set_cached(steps.Int(4) != 0);
      s->set_message(steps.Text(5));
    }
    IG_RETURN_IF_ERROR(steps.status());
  }
  return out;
}

Result<v1::Workflow> SqliteWorkflows::GetWorkflow(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  IG_ASSIGN_OR_RETURN(auto found, ReadWorkflowsLocked("WHERE id = ?", id));
  if (found.empty()) return Status::NotFound("workflow " + id + " does not exist");
  return std::move(found.front());
}

Result<std::vector<v1::Workflow>> SqliteWorkflows::ListWorkflows(const std::string& account) {
  std::lock_guard<std::mutex> lock(mu_);
  if (account.empty()) return ReadWorkflowsLocked("ORDER BY created_ms DESC, id", "");
  return ReadWorkflowsLocked("WHERE account = ? ORDER BY created_ms DESC, id", account);
}

Result<std::vector<std::string>> SqliteWorkflows::UnsettledWorkflows(size_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_, "SELECT id FROM workflows WHERE settled = 0 ORDER BY created_ms, id LIMIT ?");
  q.Bind(1, static_cast<int64_t>(limit));
  std::vector<std::string> out;
  while (q.Step()) out.push_back(q.Text(0));
  IG_RETURN_IF_ERROR(q.status());
  return out;
}

Result<bool> SqliteWorkflows::UpdateWorkflow(const WorkflowWrite& w, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Transaction tx(db_);
  IG_RETURN_IF_ERROR(tx.status());
  Stmt cur(db_, "SELECT state, settled FROM workflows WHERE id = ?");
  cur.Bind(1, w.id);
  if (!cur.Step()) {
    IG_RETURN_IF_ERROR(cur.status());
    return false;
  }
  const std::string state = cur.Text(0);
  if (!(state == "running" || (state == "cancelled" && cur.Int(1) == 0))) return false;
  const std::string next = state == "cancelled" ? state : w.state;
  Stmt upd(db_, "UPDATE workflows SET state = ?, settled = ?, updated_ms = ? WHERE id = ?");
  upd.Bind(1, next).Bind(2, int64_t{w.settled}).Bind(3, now_ms).Bind(4, w.id);
  upd.Step();
  IG_RETURN_IF_ERROR(upd.status());
  Stmt step(db_, "UPDATE workflow_steps SET state = ?, message = ? WHERE workflow_id = ? AND name = ?");
  for (const v1::WorkflowStep& s : w.steps) {
    step.Reset().Bind(1, s.state()).Bind(2, s.message()).Bind(3, w.id).Bind(4, s.name());
    step.Step();
    IG_RETURN_IF_ERROR(step.status());
  }
  IG_RETURN_IF_ERROR(tx.Commit());
  return true;
}

Result<std::string> SqliteWorkflows::ClaimWorkflowStep(const std::string& workflow_id, const v1::WorkflowStep& s) {
  std::lock_guard<std::mutex> lock(mu_);
  Transaction tx(db_);
  IG_RETURN_IF_ERROR(tx.status());
  Stmt claim(db_,
             "UPDATE workflow_steps SET job_id = ?, cache_key = ?, cached = ?, state = ?, message = ? "
             "WHERE workflow_id = ? AND name = ? AND job_id = ''");
  claim.Bind(1, s.job_id())
      .Bind(2, s.cache_key())
      .Bind(3, int64_t{s.cached()})
      .Bind(4, s.state())
      .Bind(5, s.message())
      .Bind(6, workflow_id)
      .Bind(7, s.name());
  claim.Step();
  IG_RETURN_IF_ERROR(claim.status());
  Stmt held(db_, "SELECT job_id FROM workflow_steps WHERE workflow_id = ? AND name = ?");
  held.Bind(1, workflow_id).Bind(2, s.name());
  if (!held.Step()) {
    IG_RETURN_IF_ERROR(held.status());
    return Status::NotFound("workflow " + workflow_id + " has no step " + s.name());
  }
  std::string job_id = held.Text(0);
  IG_RETURN_IF_ERROR(tx.Commit());
  return job_id;
}

Result<std::optional<std::string>> SqliteWorkflows::CachedStepJob(const std::string& account,
                                                                  const std::string& cache_key) {
  std::lock_guard<std::mutex> lock(mu_);
  // Only a step whose job still exists (retention may have deleted it).
  Stmt q(db_,
         "SELECT s.job_id FROM workflow_steps s JOIN workflows w ON w.id = s.workflow_id "
         "JOIN jobs j ON j.id = s.job_id "
         "WHERE s.cache_key = ? AND s.state = 'succeeded' AND w.account = ? "
         "ORDER BY w.created_ms DESC LIMIT 1");
  q.Bind(1, cache_key).Bind(2, account);
  if (!q.Step()) {
    IG_RETURN_IF_ERROR(q.status());
    return std::optional<std::string>();
  }
  return std::optional<std::string>(q.Text(0));
}

}  // namespace idlegrid::store
