// Verification's rows in PostgreSQL: held tasks, verdicts, providers' records.
#include "jobs/attempt_events.h"
#include "store/postgres/pg_codec.h"
#include "store/postgres/postgres_store.h"

namespace idlegrid::store {

using pg::Connection;
using pg::Isolation;
using pg::Params;
using pg::Rows;

Result<std::vector<TaskKey>> PgVerification::HeldTasks(size_t limit) {
  std::vector<TaskKey> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    out.clear();
    IG_ASSIGN_OR_RETURN(Rows q,
                        c.Exec("SELECT job_id, idx FROM tasks WHERE state = $1 AND not_before_ms = $2 "
                               "ORDER BY updated_ms LIMIT $3",
                               Params().Int(v1::QUEUED).Int(jobs::kVerdictHoldMs).Int(static_cast<int64_t>(limit))));
    for (int r = 0; r < q.size(); ++r) out.push_back({q.Text(r, 0), static_cast<uint32_t>(q.Int(r, 1))});
    return Status::Ok();
  }));
  return out;
}

Result<bool> PgVerification::ApplyVerdict(const VerdictWrite& w, int64_t now_ms) {
  bool applied = false;
  IG_RETURN_IF_ERROR(Tx(Isolation::kSerializable, [&](Connection& c) -> Status {
    applied = false;
    IG_ASSIGN_OR_RETURN(Rows cur, c.Exec("SELECT state, not_before_ms FROM tasks WHERE job_id = $1 AND idx = $2 "
                                         "FOR UPDATE",
                                         Params().Text(w.job_id).Int(w.index)));
    if (cur.empty()) return Status::NotFound("task " + w.job_id + "/" + std::to_string(w.index));
    const auto state = static_cast<v1::TaskState>(cur.Int(0, 0));
    const bool held = state == v1::QUEUED && cur.Int(0, 1) == jobs::kVerdictHoldMs;
    const bool where = w.expect == VerdictWrite::Expect::kHeld        ? held
                       : w.expect == VerdictWrite::Expect::kSucceeded ? state == v1::SUCCEEDED
                                                                      : state == v1::QUEUED && !held;
    if (!where) return Status::Ok();
    for (const VerdictWrite::Vote& v : w.votes) {
      IG_RETURN_IF_ERROR(c.Exec("UPDATE attempts SET vote = $1, vote_reason = $2, "
                                "state = CASE WHEN $3::integer <> 0 THEN $4 ELSE state END, "
                                "reason = CASE WHEN $3::integer <> 0 THEN $5 ELSE reason END, "
                                "message = CASE WHEN $3::integer <> 0 THEN $6 ELSE message END "
                                "WHERE id = $7 AND job_id = $8 AND idx = $9",
                                Params()
                                    .Text(v.vote)
                                    .Text(v.reason)
                                    .Int(v.failed)
                                    .Int(v1::FAILED)
                                    .Int(v1::VERIFICATION_FAILED)
                                    .Text(v.FailedMessage())
                                    .Text(v.attempt_id)
                                    .Text(w.job_id)
                                    .Int(w.index))
                             .status());
    }
    IG_RETURN_IF_ERROR(WriteTask(c, w.job_id, w.index, w.task));
    IG_RETURN_IF_ERROR(c.Exec("UPDATE tasks SET verification = $1, "
                              "not_before_ms = CASE WHEN $2::integer <> 0 THEN $3 ELSE not_before_ms END "
                              "WHERE job_id = $4 AND idx = $5",
                              Params()
                                  .Text(w.verification)
                                  .Int(w.not_before_ms.has_value())
                                  .Int(w.not_before_ms.value_or(0))
                                  .Text(w.job_id)
                                  .Int(w.index))
                           .status());
    if (w.reset_exclusions) {
      IG_RETURN_IF_ERROR(
          c.Exec("UPDATE tasks SET excluded = '' WHERE job_id = $1 AND idx = $2", Params().Text(w.job_id).Int(w.index))
              .status());
    }
    for (const std::string& entry : w.exclude) {
      IG_RETURN_IF_ERROR(c.Exec("UPDATE tasks SET excluded = excluded || $1 || ',' WHERE job_id = $2 AND idx = $3",
                                Params().Text(entry).Text(w.job_id).Int(w.index))
                             .status());
    }
    for (const TrustRecord& t : w.trust) {
      IG_RETURN_IF_ERROR(
          c.Exec(
               "INSERT INTO provider_trust(provider, image, consecutive, reliability, caught, "
               "updated_ms) VALUES($1, $2, $3, $4, $5, $6) ON CONFLICT(provider, image) DO UPDATE "
               "SET consecutive = excluded.consecutive, reliability = excluded.reliability, "
               "caught = excluded.caught, updated_ms = excluded.updated_ms",
               Params().Text(t.provider).Text(t.image).Int(t.consecutive).Int(t.reliability).Int(t.caught).Int(now_ms))
              .status());
    }
    applied = true;
    return Status::Ok();
  }));
  return applied;
}

Result<std::vector<std::pair<TaskKey, int64_t>>> PgVerification::TasksExcluding(const std::string& prefix,
                                                                                size_t limit) {
  std::vector<std::pair<TaskKey, int64_t>> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    out.clear();
    // The list is "a,b,": an entry starts the list or follows a comma.
    IG_ASSIGN_OR_RETURN(
        Rows q,
        c.Exec("SELECT job_id, idx, updated_ms FROM tasks WHERE state = $1 AND "
               "not_before_ms < $2 AND (strpos(excluded, $3) = 1 OR "
               "strpos(excluded, ',' || $3) > 0) ORDER BY updated_ms LIMIT $4",
               Params().Int(v1::QUEUED).Int(jobs::kVerdictHoldMs).Text(prefix).Int(static_cast<int64_t>(limit))));
    for (int r = 0; r < q.size(); ++r) {
      out.push_back({{q.Text(r, 0), static_cast<uint32_t>(q.Int(r, 1))}, q.Int(r, 2)});
    }
    return Status::Ok();
  }));
  return out;
}

Result<std::vector<TrustRecord>> PgVerification::TrustOf(const std::string& provider) {
  std::vector<TrustRecord> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    out.clear();
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("SELECT image, consecutive, reliability, caught, updated_ms FROM provider_trust "
                                       "WHERE provider = $1 ORDER BY image",
                                       Params().Text(provider)));
    for (int r = 0; r < q.size(); ++r) {
      out.push_back({provider, q.Text(r, 0), static_cast<uint32_t>(q.Int(r, 1)), static_cast<uint32_t>(q.Int(r, 2)),
                     static_cast<uint32_t>(q.Int(r, 3)), q.Int(r, 4)});
    }
    return Status::Ok();
  }));
  return out;
}

Result<std::vector<ProviderResult>> PgVerification::ProviderResults(const std::string& provider, int64_t since_ms,
                                                                    size_t limit) {
  std::vector<ProviderResult> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    out.clear();
    IG_ASSIGN_OR_RETURN(
        Rows q, c.Exec("SELECT a.id, a.job_id, a.idx, a.vote, a.finished_ms FROM attempts a "
                       "JOIN nodes n ON n.id = a.node_id WHERE n.provider = $1 AND a.state = $2 "
                       "AND a.vote IN ('agreed', 'unverified') AND a.finished_ms >= $3 "
                       "ORDER BY a.finished_ms, a.seq LIMIT $4",
                       Params().Text(provider).Int(v1::SUCCEEDED).Int(since_ms).Int(static_cast<int64_t>(limit))));
    for (int r = 0; r < q.size(); ++r) {
      out.push_back({q.Text(r, 0), q.Text(r, 1), static_cast<uint32_t>(q.Int(r, 2)), q.Text(r, 3), q.Int(r, 4)});
    }
    return Status::Ok();
  }));
  return out;
}

Result<std::vector<v1::Attempt>> PgVerification::ProviderAttempts(const std::string& provider, int64_t since_ms,
                                                                  size_t limit) {
  std::vector<v1::Attempt> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    out.clear();
    IG_ASSIGN_OR_RETURN(
        Rows q, c.Exec("SELECT a.id, a.node_id, a.started_ms, a.finished_ms, a.placement, a.receipt, "
                       "a.vote FROM attempts a JOIN nodes n ON n.id = a.node_id "
                       "WHERE n.provider = $1 AND a.state = $2 AND a.finished_ms >= $3 "
                       "ORDER BY a.finished_ms DESC, a.seq DESC LIMIT $4",
                       Params().Text(provider).Int(v1::SUCCEEDED).Int(since_ms).Int(static_cast<int64_t>(limit))));
    for (int r = 0; r < q.size(); ++r) {
      v1::Attempt& a = out.emplace_back();
      a.set_id(q.Text(r, 0));
      a.set_node_id(q.Text(r, 1));
      a.set_state(v1::SUCCEEDED);
      a.set_started_at_ms(q.Int(r, 2));
      a.set_finished_at_ms(q.Int(r, 3));
      if (!q.IsNull(r, 4)) a.mutable_placement()->ParseFromString(q.Text(r, 4));
      if (!q.IsNull(r, 5)) {
        v1::Receipt receipt;
        if (!receipt.ParseFromString(q.Text(r, 5))) {
          return Status::DataLoss("stored receipt of attempt " + a.id() + " does not parse");
        }
        *a.mutable_metering() = receipt.statement().metering();
      }
      a.set_vote(q.Text(r, 6));
    }
    return Status::Ok();
  }));
  return out;
}

}  // namespace idlegrid::store
