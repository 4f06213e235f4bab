// Verification's rows in SQLite: held tasks, verdicts, providers' records.
#include "jobs/attempt_events.h"
#include "store/sqlite/sqlite_store.h"

namespace idlegrid::store {

Result<std::vector<TaskKey>> SqliteVerification::HeldTasks(size_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TaskKey> out;
  Stmt q(db_, "SELECT job_id, idx FROM tasks WHERE state = ? AND not_before_ms = ? ORDER BY updated_ms LIMIT ?");
  q.Bind(1, int64_t{v1::QUEUED}).Bind(2, jobs::kVerdictHoldMs).Bind(3, static_cast<int64_t>(limit));
  while (q.Step()) out.push_back({q.Text(0), static_cast<uint32_t>(q.Int(1))});
  IG_RETURN_IF_ERROR(q.status());
  return out;
}

namespace {

// Whether the task is where the write expects it (VerdictWrite::Expect);
// NotFound for no such task.
Result<bool> TaskAsExpected(sqlite3* db, const VerdictWrite& w) {
  Stmt cur(db, "SELECT state, not_before_ms FROM tasks WHERE job_id = ? AND idx = ?");
  cur.Bind(1, w.job_id).Bind(2, int64_t{w.index});
  if (!cur.Step()) {
    IG_RETURN_IF_ERROR(cur.status());
    return Status::NotFound("task " + w.job_id + "/" + std::to_string(w.index));
  }
  const auto state = static_cast<v1::TaskState>(cur.Int(0));
  const bool held = state == v1::QUEUED && cur.Int(1) == jobs::kVerdictHoldMs;
  switch (w.expect) {
    case VerdictWrite::Expect::kHeld:
      if (!held) return false;
      break;
    case VerdictWrite::Expect::kSucceeded:
      if (state != v1::SUCCEEDED) return false;
      break;
    case VerdictWrite::Expect::kQueued:
      if (state != v1::QUEUED || held) return false;
      break;
  }
  return true;
}

// Records each vote on its attempt; a failed one also fails the attempt.
Status WriteVotes(sqlite3* db, const VerdictWrite& w) {
  for (const VerdictWrite::Vote& v : w.votes) {
    Stmt upd(db,
             "UPDATE attempts SET vote = ?, vote_reason = ?, "
             "state = CASE WHEN ? THEN ? ELSE state END, reason = CASE WHEN ? THEN ? ELSE reason END, "
             "message = CASE WHEN ? THEN ? ELSE message END WHERE id = ? AND job_id = ? AND idx = ?");
    upd.Bind(1, v.vote)
        .Bind(2, v.reason)
        .Bind(3, int64_t{v.failed})
        .Bind(4, int64_t{v1::FAILED})
        .Bind(5, int64_t{v.failed})
        .Bind(6, int64_t{v1::VERIFICATION_FAILED})
        .Bind(7, int64_t{v.failed})
        .Bind(8, v.FailedMessage())
        .Bind(9, v.attempt_id)
        .Bind(10, w.job_id)
        .Bind(11, int64_t{w.index});
    upd.Step();
    IG_RETURN_IF_ERROR(upd.status());
  }
  return Status::Ok();
}

// Sets the task's verification line and, if the write has one, when it may be
// offered again.
Status WriteVerificationLine(sqlite3* db, const VerdictWrite& w) {
  Stmt line(db,
            "UPDATE tasks SET verification = ?, not_before_ms = CASE WHEN ? THEN ? ELSE not_before_ms END "
            "WHERE job_id = ? AND idx = ?");
  line.Bind(1, w.verification)
      .Bind(2, int64_t{w.not_before_ms.has_value()})
      .Bind(3, w.not_before_ms.value_or(0))
      .Bind(4, w.job_id)
      .Bind(5, int64_t{w.index});
  line.Step();
  return line.status();
}

// Empties the task's excluded list if the write says so, then appends its
// entries.
Status WriteExclusions(sqlite3* db, const VerdictWrite& w) {
  if (w.reset_exclusions) {
    Stmt reset(db, "UPDATE tasks SET excluded = '' WHERE job_id = ? AND idx = ?");
    reset.Bind(1, w.job_id).Bind(2, int64_t{w.index});
    reset.Step();
    IG_RETURN_IF_ERROR(reset.status());
  }
  for (const std::string& entry : w.exclude) {
    Stmt ex(db, "UPDATE tasks SET excluded = excluded || ? || ',' WHERE job_id = ? AND idx = ?");
    ex.Bind(1, entry).Bind(2, w.job_id).Bind(3, int64_t{w.index});
    ex.Step();
    IG_RETURN_IF_ERROR(ex.status());
  }
  return Status::Ok();
}

// Writes the providers' trust records as given.
Status WriteTrust(sqlite3* db, const std::vector<TrustRecord>& trust, int64_t now_ms) {
  for (const TrustRecord& t : trust) {
    Stmt put(db,
             "INSERT INTO provider_trust(provider, image, consecutive, reliability, caught, updated_ms) "
             "VALUES(?, ?, ?, ?, ?, ?) ON CONFLICT(provider, image) DO UPDATE SET "
             "consecutive = excluded.consecutive, reliability = excluded.reliability, "
             "caught = excluded.caught, updated_ms = excluded.updated_ms");
    put.Bind(1, t.provider)
        .Bind(2, t.image)
        .Bind(3, int64_t{t.consecutive})
        .Bind(4, int64_t{t.reliability})
        .Bind(5, int64_t{t.caught})
        .Bind(6, now_ms);
    put.Step();
    IG_RETURN_IF_ERROR(put.status());
  }
  return Status::Ok();
}

}  // namespace

Result<bool> SqliteVerification::ApplyVerdict(const VerdictWrite& w, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Transaction tx(db_);
  IG_RETURN_IF_ERROR(tx.status());
  IG_ASSIGN_OR_RETURN(const bool as_expected, TaskAsExpected(db_, w));
  if (!as_expected) return false;
  IG_RETURN_IF_ERROR(WriteVotes(db_, w));
  IG_RETURN_IF_ERROR(WriteTaskLocked(w.job_id, w.index, w.task));
  IG_RETURN_IF_ERROR(WriteVerificationLine(db_, w));
  IG_RETURN_IF_ERROR(WriteExclusions(db_, w));
  IG_RETURN_IF_ERROR(WriteTrust(db_, w.trust, now_ms));
  IG_RETURN_IF_ERROR(tx.Commit());
  return true;
}

Result<std::vector<std::pair<TaskKey, int64_t>>> SqliteVerification::TasksExcluding(const std::string& prefix,
                                                                                    size_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<TaskKey, int64_t>> out;
  // The list is "a,b,": an entry starts the list or follows a comma.
  Stmt q(db_,
         "SELECT job_id, idx, updated_ms FROM tasks WHERE state = ? AND not_before_ms < ? AND "
         "(instr(excluded, ?) = 1 OR instr(excluded, ',' || ?) > 0) ORDER BY updated_ms LIMIT ?");
  q.Bind(1, int64_t{v1::QUEUED})
      .Bind(2, jobs::kVerdictHoldMs)
      .Bind(3, prefix)
      .Bind(4, prefix)
      .Bind(5, static_cast<int64_t>(limit));
  while (q.Step()) out.push_back({{q.Text(0), static_cast<uint32_t>(q.Int(1))}, q.Int(2)});
  IG_RETURN_IF_ERROR(q.status());
  return out;
}

Result<std::vector<TrustRecord>> SqliteVerification::TrustOf(const std::string& provider) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TrustRecord> out;
  Stmt q(db_,
         "SELECT image, consecutive, reliability, caught, updated_ms FROM provider_trust WHERE provider = ? "
         "ORDER BY image");
  q.Bind(1, provider);
  while (q.Step()) {
    out.push_back({provider, q.Text(0), static_cast<uint32_t>(q.Int(1)), static_cast<uint32_t>(q.Int(2)),
                   static_cast<uint32_t>(q.Int(3)), q.Int(4)});
  }
  IG_RETURN_IF_ERROR(q.status());
  return out;
}

Result<std::vector<ProviderResult>> SqliteVerification::ProviderResults(const std::string& provider, int64_t since_ms,
                                                                        size_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ProviderResult> out;
  Stmt q(db_,
         "SELECT a.id, a.job_id, a.idx, a.vote, a.finished_ms FROM attempts a JOIN nodes n ON n.id = a.node_id "
         "WHERE n.provider = ? AND a.state = ? AND a.vote IN ('agreed', 'unverified') AND a.finished_ms >= ? "
         "ORDER BY a.finished_ms, a.seq LIMIT ?");
  q.Bind(1, provider).Bind(2, int64_t{v1::SUCCEEDED}).Bind(3, since_ms).Bind(4, static_cast<int64_t>(limit));
  while (q.Step()) {
    out.push_back({q.Text(0), q.Text(1), static_cast<uint32_t>(q.Int(2)), q.Text(3), q.Int(4)});
  }
  IG_RETURN_IF_ERROR(q.status());
  return out;
}

Result<std::vector<v1::Attempt>> SqliteVerification::ProviderAttempts(const std::string& provider, int64_t since_ms,
                                                                      size_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<v1::Attempt> out;
  Stmt q(db_,
         "SELECT a.id, a.node_id, a.started_ms, a.finished_ms, a.placement, a.receipt, a.vote "
         "FROM attempts a JOIN nodes n ON n.id = a.node_id "
         "WHERE n.provider = ? AND a.state = ? AND a.finished_ms >= ? "
         "ORDER BY a.finished_ms DESC, a.seq DESC LIMIT ?");
  q.Bind(1, provider).Bind(2, int64_t{v1::SUCCEEDED}).Bind(3, since_ms).Bind(4, static_cast<int64_t>(limit));
  while (q.Step()) {
    v1::Attempt& a = out.emplace_back();
    a.set_id(q.Text(0));
    a.set_node_id(q.Text(1));
    a.set_state(v1::SUCCEEDED);
    a.set_started_at_ms(q.Int(2));
    a.set_finished_at_ms(q.Int(3));
    if (!q.IsNull(4)) a.mutable_placement()->ParseFromString(q.Blob(4));
    if (!q.IsNull(5)) {
      v1::Receipt receipt;
      if (!receipt.ParseFromString(q.Blob(5))) {
        return Status::DataLoss("stored receipt of attempt " + a.id() + " does not parse");
      }
      *a.mutable_metering() = receipt.statement().metering();
    }
    a.set_vote(q.Text(6));
  }
  IG_RETURN_IF_ERROR(q.status());
  return out;
}

}  // namespace idlegrid::store
