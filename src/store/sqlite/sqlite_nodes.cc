// Nodes, credentials, artifacts, images and logs in SQLite.
#include "store/sqlite/sqlite_store.h"

namespace idlegrid::store {

Status SqliteLogs::AppendLogs(const std::string& job_id, const std::vector<v1::LogChunk>& chunks,
                              const jobs::LogCap& cap) {
  std::lock_guard<std::mutex> lock(mu_);
  Transaction tx(db_);
  IG_RETURN_IF_ERROR(tx.status());
  Stmt usage_q(db_, "SELECT head_bytes, tail_bytes, dropped_bytes FROM log_usage WHERE job_id = ? AND idx = ?");
  Stmt tail_q(db_, "SELECT seq, length(data) FROM logs WHERE job_id = ? AND idx = ? AND part = ? ORDER BY seq");
  Stmt evict(db_, "DELETE FROM logs WHERE seq = ?");
  Stmt ins(db_, "INSERT INTO logs(job_id, idx, attempt_id, stream, data, part) VALUES(?, ?, ?, ?, ?, ?)");
  Stmt save(db_,
            "INSERT INTO log_usage(job_id, idx, head_bytes, tail_bytes, dropped_bytes) VALUES(?, ?, ?, ?, ?) "
            "ON CONFLICT(job_id, idx) DO UPDATE SET head_bytes = excluded.head_bytes, "
            "tail_bytes = excluded.tail_bytes, dropped_bytes = excluded.dropped_bytes");
  for (Stmt* st : {&usage_q, &tail_q, &evict, &ins, &save}) IG_RETURN_IF_ERROR(st->status());
  for (const auto& [idx, incoming] : jobs::ChunksByTask(chunks)) {
    jobs::LogUsage usage;
    usage_q.Reset().Bind(1, job_id).Bind(2, int64_t{idx});
    if (usage_q.Step()) {
      usage = {static_cast<uint64_t>(usage_q.Int(0)), static_cast<uint64_t>(usage_q.Int(1)),
               static_cast<uint64_t>(usage_q.Int(2))};
    }
    IG_RETURN_IF_ERROR(usage_q.status());
    uint64_t bytes = 0;
    for (const auto& c : incoming) bytes += c.data().size();
    std::vector<jobs::TailRow> tail;
    if (jobs::LogAppendReachesTail(cap, usage, bytes)) {
      tail_q.Reset().Bind(1, job_id).Bind(2, int64_t{idx}).Bind(3, int64_t{static_cast<int>(jobs::LogPart::kTail)});
      while (tail_q.Step()) tail.push_back({tail_q.Int(0), static_cast<uint64_t>(tail_q.Int(1))});
      IG_RETURN_IF_ERROR(tail_q.status());
    }
    const jobs::LogAppendPlan plan = jobs::PlanLogAppend(cap, usage, tail, incoming);
    for (int64_t seq : plan.evict) {
      evict.Reset().Bind(1, seq);
      evict.Step();
      IG_RETURN_IF_ERROR(evict.status());
    }
    for (const auto& row : plan.rows) {
      const v1::LogChunk& c = row.chunk;
      ins.Reset().Bind(1, job_id).Bind(2, int64_t{idx}).Bind(3, c.attempt_id()).Bind(4, c.stream());
      ins.BindBlob(5, c.data()).Bind(6, int64_t{static_cast<int>(row.part)});
      ins.Step();
      IG_RETURN_IF_ERROR(ins.status());
    }
    save.Reset().Bind(1, job_id).Bind(2, int64_t{idx}).Bind(3, static_cast<int64_t>(plan.usage.head));
    save.Bind(4, static_cast<int64_t>(plan.usage.tail)).Bind(5, static_cast<int64_t>(plan.usage.dropped));
    save.Step();
    IG_RETURN_IF_ERROR(save.status());
  }
  // A statement left mid-step would keep the transaction from committing.
  for (Stmt* st : {&usage_q, &tail_q}) st->Reset();
  return tx.Commit();
}

Result<std::vector<v1::LogChunk>> SqliteLogs::ReadLogs(const std::string& job_id, int64_t after_seq, size_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<v1::LogChunk> out;
  Stmt q(db_,
         "SELECT seq, idx, attempt_id, stream, data FROM logs WHERE job_id = ? AND seq > ? "
         "ORDER BY seq LIMIT ?");
  q.Bind(1, job_id).Bind(2, after_seq).Bind(3, static_cast<int64_t>(limit));
  while (q.Step()) {
    v1::LogChunk c;
    c.set_seq(q.Int(0));
    c.set_task_index(static_cast<uint32_t>(q.Int(1)));
    c.set_attempt_id(q.Text(2));
    c.set_stream(q.Text(3));
    c.set_data(q.Blob(4));
    out.push_back(std::move(c));
  }
  IG_RETURN_IF_ERROR(q.status());
  return out;
}

Status SqliteNodes::UpsertNode(const NodeRecord& node, const std::string& token_hash) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_,
         "INSERT INTO nodes(id, name, token_hash, info, registered_ms, last_heartbeat_ms, public_key, "
         "last_sequence, advertisement, provider) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
         "ON CONFLICT(id) DO UPDATE SET "
         "name = excluded.name, token_hash = excluded.token_hash, info = excluded.info, "
         "provider = excluded.provider, "
         "public_key = excluded.public_key, "
         "last_sequence = MAX(last_sequence, excluded.last_sequence), "
         "advertisement = CASE WHEN excluded.last_sequence > last_sequence THEN excluded.advertisement "
         "ELSE advertisement END");
  q.Bind(1, node.id)
      .Bind(2, node.name)
      .Bind(3, token_hash)
      .BindBlob(4, node.info.SerializeAsString())
      .Bind(5, node.registered_ms)
      .Bind(6, node.last_heartbeat_ms)
      .BindBlob(7, node.public_key)
      .Bind(8, static_cast<int64_t>(node.last_sequence))
      .BindBlob(9, node.advertisement.SerializeAsString())
      .Bind(10, node.provider);
  q.Step();
  return q.status();
}

namespace {
constexpr char kNodeColumns[] =
    "SELECT id, name, info, registered_ms, last_heartbeat_ms, public_key, last_sequence, advertisement, "
    "measurement, draining, drain_deadline_ms, provider FROM nodes ";

NodeRecord ReadNode(const Stmt& q) {
  NodeRecord n;
  n.id = q.Text(0);
  n.name = q.Text(1);
  n.info.ParseFromString(q.Blob(2));
  n.registered_ms = q.Int(3);
  n.last_heartbeat_ms = q.Int(4);
  n.public_key = q.Blob(5);
  n.last_sequence = static_cast<uint64_t>(q.Int(6));
  n.advertisement.ParseFromString(q.Blob(7));
  n.measurement.ParseFromString(q.Blob(8));
  n.draining = q.Int(9) != 0;
  n.drain_deadline_ms = q.Int(10);
  n.provider = q.Text(11);
  return n;
}
}  // namespace

Result<std::optional<NodeRecord>> SqliteNodes::NodeByTokenHash(const std::string& token_hash) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_, (std::string(kNodeColumns) + "WHERE token_hash = ?").c_str());
  q.Bind(1, token_hash);
  if (q.Step()) return std::optional<NodeRecord>(ReadNode(q));
  IG_RETURN_IF_ERROR(q.status());
  return std::optional<NodeRecord>();
}

Result<std::vector<NodeRecord>> SqliteNodes::ListNodes() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<NodeRecord> out;
  Stmt q(db_, (std::string(kNodeColumns) + "ORDER BY name, id").c_str());
  while (q.Step()) out.push_back(ReadNode(q));
  IG_RETURN_IF_ERROR(q.status());
  return out;
}

Result<std::optional<NodeRecord>> SqliteNodes::GetNode(const std::string& node_id) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_, (std::string(kNodeColumns) + "WHERE id = ?").c_str());
  q.Bind(1, node_id);
  if (q.Step()) return std::optional<NodeRecord>(ReadNode(q));
  IG_RETURN_IF_ERROR(q.status());
  return std::optional<NodeRecord>();
}

Status SqliteNodes::RecordAdvertisement(const std::string& node_id, uint64_t sequence,
                                        const v1::Advertisement& advertisement) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_, "UPDATE nodes SET last_sequence = ?, advertisement = ? WHERE id = ? AND last_sequence < ?");
  q.Bind(1, static_cast<int64_t>(sequence))
      .BindBlob(2, advertisement.SerializeAsString())
      .Bind(3, node_id)
      .Bind(4, static_cast<int64_t>(sequence));
  q.Step();
  IG_RETURN_IF_ERROR(q.status());
  if (sqlite3_changes(db_) != 1) {
    return Status::FailedPrecondition("stale sequence: advertisement " + std::to_string(sequence) + " of " + node_id +
                                      " is not newer than the stored one");
  }
  return Status::Ok();
}

Status SqliteNodes::SetDrain(const std::string& node_id, bool draining, int64_t deadline_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_, "UPDATE nodes SET draining = ?, drain_deadline_ms = ? WHERE id = ?");
  q.Bind(1, int64_t{draining}).Bind(2, deadline_ms).Bind(3, node_id);
  q.Step();
  IG_RETURN_IF_ERROR(q.status());
  if (sqlite3_changes(db_) != 1) return Status::NotFound("node " + node_id + " does not exist");
  return Status::Ok();
}

Status SqliteNodes::RecordMeasurement(const std::string& node_id, const v1::Measurement& measurement) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_, "UPDATE nodes SET measurement = ? WHERE id = ?");
  q.BindBlob(1, measurement.SerializeAsString()).Bind(2, node_id);
  q.Step();
  return q.status();
}

Status SqliteNodes::RecordHeartbeat(const std::string& node_id, const v1::NodeInfo& info, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_, "UPDATE nodes SET info = ?, last_heartbeat_ms = ? WHERE id = ?");
  q.BindBlob(1, info.SerializeAsString()).Bind(2, now_ms).Bind(3, node_id);
  q.Step();
  return q.status();
}

Status SqliteNodes::RecordHeartbeats(const std::map<std::string, int64_t>& last_heartbeat_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Transaction tx(db_);
  IG_RETURN_IF_ERROR(tx.status());
  Stmt q(db_, "UPDATE nodes SET last_heartbeat_ms = ? WHERE id = ? AND last_heartbeat_ms < ?");
  for (const auto& [id, ms] : last_heartbeat_ms) {
    q.Reset().Bind(1, ms).Bind(2, id).Bind(3, ms);
    q.Step();
    IG_RETURN_IF_ERROR(q.status());
  }
  return tx.Commit();
}

Status SqliteArtifacts::RecordArtifact(const std::string& digest, uint64_t size, const std::string& kind,
                                       int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_, "INSERT OR IGNORE INTO artifacts(digest, size, kind, created_ms) VALUES(?, ?, ?, ?)");
  q.Bind(1, digest).Bind(2, static_cast<int64_t>(size)).Bind(3, kind).Bind(4, now_ms);
  q.Step();
  return q.status();
}

Result<bool> SqliteArtifacts::HasArtifact(const std::string& digest) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_, "SELECT 1 FROM artifacts WHERE digest = ?");
  q.Bind(1, digest);
  bool found = q.Step();
  IG_RETURN_IF_ERROR(q.status());
  return found;
}

Status SqliteArtifacts::RegisterImage(const ImageRecord& image, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_,
         "INSERT OR REPLACE INTO images(manifest_digest, config_digest, archive_digest, created_ms) "
         "VALUES(?, ?, ?, ?)");
  q.Bind(1, image.manifest_digest).Bind(2, image.config_digest).Bind(3, image.archive_digest).Bind(4, now_ms);
  q.Step();
  return q.status();
}

Result<std::optional<ImageRecord>> SqliteArtifacts::GetImage(const std::string& manifest_digest) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_, "SELECT manifest_digest, config_digest, archive_digest FROM images WHERE manifest_digest = ?");
  q.Bind(1, manifest_digest);
  if (q.Step()) return std::optional<ImageRecord>(ImageRecord{q.Text(0), q.Text(1), q.Text(2)});
  IG_RETURN_IF_ERROR(q.status());
  return std::optional<ImageRecord>();
}

Result<std::string> SqliteNodes::PinClusterCa(const std::string& fingerprint, bool replace) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt put(db_, replace ? "INSERT INTO cluster_settings(name, value) VALUES('ca_fingerprint', ?) "
                          "ON CONFLICT(name) DO UPDATE SET value = excluded.value"
                        : "INSERT INTO cluster_settings(name, value) VALUES('ca_fingerprint', ?) "
                          "ON CONFLICT(name) DO NOTHING");
  put.Bind(1, fingerprint);
  put.Step();
  IG_RETURN_IF_ERROR(put.status());
  Stmt get(db_, "SELECT value FROM cluster_settings WHERE name = 'ca_fingerprint'");
  if (get.Step()) return get.Text(0);
  IG_RETURN_IF_ERROR(get.status());
  return Status::Internal("the CA fingerprint was not recorded");
}

}  // namespace idlegrid::store
