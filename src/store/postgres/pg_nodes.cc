// Nodes, credentials, artifacts, images and logs in PostgreSQL: single
// statements, made race-free by their conditions (sequence numbers, heartbeat
// times) or by ON CONFLICT.
#include "store/postgres/pg_codec.h"
#include "store/postgres/postgres_store.h"

namespace idlegrid::store {

using pg::Connection;
using pg::Isolation;
using pg::Params;
using pg::Rows;

namespace {

// Advisory lock space (the two-key form, apart from the migration lock) that
// orders the appends of one job's logs.
constexpr int64_t kLogLockSpace = 0x69676c67;  // "iglg"

constexpr char kNodeColumns[] =
    "SELECT id, name, info, registered_ms, last_heartbeat_ms, public_key, last_sequence, advertisement, "
    "measurement, draining, drain_deadline_ms, provider FROM nodes ";

NodeRecord ReadNode(const Rows& q, int r) {
  NodeRecord n;
  n.id = q.Text(r, 0);
  n.name = q.Text(r, 1);
  n.info.ParseFromString(q.Text(r, 2));
  n.registered_ms = q.Int(r, 3);
  n.last_heartbeat_ms = q.Int(r, 4);
  n.public_key = q.Text(r, 5);
  n.last_sequence = static_cast<uint64_t>(q.Int(r, 6));
  n.advertisement.ParseFromString(q.Text(r, 7));
  n.measurement.ParseFromString(q.Text(r, 8));
  n.draining = q.Int(r, 9) != 0;
  n.drain_deadline_ms = q.Int(r, 10);
  n.provider = q.Text(r, 11);
  return n;
}

}  // namespace

Status PgLogs::AppendLogs(const std::string& job_id, const std::vector<v1::LogChunk>& chunks, const jobs::LogCap& cap) {
  if (chunks.empty()) return Status::Ok();
  return Tx(Isolation::kReadCommitted, [&](Connection& c) -> Status {
    // Readers page through a job's logs by sequence number, so a job's rows
    // must commit in sequence order: appenders of one job take turns (the
    // lock is held to COMMIT), and each takes its numbers while holding it.
    // The same lock makes each task's log usage a plain read-modify-write.
    IG_RETURN_IF_ERROR(
        c.Exec("SELECT pg_advisory_xact_lock($1::integer, hashtext($2))", Params().Int(kLogLockSpace).Text(job_id))
            .status());
    for (const auto& [idx, incoming] : jobs::ChunksByTask(chunks)) {
      IG_ASSIGN_OR_RETURN(Rows uq, c.Exec("SELECT head_bytes, tail_bytes, dropped_bytes FROM log_usage "
                                          "WHERE job_id = $1 AND idx = $2",
                                          Params().Text(job_id).Int(idx)));
      jobs::LogUsage usage;
      if (!uq.empty()) {
        usage = {static_cast<uint64_t>(uq.Int(0, 0)), static_cast<uint64_t>(uq.Int(0, 1)),
                 static_cast<uint64_t>(uq.Int(0, 2))};
      }
      uint64_t bytes = 0;
      for (const auto& chunk : incoming) bytes += chunk.data().size();
      std::vector<jobs::TailRow> tail;
      if (jobs::LogAppendReachesTail(cap, usage, bytes)) {
        IG_ASSIGN_OR_RETURN(Rows tq,
                            c.Exec("SELECT seq, octet_length(data) FROM logs WHERE job_id = $1 AND idx = $2 "
                                   "AND part = $3 ORDER BY seq",
                                   Params().Text(job_id).Int(idx).Int(static_cast<int>(jobs::LogPart::kTail))));
        for (int r = 0; r < tq.size(); ++r) tail.push_back({tq.Int(r, 0), static_cast<uint64_t>(tq.Int(r, 1))});
      }
      const jobs::LogAppendPlan plan = jobs::PlanLogAppend(cap, usage, tail, incoming);
      if (!plan.evict.empty()) {
        IG_RETURN_IF_ERROR(
            c.Exec("DELETE FROM logs WHERE seq = ANY($1::bigint[])", Params().IntArray(plan.evict)).status());
      }
      for (const auto& row : plan.rows) {
        IG_RETURN_IF_ERROR(c.Exec("INSERT INTO logs(job_id, idx, attempt_id, stream, data, part) "
                                  "VALUES($1, $2, $3, $4, $5, $6)",
                                  Params()
                                      .Text(job_id)
                                      .Int(idx)
                                      .Text(row.chunk.attempt_id())
                                      .Text(row.chunk.stream())
                                      .Bytes(row.chunk.data())
                                      .Int(static_cast<int>(row.part)))
                               .status());
      }
      IG_RETURN_IF_ERROR(c.Exec("INSERT INTO log_usage(job_id, idx, head_bytes, tail_bytes, dropped_bytes) "
                                "VALUES($1, $2, $3, $4, $5) ON CONFLICT(job_id, idx) DO UPDATE SET "
                                "head_bytes = excluded.head_bytes, tail_bytes = excluded.tail_bytes, "
                                "dropped_bytes = excluded.dropped_bytes",
                                Params()
                                    .Text(job_id)
                                    .Int(idx)
                                    .Int(static_cast<int64_t>(plan.usage.head))
                                    .Int(static_cast<int64_t>(plan.usage.tail))
                                    .Int(static_cast<int64_t>(plan.usage.dropped)))
                             .status());
    }
    return Status::Ok();
  });
}

Result<std::vector<v1::LogChunk>> PgLogs::ReadLogs(const std::string& job_id, int64_t after_seq, size_t limit) {
  std::vector<v1::LogChunk> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    int64_t max_rows = limit > static_cast<size_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(limit);
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("SELECT seq, idx, attempt_id, stream, data FROM logs "
                                       "WHERE job_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                                       Params().Text(job_id).Int(after_seq).Int(max_rows)));
    out.clear();
    for (int r = 0; r < q.size(); ++r) {
      v1::LogChunk chunk;
      chunk.set_seq(q.Int(r, 0));
      chunk.set_task_index(static_cast<uint32_t>(q.Int(r, 1)));
      chunk.set_attempt_id(q.Text(r, 2));
      chunk.set_stream(q.Text(r, 3));
      chunk.set_data(q.Text(r, 4));
      out.push_back(std::move(chunk));
    }
    return Status::Ok();
  }));
  return out;
}

Status PgNodes::UpsertNode(const NodeRecord& node, const std::string& token_hash) {
  return Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    return c
        .Exec(
            "INSERT INTO nodes(id, name, token_hash, info, registered_ms, last_heartbeat_ms, public_key, "
            "last_sequence, advertisement, provider) VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) "
            "ON CONFLICT(id) DO UPDATE "
            "SET name = excluded.name, token_hash = excluded.token_hash, info = excluded.info, "
            "provider = excluded.provider, "
            "public_key = excluded.public_key, "
            "last_sequence = GREATEST(nodes.last_sequence, excluded.last_sequence), "
            "advertisement = CASE WHEN excluded.last_sequence > nodes.last_sequence "
            "THEN excluded.advertisement ELSE nodes.advertisement END",
            Params()
                .Text(node.id)
                .Text(node.name)
                .Text(token_hash)
                .Bytes(node.info.SerializeAsString())
                .Int(node.registered_ms)
                .Int(node.last_heartbeat_ms)
                .Bytes(node.public_key)
                .Int(static_cast<int64_t>(node.last_sequence))
                .Bytes(node.advertisement.SerializeAsString())
                .Text(node.provider))
        .status();
  });
}

Result<std::optional<NodeRecord>> PgNodes::NodeByTokenHash(const std::string& token_hash) {
  static const std::string kQuery = std::string(kNodeColumns) + "WHERE token_hash = $1";
  std::optional<NodeRecord> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec(kQuery.c_str(), Params().Text(token_hash)));
    out = q.empty() ? std::nullopt : std::optional<NodeRecord>(ReadNode(q, 0));
    return Status::Ok();
  }));
  return out;
}

Result<std::vector<NodeRecord>> PgNodes::ListNodes() {
  static const std::string kQuery = std::string(kNodeColumns) + "ORDER BY name, id";
  std::vector<NodeRecord> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec(kQuery.c_str()));
    out.clear();
    for (int r = 0; r < q.size(); ++r) out.push_back(ReadNode(q, r));
    return Status::Ok();
  }));
  return out;
}

Result<std::optional<NodeRecord>> PgNodes::GetNode(const std::string& node_id) {
  static const std::string kQuery = std::string(kNodeColumns) + "WHERE id = $1";
  std::optional<NodeRecord> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec(kQuery.c_str(), Params().Text(node_id)));
    out = q.empty() ? std::nullopt : std::optional<NodeRecord>(ReadNode(q, 0));
    return Status::Ok();
  }));
  return out;
}

Status PgNodes::RecordAdvertisement(const std::string& node_id, uint64_t sequence,
                                    const v1::Advertisement& advertisement) {
  return Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    // Conditional on the stored sequence: of two racing writers the older loses.
    IG_ASSIGN_OR_RETURN(
        Rows r,
        c.Exec("UPDATE nodes SET last_sequence = $1, advertisement = $2 "
               "WHERE id = $3 AND last_sequence < $1",
               Params().Int(static_cast<int64_t>(sequence)).Bytes(advertisement.SerializeAsString()).Text(node_id)));
    if (r.affected() != 1) {
      return Status::FailedPrecondition("stale sequence: advertisement " + std::to_string(sequence) + " of " + node_id +
                                        " is not newer than the stored one");
    }
    return Status::Ok();
  });
}

Status PgNodes::SetDrain(const std::string& node_id, bool draining, int64_t deadline_ms) {
  return Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows r, c.Exec("UPDATE nodes SET draining = $1, drain_deadline_ms = $2 WHERE id = $3",
                                       Params().Text(draining ? "true" : "false").Int(deadline_ms).Text(node_id)));
    if (r.affected() != 1) return Status::NotFound("node " + node_id + " does not exist");
    return Status::Ok();
  });
}

Status PgNodes::RecordMeasurement(const std::string& node_id, const v1::Measurement& measurement) {
  return Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    return c
        .Exec("UPDATE nodes SET measurement = $1 WHERE id = $2",
              Params().Bytes(measurement.SerializeAsString()).Text(node_id))
        .status();
  });
}

Status PgNodes::RecordHeartbeat(const std::string& node_id, const v1::NodeInfo& info, int64_t now_ms) {
  return Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    return c
        .Exec("UPDATE nodes SET info = $1, last_heartbeat_ms = $2 WHERE id = $3",
              Params().Bytes(info.SerializeAsString()).Int(now_ms).Text(node_id))
        .status();
  });
}

Status PgNodes::RecordHeartbeats(const std::map<std::string, int64_t>& last_heartbeat_ms) {
  if (last_heartbeat_ms.empty()) return Status::Ok();
  std::vector<std::string> ids, times;
  for (const auto& [id, ms] : last_heartbeat_ms) {
    ids.push_back(id);
    times.push_back(std::to_string(ms));
  }
  return Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    // An older time never wins, whichever coordinator writes it. The rows
    // are locked in id order, as CommitAssignments locks the nodes of a
    // batch, so the two never deadlock.
    return c
        .Exec(
            "WITH locked AS (SELECT n.id, i.ms FROM nodes n JOIN unnest($1::text[], $2::bigint[]) AS i(id, ms) "
            "ON n.id = i.id WHERE n.last_heartbeat_ms < i.ms ORDER BY n.id FOR UPDATE OF n) "
            "UPDATE nodes n SET last_heartbeat_ms = l.ms FROM locked l "
            "WHERE n.id = l.id AND n.last_heartbeat_ms < l.ms",
            Params().TextArray(ids).TextArray(times))
        .status();
  });
}

Status PgArtifacts::RecordArtifact(const std::string& digest, uint64_t size, const std::string& kind, int64_t now_ms) {
  return Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    return c
        .Exec(
            "INSERT INTO artifacts(digest, size, kind, created_ms) VALUES($1, $2, $3, $4) "
            "ON CONFLICT(digest) DO NOTHING",
            Params().Text(digest).Int(static_cast<int64_t>(size)).Text(kind).Int(now_ms))
        .status();
  });
}

Result<bool> PgArtifacts::HasArtifact(const std::string& digest) {
  bool found = false;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("SELECT 1 FROM artifacts WHERE digest = $1", Params().Text(digest)));
    found = !q.empty();
    return Status::Ok();
  }));
  return found;
}

Status PgArtifacts::RegisterImage(const ImageRecord& image, int64_t now_ms) {
  return Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    return c
        .Exec(
            "INSERT INTO images(manifest_digest, config_digest, archive_digest, created_ms) "
            "VALUES($1, $2, $3, $4) ON CONFLICT(manifest_digest) DO UPDATE SET "
            "config_digest = excluded.config_digest, archive_digest = excluded.archive_digest, "
            "created_ms = excluded.created_ms",
            Params().Text(image.manifest_digest).Text(image.config_digest).Text(image.archive_digest).Int(now_ms))
        .status();
  });
}

Result<std::optional<ImageRecord>> PgArtifacts::GetImage(const std::string& manifest_digest) {
  std::optional<ImageRecord> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("SELECT manifest_digest, config_digest, archive_digest FROM images "
                                       "WHERE manifest_digest = $1",
                                       Params().Text(manifest_digest)));
    out = q.empty() ? std::nullopt : std::optional<ImageRecord>(ImageRecord{q.Text(0, 0), q.Text(0, 1), q.Text(0, 2)});
    return Status::Ok();
  }));
  return out;
}

Result<std::string> PgNodes::PinClusterCa(const std::string& fingerprint, bool replace) {
  std::string out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    // One statement: of coordinators starting together, the first records its CA.
    IG_ASSIGN_OR_RETURN(
        Rows r, c.Exec(replace ? "INSERT INTO cluster_settings(name, value) VALUES('ca_fingerprint', $1) "
                                 "ON CONFLICT(name) DO UPDATE SET value = excluded.value RETURNING value"
                               : "INSERT INTO cluster_settings(name, value) VALUES('ca_fingerprint', $1) "
                                 "ON CONFLICT(name) DO UPDATE SET value = cluster_settings.value RETURNING value",
                       Params().Text(fingerprint)));
    if (r.empty()) return Status::Internal("the CA fingerprint was not recorded");
    out = r.Text(0, 0);
    return Status::Ok();
  }));
  return out;
}

}  // namespace idlegrid::store
