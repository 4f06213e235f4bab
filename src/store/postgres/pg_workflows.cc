// Workflows' rows in PostgreSQL (docs/workflows.md): the rules are the
// coordinator's (workflow/plan.h); this file stores what it decided.
#include "store/postgres/pg_codec.h"
#include "store/postgres/postgres_store.h"

namespace idlegrid::store {

using pg::Connection;
using pg::Isolation;
using pg::Params;
using pg::Rows;

Status PgWorkflows::CreateWorkflow(const std::string& id, const v1::WorkflowSpec& spec, const std::string& account,
                                   int64_t now_ms) {
  std::vector<std::string> names;
  for (const auto& s : spec.steps()) names.push_back(s.name());
  return Tx(Isolation::kReadCommitted, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows ins, c.Exec("INSERT INTO workflows(id, account, spec, state, settled, created_ms, "
                                         "updated_ms) VALUES($1, $2, $3, 'running', 0, $4, $4) "
                                         "ON CONFLICT(id) DO NOTHING RETURNING id",
                                         Params().Text(id).Text(account).Bytes(spec.SerializeAsString()).Int(now_ms)));
    if (ins.empty()) return Status::AlreadyExists("workflow " + id + " already exists");
    return c
        .Exec(
            "INSERT INTO workflow_steps(workflow_id, idx, name, state) "
            "SELECT $1::text, ord - 1, name, 'waiting' FROM unnest($2::text[]) WITH ORDINALITY AS t(name, ord)",
            Params().Text(id).TextArray(names))
        .status();
  });
}

Result<std::vector<v1::Workflow>> PgWorkflows::ReadWorkflows(Connection& c, const std::string& where,
                                                             const std::string& arg) {
  const std::string sql = "SELECT id, account, spec, state, created_ms FROM workflows " + where;
  Params params;
  if (!arg.empty()) params.Text(arg);
  IG_ASSIGN_OR_RETURN(Rows q, c.Exec(sql.c_str(), params));
  std::vector<v1::Workflow> out;
  for (int r = 0; r < q.size(); ++r) {
    v1::Workflow& wf = out.emplace_back();
    wf.set_id(q.Text(r, 0));
    wf.set_account(q.Text(r, 1));
    if (!wf.mutable_spec()->ParseFromString(q.Text(r, 2)))
      return Status::DataLoss("stored workflow spec does not parse");
    wf.set_state(q.Text(r, 3));
    wf.set_created_at_ms(q.Int(r, 4));
  }
  for (v1::Workflow& wf : out) {
    IG_ASSIGN_OR_RETURN(Rows steps, c.Exec("SELECT name, state, job_id, cache_key, cached, message "
                                           "FROM workflow_steps WHERE workflow_id = $1 ORDER BY idx",
                                           Params().Text(wf.id())));
    for (int r = 0; r < steps.size(); ++r) {
      v1::WorkflowStep* s = wf.add_steps();
      s->set_name(steps.Text(r, 0));
      s->set_state(steps.Text(r, 1));
      s->set_job_id(steps.Text(r, 2));
      s->set_cache_key(steps.Text(r, 3));
      s->set_cached(steps.Int(r, 4) != 0);
      s->set_message(steps.Text(r, 5));
    }
  }
  return out;
}

Result<v1::Workflow> PgWorkflows::GetWorkflow(const std::string& id) {
  std::vector<v1::Workflow> found;
  IG_RETURN_IF_ERROR(Tx(Isolation::kReadOnlySnapshot, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(found, ReadWorkflows(c, "WHERE id = $1", id));
    return Status::Ok();
  }));
  if (found.empty()) return Status::NotFound("workflow " + id + " does not exist");
  return std::move(found.front());
}

Result<std::vector<v1::Workflow>> PgWorkflows::ListWorkflows(const std::string& account) {
  std::vector<v1::Workflow> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kReadOnlySnapshot, [&](Connection& c) -> Status {
    if (account.empty()) {
      IG_ASSIGN_OR_RETURN(out, ReadWorkflows(c, "ORDER BY created_ms DESC, id", ""));
    } else {
      IG_ASSIGN_OR_RETURN(out, ReadWorkflows(c, "WHERE account = $1 ORDER BY created_ms DESC, id", account));
    }
    return Status::Ok();
  }));
  return out;
}

Result<std::vector<std::string>> PgWorkflows::UnsettledWorkflows(size_t limit) {
  std::vector<std::string> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    out.clear();
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("SELECT id FROM workflows WHERE settled = 0 ORDER BY created_ms, id LIMIT $1",
                                       Params().Int(static_cast<int64_t>(limit))));
    for (int r = 0; r < q.size(); ++r) out.push_back(q.Text(r, 0));
    return Status::Ok();
  }));
  return out;
}

Result<bool> PgWorkflows::UpdateWorkflow(const WorkflowWrite& w, int64_t now_ms) {
  bool written = false;
  IG_RETURN_IF_ERROR(Tx(Isolation::kSerializable, [&](Connection& c) -> Status {
    written = false;
    IG_ASSIGN_OR_RETURN(Rows cur,
                        c.Exec("SELECT state, settled FROM workflows WHERE id = $1 FOR UPDATE", Params().Text(w.id)));
    if (cur.empty()) return Status::Ok();
    const std::string state = cur.Text(0, 0);
    if (!(state == "running" || (state == "cancelled" && cur.Int(0, 1) == 0))) return Status::Ok();
    const std::string next = state == "cancelled" ? state : w.state;
    IG_RETURN_IF_ERROR(c.Exec("UPDATE workflows SET state = $1, settled = $2, updated_ms = $3 WHERE id = $4",
                              Params().Text(next).Int(w.settled).Int(now_ms).Text(w.id))
                           .status());
    for (const v1::WorkflowStep& s : w.steps) {
      IG_RETURN_IF_ERROR(
          c.Exec("UPDATE workflow_steps SET state = $1, message = $2 WHERE workflow_id = $3 AND name = $4",
                 Params().Text(s.state()).Text(s.message()).Text(w.id).Text(s.name()))
              .status());
    }
    written = true;
    return Status::Ok();
  }));
  return written;
}

Result<std::string> PgWorkflows::ClaimWorkflowStep(const std::string& workflow_id, const v1::WorkflowStep& s) {
  std::string held;
  IG_RETURN_IF_ERROR(Tx(Isolation::kReadCommitted, [&](Connection& c) -> Status {
    // Under READ COMMITTED the WHERE is re-checked on the newest row version:
    // of two claims at once, the second finds a job id and changes nothing.
    IG_RETURN_IF_ERROR(c.Exec("UPDATE workflow_steps SET job_id = $1, cache_key = $2, cached = $3, state = $4, "
                              "message = $5 WHERE workflow_id = $6 AND name = $7 AND job_id = ''",
                              Params()
                                  .Text(s.job_id())
                                  .Text(s.cache_key())
                                  .Int(s.cached())
                                  .Text(s.state())
                                  .Text(s.message())
                                  .Text(workflow_id)
                                  .Text(s.name()))
                           .status());
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("SELECT job_id FROM workflow_steps WHERE workflow_id = $1 AND name = $2",
                                       Params().Text(workflow_id).Text(s.name())));
    if (q.empty()) return Status::NotFound("workflow " + workflow_id + " has no step " + s.name());
    held = q.Text(0, 0);
    return Status::Ok();
  }));
  return held;
}

Result<std::optional<std::string>> PgWorkflows::CachedStepJob(const std::string& account,
                                                              const std::string& cache_key) {
  std::optional<std::string> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    out.reset();
    // Only a step whose job still exists (retention may have deleted it).
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("SELECT s.job_id FROM workflow_steps s JOIN workflows w ON w.id = s.workflow_id "
                                       "JOIN jobs j ON j.id = s.job_id "
                                       "WHERE s.cache_key = $1 AND s.state = 'succeeded' AND w.account = $2 "
                                       "ORDER BY w.created_ms DESC LIMIT 1",
                                       Params().Text(cache_key).Text(account)));
    if (!q.empty()) out = q.Text(0, 0);
    return Status::Ok();
  }));
  return out;
}

}  // namespace idlegrid::store
