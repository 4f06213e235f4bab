// Checkpoints of tasks and per-node attempt outcomes (reliability) in SQLite.
#include "jobs/lease.h"
#include "store/sqlite/sqlite_store.h"

namespace idlegrid::store {

Status SqliteAttempts::RecordCheckpointLocked(const v1::ReportAttemptRequest& report, const std::string& job_id,
                                              uint32_t index, uint64_t epoch, int64_t now_ms) {
  IG_RETURN_IF_ERROR(jobs::ValidateCheckpointFiles(report.checkpoint()));
  // Restoring a file the coordinator does not hold would fail the next
  // attempt: every file must already be a published artifact.
  for (const auto& f : report.checkpoint()) {
    for (const std::string& blob : jobs::CheckpointBlobs(f)) {
      Stmt has(db_, "SELECT 1 FROM artifacts WHERE digest = ?");
      has.Bind(1, blob);
      if (!has.Step()) {
        IG_RETURN_IF_ERROR(has.status());
        return Status::NotFound("checkpoint file " + f.path() + ": artifact " + blob + " was never uploaded");
      }
    }
  }
  v1::Checkpoint cp;
  cp.set_attempt_id(report.attempt_id());
  cp.set_lease_epoch(epoch);
  *cp.mutable_files() = report.checkpoint();
  cp.set_created_at_ms(now_ms);
  Stmt up(db_,
          "INSERT INTO checkpoints(job_id, idx, attempt_id, epoch, files, created_ms) VALUES(?, ?, ?, ?, ?, ?) "
          "ON CONFLICT(job_id, idx) DO UPDATE SET attempt_id = excluded.attempt_id, epoch = excluded.epoch, "
          "files = excluded.files, created_ms = excluded.created_ms");
  up.Bind(1, job_id)
      .Bind(2, int64_t{index})
      .Bind(3, report.attempt_id())
      .Bind(4, static_cast<int64_t>(epoch))
      .BindBlob(5, cp.SerializeAsString())
      .Bind(6, now_ms);
  up.Step();
  IG_RETURN_IF_ERROR(up.status());
  Stmt at(db_, "UPDATE attempts SET checkpoints = checkpoints + 1, last_checkpoint_ms = ? WHERE id = ?");
  at.Bind(1, now_ms).Bind(2, report.attempt_id());
  at.Step();
  return at.status();
}

Status SqliteJobs::LoadCheckpointsLocked(const std::string& job_id, const std::map<uint32_t, v1::Task*>& tasks) {
  Stmt q(db_, "SELECT idx, files FROM checkpoints WHERE job_id = ?");
  q.Bind(1, job_id);
  while (q.Step()) {
    auto it = tasks.find(static_cast<uint32_t>(q.Int(0)));
    if (it == tasks.end()) continue;
    if (!it->second->mutable_checkpoint()->ParseFromString(q.Blob(1))) {
      return Status::DataLoss("stored checkpoint of " + job_id + "/" + std::to_string(it->first) + " does not parse");
    }
  }
  return q.status();
}

Result<std::map<std::string, NodeOutcomes>> SqliteAttempts::RecentNodeOutcomes(int64_t since_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, NodeOutcomes> out;
  Stmt q(db_,
         "SELECT node_id, state, reason, COUNT(*) FROM attempts WHERE finished_ms >= ? AND finished_ms > 0 "
         "GROUP BY node_id, state, reason");
  q.Bind(1, since_ms);
  while (q.Step()) {
    out[q.Text(0)].Add(static_cast<v1::TaskState>(q.Int(1)), static_cast<v1::FailureReason>(q.Int(2)),
                       static_cast<uint32_t>(q.Int(3)));
  }
  IG_RETURN_IF_ERROR(q.status());
  return out;
}

}  // namespace idlegrid::store
