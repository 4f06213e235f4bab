// Schema migrations, versioned in code. Each entry runs once, in order, inside
// a transaction that also bumps PRAGMA user_version; never edit a shipped entry.
#include <string>
#include <vector>

#include "store/codec.h"
#include "store/sqlite/db.h"
#include "store/sqlite/sqlite_store.h"

namespace idlegrid::store {

namespace {

// Fills v9's copied job columns for jobs stored before it (from their specs).
Status BackfillJobColumns(sqlite3* db) {
  std::vector<std::pair<std::string, JobColumns>> rows;
  {
    Stmt q(db, "SELECT id, spec FROM jobs");
    while (q.Step()) {
      IG_ASSIGN_OR_RETURN(v1::JobSpec spec, ParseSpec(q.Blob(1)));
      rows.emplace_back(q.Text(0), JobColumnsOf(spec));
    }
    IG_RETURN_IF_ERROR(q.status());
  }
  Stmt upd(db,
           "UPDATE jobs SET cpu = ?, memory = ?, gpus = ?, gpu_memory = ?, runtime = ?, queue_timeout_ms = ? "
           "WHERE id = ?");
  for (const auto& [id, c] : rows) {
    upd.Reset().Bind(1, c.cpu).Bind(2, c.memory).Bind(3, c.gpus).Bind(4, c.gpu_memory).Bind(5, c.runtime);
    upd.Bind(6, c.queue_timeout_ms).Bind(7, id);
    upd.Step();
    IG_RETURN_IF_ERROR(upd.status());
  }
  return Status::Ok();
}

struct Migration {
  Migration(const char* sql_text, Status (*then_step)(sqlite3*) = nullptr) : sql(sql_text), then(then_step) {}
  const char* sql;
  Status (*then)(sqlite3*);  // data the SQL cannot compute, in the same transaction
};

// Versions are shared with the PostgreSQL store (pg_migrations.cc): both
// describe the same logical schema at each version from v6 on, which
// tests/store's schema contract test checks column by column.
const std::vector<Migration>& Migrations() {
  static const std::vector<Migration> kMigrations = {
      // v1: jobs, tasks, attempts, nodes, credentials, artifacts, images, logs.
      R"sql(
      CREATE TABLE jobs(
        id TEXT PRIMARY KEY, spec BLOB NOT NULL, spec_digest TEXT NOT NULL,
        created_ms INTEGER NOT NULL, seq INTEGER NOT NULL);
      CREATE TABLE tasks(
        job_id TEXT NOT NULL REFERENCES jobs(id), idx INTEGER NOT NULL,
        state INTEGER NOT NULL, reason INTEGER NOT NULL DEFAULT 0, message TEXT NOT NULL DEFAULT '',
        attempts INTEGER NOT NULL DEFAULT 0, queued_ms INTEGER NOT NULL,
        excluded TEXT NOT NULL DEFAULT '', updated_ms INTEGER NOT NULL,
        PRIMARY KEY(job_id, idx));
      CREATE INDEX tasks_by_state ON tasks(state, queued_ms);
      CREATE TABLE attempts(
        id TEXT PRIMARY KEY, job_id TEXT NOT NULL, idx INTEGER NOT NULL, node_id TEXT NOT NULL,
        state INTEGER NOT NULL, reason INTEGER NOT NULL DEFAULT 0, message TEXT NOT NULL DEFAULT '',
        exit_code INTEGER NOT NULL DEFAULT -1, assigned_ms INTEGER NOT NULL,
        started_ms INTEGER NOT NULL DEFAULT 0, finished_ms INTEGER NOT NULL DEFAULT 0,
        cpu REAL NOT NULL, memory INTEGER NOT NULL, gpus INTEGER NOT NULL,
        runtime TEXT NOT NULL DEFAULT '', outputs BLOB);
      CREATE INDEX attempts_by_task ON attempts(job_id, idx);
      CREATE INDEX attempts_by_state ON attempts(state, node_id);
      CREATE TABLE nodes(
        id TEXT PRIMARY KEY, name TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE, info BLOB,
        registered_ms INTEGER NOT NULL, last_heartbeat_ms INTEGER NOT NULL DEFAULT 0);
      CREATE TABLE api_tokens(hash TEXT PRIMARY KEY, role TEXT NOT NULL, created_ms INTEGER NOT NULL);
      CREATE TABLE artifacts(
        digest TEXT PRIMARY KEY, size INTEGER NOT NULL, kind TEXT NOT NULL, created_ms INTEGER NOT NULL);
      CREATE TABLE images(
        manifest_digest TEXT PRIMARY KEY, config_digest TEXT NOT NULL, archive_digest TEXT NOT NULL,
        created_ms INTEGER NOT NULL);
      CREATE TABLE logs(
        seq INTEGER PRIMARY KEY AUTOINCREMENT, job_id TEXT NOT NULL, idx INTEGER NOT NULL,
        attempt_id TEXT NOT NULL, stream TEXT NOT NULL, data BLOB NOT NULL);
      CREATE INDEX logs_by_job ON logs(job_id, seq);
      )sql",
      // v2: node identity (Ed25519 key), signed advertisements, readiness
      // measurements; the GPUs each attempt holds.
      R"sql(
      ALTER TABLE nodes ADD COLUMN public_key BLOB NOT NULL DEFAULT x'';
      ALTER TABLE nodes ADD COLUMN last_sequence INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE nodes ADD COLUMN advertisement BLOB;
      ALTER TABLE nodes ADD COLUMN measurement BLOB;
      ALTER TABLE attempts ADD COLUMN devices TEXT NOT NULL DEFAULT '';
      ALTER TABLE attempts ADD COLUMN gpu_memory INTEGER NOT NULL DEFAULT 0;
      )sql",
      // v3: when the agent acknowledged each assignment (ack timeouts).
      R"sql(
      ALTER TABLE attempts ADD COLUMN accepted_ms INTEGER NOT NULL DEFAULT 0;
      )sql",
      // v4: drain (the node takes no new work; -1 deadline = none).
      R"sql(
      ALTER TABLE nodes ADD COLUMN draining INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE nodes ADD COLUMN drain_deadline_ms INTEGER NOT NULL DEFAULT 0;
      )sql",
      // v5: retry backoff (a requeued task waits until not_before_ms).
      R"sql(
      ALTER TABLE tasks ADD COLUMN not_before_ms INTEGER NOT NULL DEFAULT 0;
      )sql",
      // v6: explicit lease epochs (fencing tokens), checkpoints (the latest per
      // task), and an index for per-node reliability over recent attempts.
      R"sql(
      ALTER TABLE attempts ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE attempts ADD COLUMN checkpoints INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE attempts ADD COLUMN last_checkpoint_ms INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE attempts ADD COLUMN restored_from TEXT NOT NULL DEFAULT '';
      CREATE TABLE checkpoints(
        job_id TEXT NOT NULL, idx INTEGER NOT NULL, attempt_id TEXT NOT NULL, epoch INTEGER NOT NULL,
        files BLOB NOT NULL, created_ms INTEGER NOT NULL, PRIMARY KEY(job_id, idx));
      CREATE INDEX attempts_by_node_finish ON attempts(node_id, finished_ms);
      )sql",
      // v7: how each attempt was placed and priced (policy, market terms) and
      // the compute share of each GPU it holds (1000 or 0: whole devices).
      R"sql(
      ALTER TABLE attempts ADD COLUMN placement BLOB;
      ALTER TABLE attempts ADD COLUMN gpu_milli INTEGER NOT NULL DEFAULT 0;
      )sql",
      // v8: reliability reads attempts by finish time across all nodes; v6's
      // (node_id, finished_ms) index cannot serve that.
      R"sql(
      DROP INDEX attempts_by_node_finish;
      CREATE INDEX attempts_by_finish ON attempts(finished_ms);
      )sql",
      // v9: the columns PostgreSQL had from its start, so both backends hold
      // the same logical schema: each job's reservation and queue timeout
      // copied from its spec (codec.h JobColumnsOf), each task's job order
      // for an index-ordered queue scan, each attempt's insertion order.
      {R"sql(
      ALTER TABLE jobs ADD COLUMN cpu REAL NOT NULL DEFAULT 0;
      ALTER TABLE jobs ADD COLUMN memory INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE jobs ADD COLUMN gpus INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE jobs ADD COLUMN gpu_memory INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE jobs ADD COLUMN runtime TEXT NOT NULL DEFAULT '';
      ALTER TABLE jobs ADD COLUMN queue_timeout_ms INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE tasks ADD COLUMN job_seq INTEGER NOT NULL DEFAULT 0;
      UPDATE tasks SET job_seq = (SELECT seq FROM jobs WHERE jobs.id = tasks.job_id);
      DROP INDEX tasks_by_state;
      CREATE INDEX tasks_by_state ON tasks(state, job_seq, idx);
      ALTER TABLE attempts ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
      UPDATE attempts SET seq = rowid;
      CREATE INDEX attempts_by_node ON attempts(node_id, state);
      )sql",
       BackfillJobColumns},
      // v10: the log cap (jobs/log_cap.h): which part of its task's log each
      // row is, and each task's usage; logs written before count as head.
      R"sql(
      ALTER TABLE logs ADD COLUMN part INTEGER NOT NULL DEFAULT 0;
      CREATE TABLE log_usage(
        job_id TEXT NOT NULL, idx INTEGER NOT NULL, head_bytes INTEGER NOT NULL, tail_bytes INTEGER NOT NULL,
        dropped_bytes INTEGER NOT NULL, PRIMARY KEY(job_id, idx));
      INSERT INTO log_usage(job_id, idx, head_bytes, tail_bytes, dropped_bytes)
        SELECT job_id, idx, SUM(length(data)), 0, 0 FROM logs GROUP BY job_id, idx;
      CREATE INDEX logs_by_task_part ON logs(job_id, idx, part, seq);
      )sql",
      // v11: tenancy (issue 11): accounts with roles, fair-share weights and
      // quotas; scoped, expiring, revocable API tokens (what existed becomes
      // the operator's); join tokens per provider; each job's account and
      // retention, each node's provider; artifact visibility and references
      // (who holds each blob: a job, or an upload in its grace period).
      // Everything stored before belongs to the operator account.
      R"sql(
      CREATE TABLE accounts(
        name TEXT PRIMARY KEY, role TEXT NOT NULL, created_ms INTEGER NOT NULL, weight REAL NOT NULL DEFAULT 1,
        max_queued_tasks INTEGER NOT NULL DEFAULT 0, max_running_tasks INTEGER NOT NULL DEFAULT 0,
        max_stored_bytes INTEGER NOT NULL DEFAULT 0);
      INSERT INTO accounts(name, role, created_ms) VALUES('operator', 'operator', 0);
      ALTER TABLE api_tokens ADD COLUMN id TEXT NOT NULL DEFAULT '';
      ALTER TABLE api_tokens ADD COLUMN account TEXT NOT NULL DEFAULT 'operator';
      ALTER TABLE api_tokens ADD COLUMN scopes INTEGER NOT NULL DEFAULT 15;
      ALTER TABLE api_tokens ADD COLUMN expires_ms INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE api_tokens ADD COLUMN revoked_ms INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE api_tokens ADD COLUMN name TEXT NOT NULL DEFAULT '';
      UPDATE api_tokens SET id = substr(hash, 8, 16), role = 'operator';
      CREATE INDEX api_tokens_by_id ON api_tokens(id);
      CREATE TABLE join_tokens(
        hash TEXT PRIMARY KEY, provider TEXT NOT NULL, created_ms INTEGER NOT NULL, expires_ms INTEGER NOT NULL DEFAULT 0);
      ALTER TABLE jobs ADD COLUMN account TEXT NOT NULL DEFAULT 'operator';
      ALTER TABLE jobs ADD COLUMN retention_ms INTEGER NOT NULL DEFAULT 0;
      CREATE INDEX jobs_by_account ON jobs(account, seq);
      ALTER TABLE nodes ADD COLUMN provider TEXT NOT NULL DEFAULT 'operator';
      ALTER TABLE artifacts ADD COLUMN public INTEGER NOT NULL DEFAULT 0;
      CREATE TABLE artifact_refs(
        digest TEXT NOT NULL, holder TEXT NOT NULL, account TEXT NOT NULL, expires_ms INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY(digest, holder));
      CREATE INDEX artifact_refs_by_holder ON artifact_refs(holder);
      CREATE INDEX artifact_refs_by_account ON artifact_refs(account, digest);
      )sql",
      // v12: each attempt's provenance record (docs/provenance.md), a
      // serialized v1::Provenance written when it starts; NULL for attempts
      // from before.
      R"sql(
      ALTER TABLE attempts ADD COLUMN provenance BLOB;
      )sql",
      // v13: the ledger (issue 13, src/ledger): postings in commit order,
      // their entries, each account's balance (kept with the entries in the
      // same transaction, so the non-negative check reads one row), and
      // each settlement sink's cursor. Amounts are integer micro-credits.
      R"sql(
      CREATE TABLE ledger_postings(
        seq INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, reason TEXT NOT NULL,
        job_id TEXT NOT NULL DEFAULT '', memo TEXT NOT NULL DEFAULT '', applied_ms INTEGER NOT NULL);
      CREATE TABLE ledger_entries(
        seq INTEGER NOT NULL REFERENCES ledger_postings(seq), idx INTEGER NOT NULL,
        owner TEXT NOT NULL, kind TEXT NOT NULL, scope TEXT NOT NULL, amount INTEGER NOT NULL,
        PRIMARY KEY(seq, idx));
      CREATE INDEX ledger_entries_by_owner ON ledger_entries(owner, seq);
      CREATE TABLE ledger_balances(
        owner TEXT NOT NULL, kind TEXT NOT NULL, scope TEXT NOT NULL, balance INTEGER NOT NULL,
        PRIMARY KEY(owner, kind, scope));
      CREATE TABLE ledger_settlement(sink TEXT PRIMARY KEY, last_seq INTEGER NOT NULL);
      )sql",
      // v14: each attempt's countersigned receipt (docs/receipts.md), a
      // serialized v1::Receipt written after its exit; NULL when it has none.
      R"sql(
      ALTER TABLE attempts ADD COLUMN receipt BLOB;
      )sql",
      // v15: verification (docs/verification.md): each attempt's vote, each
      // task's verification line, and each provider's record per image
      // (image '' holds its reliability and catches).
      R"sql(
      ALTER TABLE attempts ADD COLUMN vote TEXT NOT NULL DEFAULT '';
      ALTER TABLE attempts ADD COLUMN vote_reason TEXT NOT NULL DEFAULT '';
      ALTER TABLE tasks ADD COLUMN verification TEXT NOT NULL DEFAULT '';
      CREATE TABLE provider_trust(
        provider TEXT NOT NULL, image TEXT NOT NULL, consecutive INTEGER NOT NULL, reliability INTEGER NOT NULL,
        caught INTEGER NOT NULL, updated_ms INTEGER NOT NULL, PRIMARY KEY(provider, image));
      )sql",
      // v16: workflows (docs/workflows.md): the spec and state of each, and
      // one row per step with the job it ran (or reused: cached) under its
      // cache key, which resubmissions look up.
      R"sql(
      CREATE TABLE workflows(
        id TEXT PRIMARY KEY, account TEXT NOT NULL, spec BLOB NOT NULL, state TEXT NOT NULL,
        settled INTEGER NOT NULL DEFAULT 0, created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL);
      CREATE INDEX workflows_by_account ON workflows(account, created_ms);
      CREATE INDEX workflows_unsettled ON workflows(settled, created_ms);
      CREATE TABLE workflow_steps(
        workflow_id TEXT NOT NULL REFERENCES workflows(id) ON DELETE CASCADE, idx INTEGER NOT NULL,
        name TEXT NOT NULL, state TEXT NOT NULL, job_id TEXT NOT NULL DEFAULT '',
        cache_key TEXT NOT NULL DEFAULT '', cached INTEGER NOT NULL DEFAULT 0, message TEXT NOT NULL DEFAULT '',
        PRIMARY KEY(workflow_id, name));
      CREATE INDEX workflow_steps_by_cache_key ON workflow_steps(cache_key);
      )sql",
      // v17: a user's retry gives a task a fresh retry budget: the attempts
      // it had used by then no longer count (jobs/task_select.h).
      R"sql(
      ALTER TABLE tasks ADD COLUMN retry_base INTEGER NOT NULL DEFAULT 0;
      )sql",
      // v18: webhooks (docs/webhooks.md): one row per callback, its delivery
      // (a WebhookDelivery) and state, due at next_ms.
      R"sql(
      CREATE TABLE webhooks(
        id TEXT PRIMARY KEY, subject TEXT NOT NULL, subject_id TEXT NOT NULL, state TEXT NOT NULL,
        next_ms INTEGER NOT NULL, delivery BLOB NOT NULL, secret TEXT NOT NULL, body BLOB NOT NULL);
      CREATE INDEX webhooks_due ON webhooks(state, next_ms);
      CREATE INDEX webhooks_by_subject ON webhooks(subject, subject_id);
      )sql",
      // v19: a node's attempt history, newest first (AttemptStore::NodeAttempts).
      R"sql(
      CREATE INDEX IF NOT EXISTS attempts_by_node_assigned ON attempts(node_id, assigned_ms, seq);
      )sql",
      // v20: settings of the grid as a whole (NodeStore::PinClusterCa).
      R"sql(
      CREATE TABLE IF NOT EXISTS cluster_settings(name TEXT PRIMARY KEY, value TEXT NOT NULL);
      )sql",
  };
  return kMigrations;
}

}  // namespace

Status SqliteStore::Migrate() {
  std::lock_guard<std::mutex> lock(mu);
  int64_t current = 0;
  {
    // Finalized before migrating: an open statement would lock the schema
    // (DROP INDEX fails with "database table is locked").
    Stmt version(db, "PRAGMA user_version");
    if (!version.Step()) return version.status();
    current = version.Int(0);
  }
  const auto& all = Migrations();
  if (current > static_cast<int64_t>(all.size())) {
    return Status::FailedPrecondition("database schema version " + std::to_string(current) +
                                      " is newer than this binary supports (" + std::to_string(all.size()) +
                                      "); upgrade idlegrid");
  }
  for (size_t v = static_cast<size_t>(current); v < all.size(); ++v) {
    Transaction tx(db);
    IG_RETURN_IF_ERROR(tx.status());
    IG_RETURN_IF_ERROR(Exec(db, all[v].sql).WithContext("migration " + std::to_string(v + 1)));
    if (all[v].then != nullptr) IG_RETURN_IF_ERROR(all[v].then(db).WithContext("migration " + std::to_string(v + 1)));
    std::string bump = "PRAGMA user_version = " + std::to_string(v + 1);
    IG_RETURN_IF_ERROR(Exec(db, bump.c_str()));
    IG_RETURN_IF_ERROR(tx.Commit());
  }
  return Status::Ok();
}

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) !=
      SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Status::Internal("cannot open database " + path + ": " + msg);
  }
  sqlite3_busy_timeout(db, 5000);
  auto store = std::make_unique<SqliteStore>(db);
  // A page cache of up to 64 MiB (grown on demand) keeps the indexes a large
  // batch of assignments touches in memory.
  IG_RETURN_IF_ERROR(Exec(db,
                          "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; "
                          "PRAGMA cache_size=-65536;"));
  IG_RETURN_IF_ERROR(store->Migrate());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace idlegrid::store
