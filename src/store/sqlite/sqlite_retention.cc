// Deleting jobs and collecting artifacts nothing holds (issue 11).
#include "jobs/retention.h"
#include "store/sqlite/sqlite_store.h"

namespace idlegrid::store {

Status SqliteJobs::CollectUnheldLocked(const std::set<std::string>& digests, int64_t now_ms, CollectedArtifacts* out) {
  Stmt live(db_, "SELECT 1 FROM artifact_refs WHERE digest = ? AND (expires_ms = 0 OR expires_ms > ?) LIMIT 1");
  Stmt size(db_, "SELECT size FROM artifacts WHERE digest = ?");
  Stmt drop_refs(db_, "DELETE FROM artifact_refs WHERE digest = ?");
  Stmt drop_images(db_, "DELETE FROM images WHERE archive_digest = ?");
  Stmt drop(db_, "DELETE FROM artifacts WHERE digest = ?");
  for (const std::string& d : digests) {
    live.Reset().Bind(1, d).Bind(2, now_ms);
    bool held = live.Step();
    IG_RETURN_IF_ERROR(live.status());
    live.Reset();
    if (held) continue;
    size.Reset().Bind(1, d);
    bool stored = size.Step();
    IG_RETURN_IF_ERROR(size.status());
    const int64_t bytes = stored ? size.Int(0) : 0;
    size.Reset();
    for (Stmt* q : {&drop_refs, &drop_images, &drop}) {
      q->Reset().Bind(1, d);
      q->Step();
      IG_RETURN_IF_ERROR(q->status());
    }
    if (stored) {
      out->digests.push_back(d);
      out->bytes += static_cast<uint64_t>(bytes);
    }
  }
  return Status::Ok();
}

Result<CollectedArtifacts> SqliteJobs::DeleteJob(const std::string& job_id, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Transaction tx(db_);
  IG_RETURN_IF_ERROR(tx.status());
  std::map<v1::TaskState, int> counts;
  Stmt tq(db_, "SELECT state, COUNT(*) FROM tasks WHERE job_id = ? GROUP BY state");
  tq.Bind(1, job_id);
  while (tq.Step()) counts[static_cast<v1::TaskState>(tq.Int(0))] = static_cast<int>(tq.Int(1));
  IG_RETURN_IF_ERROR(tq.status());
  Stmt aq(db_, "SELECT COUNT(*) FROM attempts WHERE job_id = ? AND state IN (?, ?)");
  aq.Bind(1, job_id).Bind(2, int64_t{v1::ASSIGNED}).Bind(3, int64_t{v1::RUNNING});
  int active = aq.Step() ? static_cast<int>(aq.Int(0)) : 0;
  IG_RETURN_IF_ERROR(aq.status());
  aq.Reset();
  IG_RETURN_IF_ERROR(jobs::CheckDeletable(job_id, counts, active));

  const std::string holder = "job:" + job_id;
  std::set<std::string> held;
  Stmt rq(db_, "SELECT digest FROM artifact_refs WHERE holder = ?");
  rq.Bind(1, holder);
  while (rq.Step()) held.insert(rq.Text(0));
  IG_RETURN_IF_ERROR(rq.status());
  rq.Reset();
  for (const char* sql : {"DELETE FROM logs WHERE job_id = ?", "DELETE FROM log_usage WHERE job_id = ?",
                          "DELETE FROM checkpoints WHERE job_id = ?", "DELETE FROM attempts WHERE job_id = ?",
                          "DELETE FROM tasks WHERE job_id = ?", "DELETE FROM jobs WHERE id = ?"}) {
    Stmt q(db_, sql);
    q.Bind(1, job_id);
    q.Step();
    IG_RETURN_IF_ERROR(q.status());
  }
  Stmt refs(db_, "DELETE FROM artifact_refs WHERE holder = ?");
  refs.Bind(1, holder);
  refs.Step();
  IG_RETURN_IF_ERROR(refs.status());
  CollectedArtifacts out;
  IG_RETURN_IF_ERROR(CollectUnheldLocked(held, now_ms, &out));
  IG_RETURN_IF_ERROR(tx.Commit());
  return out;
}

Result<std::vector<std::string>> SqliteJobs::ExpiredJobs(int64_t now_ms, size_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  // Settled: no task left to run (terminal states only); the rule itself is
  // jobs::RetentionExpired, asked per candidate.
  Stmt q(db_,
         "SELECT j.id, j.retention_ms, MAX(t.updated_ms) FROM jobs j JOIN tasks t ON t.job_id = j.id "
         "WHERE j.retention_ms > 0 GROUP BY j.id, j.retention_ms, j.seq "
         "HAVING SUM(CASE WHEN t.state IN (?, ?, ?) THEN 0 ELSE 1 END) = 0 ORDER BY j.seq");
  q.Bind(1, int64_t{v1::SUCCEEDED}).Bind(2, int64_t{v1::FAILED}).Bind(3, int64_t{v1::CANCELLED});
  std::vector<std::string> out;
  while (q.Step() && out.size() < limit) {
    if (jobs::RetentionExpired(q.Int(2), q.Int(1), now_ms)) out.push_back(q.Text(0));
  }
  IG_RETURN_IF_ERROR(q.status());
  return out;
}

Result<CollectedArtifacts> SqliteJobs::CollectArtifacts(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Transaction tx(db_);
  IG_RETURN_IF_ERROR(tx.status());
  std::set<std::string> candidates;
  Stmt q(db_, "SELECT DISTINCT digest FROM artifact_refs WHERE expires_ms > 0 AND expires_ms <= ?");
  q.Bind(1, now_ms);
  while (q.Step()) candidates.insert(q.Text(0));
  IG_RETURN_IF_ERROR(q.status());
  q.Reset();
  CollectedArtifacts out;
  IG_RETURN_IF_ERROR(CollectUnheldLocked(candidates, now_ms, &out));
  IG_RETURN_IF_ERROR(tx.Commit());
  return out;
}

}  // namespace idlegrid::store
