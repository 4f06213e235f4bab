// Deleting jobs and collecting artifacts nothing holds, in PostgreSQL
// (issue 11). SERIALIZABLE: a reference added concurrently (a submission
// naming the artifact) and this collection cannot both commit.
#include "jobs/retention.h"
#include "store/postgres/postgres_store.h"

namespace idlegrid::store {

using pg::Connection;
using pg::Isolation;
using pg::Params;
using pg::Rows;

namespace {

// Removes each digest with no live reference left (rows only).
Status CollectUnheld(Connection& c, const std::vector<std::string>& digests, int64_t now_ms, CollectedArtifacts* out) {
  if (digests.empty()) return Status::Ok();
  IG_ASSIGN_OR_RETURN(Rows gone, c.Exec("SELECT a.digest, a.size FROM artifacts a WHERE a.digest = ANY($1::text[]) "
                                        "AND NOT EXISTS (SELECT 1 FROM artifact_refs r WHERE r.digest = a.digest "
                                        "AND (r.expires_ms = 0 OR r.expires_ms > $2))",
                                        Params().TextArray(digests).Int(now_ms)));
  std::vector<std::string> ids;
  for (int r = 0; r < gone.size(); ++r) {
    ids.push_back(gone.Text(r, 0));
    out->digests.push_back(gone.Text(r, 0));
    out->bytes += static_cast<uint64_t>(gone.Int(r, 1));
  }
  if (ids.empty()) return Status::Ok();
  for (const char* sql : {"DELETE FROM artifact_refs WHERE digest = ANY($1::text[])",
                          "DELETE FROM images WHERE archive_digest = ANY($1::text[])",
                          "DELETE FROM artifacts WHERE digest = ANY($1::text[])"}) {
    IG_RETURN_IF_ERROR(c.Exec(sql, Params().TextArray(ids)).status());
  }
  return Status::Ok();
}

}  // namespace

Result<CollectedArtifacts> PgJobs::DeleteJob(const std::string& job_id, int64_t now_ms) {
  CollectedArtifacts out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kSerializable, [&](Connection& c) -> Status {
    out = CollectedArtifacts{};
    IG_ASSIGN_OR_RETURN(
        Rows tq, c.Exec("SELECT state, COUNT(*) FROM tasks WHERE job_id = $1 GROUP BY state", Params().Text(job_id)));
    std::map<v1::TaskState, int> counts;
    for (int r = 0; r < tq.size(); ++r)
      counts[static_cast<v1::TaskState>(tq.Int(r, 0))] = static_cast<int>(tq.Int(r, 1));
    IG_ASSIGN_OR_RETURN(Rows aq, c.Exec("SELECT COUNT(*) FROM attempts WHERE job_id = $1 AND state IN ($2, $3)",
                                        Params().Text(job_id).Int(v1::ASSIGNED).Int(v1::RUNNING)));
    IG_RETURN_IF_ERROR(jobs::CheckDeletable(job_id, counts, static_cast<int>(aq.Int(0, 0))));
    const std::string holder = "job:" + job_id;
    IG_ASSIGN_OR_RETURN(Rows held,
                        c.Exec("DELETE FROM artifact_refs WHERE holder = $1 RETURNING digest", Params().Text(holder)));
    std::vector<std::string> digests;
    for (int r = 0; r < held.size(); ++r) digests.push_back(held.Text(r, 0));
    for (const char* sql : {"DELETE FROM logs WHERE job_id = $1", "DELETE FROM log_usage WHERE job_id = $1",
                            "DELETE FROM checkpoints WHERE job_id = $1", "DELETE FROM attempts WHERE job_id = $1",
                            "DELETE FROM tasks WHERE job_id = $1", "DELETE FROM jobs WHERE id = $1"}) {
      IG_RETURN_IF_ERROR(c.Exec(sql, Params().Text(job_id)).status());
    }
    return CollectUnheld(c, digests, now_ms, &out);
  }));
  return out;
}

Result<std::vector<std::string>> PgJobs::ExpiredJobs(int64_t now_ms, size_t limit) {
  std::vector<std::string> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    out.clear();
    // Settled: no task left to run; the rule itself is jobs::RetentionExpired.
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("SELECT j.id, j.retention_ms, MAX(t.updated_ms) FROM jobs j "
                                       "JOIN tasks t ON t.job_id = j.id WHERE j.retention_ms > 0 "
                                       "GROUP BY j.id, j.retention_ms, j.seq "
                                       "HAVING SUM(CASE WHEN t.state IN ($1, $2, $3) THEN 0 ELSE 1 END) = 0 "
                                       "ORDER BY j.seq",
                                       Params().Int(v1::SUCCEEDED).Int(v1::FAILED).Int(v1::CANCELLED)));
    for (int r = 0; r < q.size() && out.size() < limit; ++r) {
      if (jobs::RetentionExpired(q.Int(r, 2), q.Int(r, 1), now_ms)) out.push_back(q.Text(r, 0));
    }
    return Status::Ok();
  }));
  return out;
}

Result<CollectedArtifacts> PgJobs::CollectArtifacts(int64_t now_ms) {
  CollectedArtifacts out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kSerializable, [&](Connection& c) -> Status {
    out = CollectedArtifacts{};
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("SELECT DISTINCT digest FROM artifact_refs WHERE expires_ms > 0 "
                                       "AND expires_ms <= $1",
                                       Params().Int(now_ms)));
    std::vector<std::string> digests;
    for (int r = 0; r < q.size(); ++r) digests.push_back(q.Text(r, 0));
    return CollectUnheld(c, digests, now_ms, &out);
  }));
  return out;
}

}  // namespace idlegrid::store
