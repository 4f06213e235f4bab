// Schema migrations, versioned in code. Pending entries run in order inside
// one transaction that first takes a transaction-scoped advisory lock, so
// coordinators starting at once against an empty database migrate exactly
// once (the others wait, then find nothing to do). Never edit a shipped entry.
#include <string>
#include <vector>

#include "store/postgres/postgres_store.h"

namespace idlegrid::store {

namespace {

// Any constant, shared by every idlegrid binary: "idlg" "migr" in ASCII.
constexpr int64_t kMigrationLockKey = 0x69646c676d696772;

// Versions are shared with the SQLite store (sqlite/migrations.cc): at each
// version from v6 on, both hold the same logical schema (tests/store checks it
// column by column). PostgreSQL support began at v6, so v1..v5 have no script
// here: the v6 script creates that whole schema. nullptr: nothing to do here
// at that version.
const std::vector<const char*>& Migrations() {
  static const std::vector<const char*> kMigrations = {
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      // v6: the schema at v6, plus v8's index and v9's columns (jobs keep the
      // reservation and queue timeout copied from their spec, tasks their
      // job's order, attempts their insertion order), which PostgreSQL needed
      // from the start to do in SQL what SQLite does under its single writer.
      R"sql(
      CREATE TABLE jobs(
        id TEXT PRIMARY KEY, spec BYTEA NOT NULL, spec_digest TEXT NOT NULL,
        created_ms BIGINT NOT NULL, seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
        cpu DOUBLE PRECISION NOT NULL, memory BIGINT NOT NULL, gpus INTEGER NOT NULL,
        gpu_memory BIGINT NOT NULL, runtime TEXT NOT NULL, queue_timeout_ms BIGINT NOT NULL);
      CREATE TABLE tasks(
        job_id TEXT NOT NULL REFERENCES jobs(id), idx INTEGER NOT NULL, job_seq BIGINT NOT NULL,
        state INTEGER NOT NULL, reason INTEGER NOT NULL DEFAULT 0, message TEXT NOT NULL DEFAULT '',
        attempts INTEGER NOT NULL DEFAULT 0, queued_ms BIGINT NOT NULL,
        excluded TEXT NOT NULL DEFAULT '', updated_ms BIGINT NOT NULL,
        not_before_ms BIGINT NOT NULL DEFAULT 0,
        PRIMARY KEY(job_id, idx));
      CREATE INDEX tasks_by_state ON tasks(state, job_seq, idx);
      CREATE TABLE attempts(
        id TEXT PRIMARY KEY, seq BIGINT GENERATED ALWAYS AS IDENTITY,
        job_id TEXT NOT NULL, idx INTEGER NOT NULL, node_id TEXT NOT NULL,
        state INTEGER NOT NULL, reason INTEGER NOT NULL DEFAULT 0, message TEXT NOT NULL DEFAULT '',
        exit_code INTEGER NOT NULL DEFAULT -1, assigned_ms BIGINT NOT NULL,
        started_ms BIGINT NOT NULL DEFAULT 0, finished_ms BIGINT NOT NULL DEFAULT 0,
        accepted_ms BIGINT NOT NULL DEFAULT 0,
        cpu DOUBLE PRECISION NOT NULL, memory BIGINT NOT NULL, gpus INTEGER NOT NULL,
        gpu_memory BIGINT NOT NULL DEFAULT 0, devices TEXT NOT NULL DEFAULT '',
        runtime TEXT NOT NULL DEFAULT '', outputs BYTEA,
        epoch BIGINT NOT NULL DEFAULT 0, checkpoints INTEGER NOT NULL DEFAULT 0,
        last_checkpoint_ms BIGINT NOT NULL DEFAULT 0, restored_from TEXT NOT NULL DEFAULT '');
      CREATE INDEX attempts_by_task ON attempts(job_id, idx);
      CREATE INDEX attempts_by_state ON attempts(state, node_id);
      CREATE INDEX attempts_by_node ON attempts(node_id, state);
      CREATE INDEX attempts_by_finish ON attempts(finished_ms);
      CREATE TABLE checkpoints(
        job_id TEXT NOT NULL, idx INTEGER NOT NULL, attempt_id TEXT NOT NULL, epoch BIGINT NOT NULL,
        files BYTEA NOT NULL, created_ms BIGINT NOT NULL, PRIMARY KEY(job_id, idx));
      CREATE TABLE nodes(
        id TEXT PRIMARY KEY, name TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE, info BYTEA,
        registered_ms BIGINT NOT NULL, last_heartbeat_ms BIGINT NOT NULL DEFAULT 0,
        public_key BYTEA NOT NULL DEFAULT '', last_sequence BIGINT NOT NULL DEFAULT 0,
        advertisement BYTEA, measurement BYTEA,
        draining BOOLEAN NOT NULL DEFAULT FALSE, drain_deadline_ms BIGINT NOT NULL DEFAULT 0);
      CREATE TABLE api_tokens(hash TEXT PRIMARY KEY, role TEXT NOT NULL, created_ms BIGINT NOT NULL);
      CREATE TABLE artifacts(
        digest TEXT PRIMARY KEY, size BIGINT NOT NULL, kind TEXT NOT NULL, created_ms BIGINT NOT NULL);
      CREATE TABLE images(
        manifest_digest TEXT PRIMARY KEY, config_digest TEXT NOT NULL, archive_digest TEXT NOT NULL,
        created_ms BIGINT NOT NULL);
      CREATE TABLE logs(
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, job_id TEXT NOT NULL, idx INTEGER NOT NULL,
        attempt_id TEXT NOT NULL, stream TEXT NOT NULL, data BYTEA NOT NULL);
      CREATE INDEX logs_by_job ON logs(job_id, seq);
      )sql",
      // v7: how each attempt was placed and priced (a PlacementRecord) and the
      // compute share of each GPU it holds (1000 or 0: whole devices).
      R"sql(
      ALTER TABLE attempts ADD COLUMN placement BYTEA;
      ALTER TABLE attempts ADD COLUMN gpu_milli INTEGER NOT NULL DEFAULT 0;
      )sql",
      nullptr,  // v8: attempts_by_finish is in v6 here
      nullptr,  // v9: SQLite catches up with v6's extra columns
      // v10: the log cap (jobs/log_cap.h): which part of its task's log each
      // row is, and each task's usage; logs written before count as head.
      R"sql(
      ALTER TABLE logs ADD COLUMN part INTEGER NOT NULL DEFAULT 0;
      CREATE TABLE log_usage(
        job_id TEXT NOT NULL, idx INTEGER NOT NULL, head_bytes BIGINT NOT NULL, tail_bytes BIGINT NOT NULL,
        dropped_bytes BIGINT NOT NULL, PRIMARY KEY(job_id, idx));
      INSERT INTO log_usage(job_id, idx, head_bytes, tail_bytes, dropped_bytes)
        SELECT job_id, idx, SUM(octet_length(data)), 0, 0 FROM logs GROUP BY job_id, idx;
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
        name TEXT PRIMARY KEY, role TEXT NOT NULL, created_ms BIGINT NOT NULL, weight DOUBLE PRECISION NOT NULL DEFAULT 1,
        max_queued_tasks BIGINT NOT NULL DEFAULT 0, max_running_tasks BIGINT NOT NULL DEFAULT 0,
        max_stored_bytes BIGINT NOT NULL DEFAULT 0);
      INSERT INTO accounts(name, role, created_ms) VALUES('operator', 'operator', 0);
      ALTER TABLE api_tokens ADD COLUMN id TEXT NOT NULL DEFAULT '';
      ALTER TABLE api_tokens ADD COLUMN account TEXT NOT NULL DEFAULT 'operator';
      ALTER TABLE api_tokens ADD COLUMN scopes BIGINT NOT NULL DEFAULT 15;
      ALTER TABLE api_tokens ADD COLUMN expires_ms BIGINT NOT NULL DEFAULT 0;
      ALTER TABLE api_tokens ADD COLUMN revoked_ms BIGINT NOT NULL DEFAULT 0;
      ALTER TABLE api_tokens ADD COLUMN name TEXT NOT NULL DEFAULT '';
      UPDATE api_tokens SET id = substr(hash, 8, 16), role = 'operator';
      CREATE INDEX api_tokens_by_id ON api_tokens(id);
      CREATE TABLE join_tokens(
        hash TEXT PRIMARY KEY, provider TEXT NOT NULL, created_ms BIGINT NOT NULL, expires_ms BIGINT NOT NULL DEFAULT 0);
      ALTER TABLE jobs ADD COLUMN account TEXT NOT NULL DEFAULT 'operator';
      ALTER TABLE jobs ADD COLUMN retention_ms BIGINT NOT NULL DEFAULT 0;
      CREATE INDEX jobs_by_account ON jobs(account, seq);
      ALTER TABLE nodes ADD COLUMN provider TEXT NOT NULL DEFAULT 'operator';
      ALTER TABLE artifacts ADD COLUMN public BOOLEAN NOT NULL DEFAULT FALSE;
      CREATE TABLE artifact_refs(
        digest TEXT NOT NULL, holder TEXT NOT NULL, account TEXT NOT NULL, expires_ms BIGINT NOT NULL DEFAULT 0,
        PRIMARY KEY(digest, holder));
      CREATE INDEX artifact_refs_by_holder ON artifact_refs(holder);
      CREATE INDEX artifact_refs_by_account ON artifact_refs(account, digest);
      )sql",
      // v12: each attempt's provenance record (docs/provenance.md), a
      // serialized v1::Provenance written when it starts; NULL for attempts
      // from before.
      R"sql(
      ALTER TABLE attempts ADD COLUMN provenance BYTEA;
      )sql",
      // v13: the ledger (see sqlite/migrations.cc v13). seq is an identity
      // allocated under the ledger's advisory lock, so it follows commit order.
      R"sql(
      CREATE TABLE ledger_postings(
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, key TEXT NOT NULL UNIQUE, reason TEXT NOT NULL,
        job_id TEXT NOT NULL DEFAULT '', memo TEXT NOT NULL DEFAULT '', applied_ms BIGINT NOT NULL);
      CREATE TABLE ledger_entries(
        seq BIGINT NOT NULL REFERENCES ledger_postings(seq), idx INTEGER NOT NULL,
        owner TEXT NOT NULL, kind TEXT NOT NULL, scope TEXT NOT NULL, amount BIGINT NOT NULL,
        PRIMARY KEY(seq, idx));
      CREATE INDEX ledger_entries_by_owner ON ledger_entries(owner, seq);
      CREATE TABLE ledger_balances(
        owner TEXT NOT NULL, kind TEXT NOT NULL, scope TEXT NOT NULL, balance BIGINT NOT NULL,
        PRIMARY KEY(owner, kind, scope));
      CREATE TABLE ledger_settlement(sink TEXT PRIMARY KEY, last_seq BIGINT NOT NULL);
      )sql",
      // v14: each attempt's countersigned receipt (docs/receipts.md), a
      // serialized v1::Receipt written after its exit; NULL when it has none.
      R"sql(
      ALTER TABLE attempts ADD COLUMN receipt BYTEA;
      )sql",
      // v15: verification (docs/verification.md): each attempt's vote, each
      // task's verification line, and each provider's record per image
      // (image '' holds its reliability and catches).
      R"sql(
      ALTER TABLE attempts ADD COLUMN vote TEXT NOT NULL DEFAULT '';
      ALTER TABLE attempts ADD COLUMN vote_reason TEXT NOT NULL DEFAULT '';
      ALTER TABLE tasks ADD COLUMN verification TEXT NOT NULL DEFAULT '';
      CREATE TABLE provider_trust(
        provider TEXT NOT NULL, image TEXT NOT NULL, consecutive BIGINT NOT NULL, reliability BIGINT NOT NULL,
        caught BIGINT NOT NULL, updated_ms BIGINT NOT NULL, PRIMARY KEY(provider, image));
      )sql",
      // v16: workflows (docs/workflows.md): the spec and state of each, and
      // one row per step with the job it ran (or reused: cached) under its
      // cache key, which resubmissions look up.
      R"sql(
      CREATE TABLE workflows(
        id TEXT PRIMARY KEY, account TEXT NOT NULL, spec BYTEA NOT NULL, state TEXT NOT NULL,
        settled BIGINT NOT NULL DEFAULT 0, created_ms BIGINT NOT NULL, updated_ms BIGINT NOT NULL);
      CREATE INDEX workflows_by_account ON workflows(account, created_ms);
      CREATE INDEX workflows_unsettled ON workflows(settled, created_ms);
      CREATE TABLE workflow_steps(
        workflow_id TEXT NOT NULL REFERENCES workflows(id) ON DELETE CASCADE, idx BIGINT NOT NULL,
        name TEXT NOT NULL, state TEXT NOT NULL, job_id TEXT NOT NULL DEFAULT '',
        cache_key TEXT NOT NULL DEFAULT '', cached BIGINT NOT NULL DEFAULT 0, message TEXT NOT NULL DEFAULT '',
        PRIMARY KEY(workflow_id, name));
      CREATE INDEX workflow_steps_by_cache_key ON workflow_steps(cache_key);
      )sql",
      // v17: a user's retry gives a task a fresh retry budget: the attempts
      // it had used by then no longer count (jobs/task_select.h).
      R"sql(
      ALTER TABLE tasks ADD COLUMN retry_base BIGINT NOT NULL DEFAULT 0;
      )sql",
      // v18: webhooks (docs/webhooks.md): one row per callback, its delivery
      // (a WebhookDelivery) and state, due at next_ms.
      R"sql(
      CREATE TABLE webhooks(
        id TEXT PRIMARY KEY, subject TEXT NOT NULL, subject_id TEXT NOT NULL, state TEXT NOT NULL,
        next_ms BIGINT NOT NULL, delivery BYTEA NOT NULL, secret TEXT NOT NULL, body BYTEA NOT NULL);
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

Status PostgresStore::Migrate() {
  const auto& all = Migrations();
  return pg::RunTransaction(pool, pg::Isolation::kReadCommitted, [&](pg::Connection& c) -> Status {
    IG_RETURN_IF_ERROR(c.Exec("SELECT pg_advisory_xact_lock($1)", pg::Params().Int(kMigrationLockKey)).status());
    // Read after taking the lock: under READ COMMITTED each statement sees what
    // a coordinator that migrated before us committed.
    IG_RETURN_IF_ERROR(c.ExecScript("CREATE TABLE IF NOT EXISTS idlegrid_schema(version INTEGER NOT NULL)"));
    IG_ASSIGN_OR_RETURN(pg::Rows version, c.Exec("SELECT version FROM idlegrid_schema"));
    int64_t current = version.empty() ? 0 : version.Int(0, 0);
    // Before the versions were shared, PostgreSQL numbered its own scripts
    // 1 (now v6) and 2 (now v7). A shared-numbering database never stores
    // 1..5: a fresh one runs every script in this one transaction.
    if (current == 1 || current == 2) current += 5;
    if (version.empty()) {
      IG_RETURN_IF_ERROR(c.ExecScript("INSERT INTO idlegrid_schema(version) VALUES(0)"));
    }
    if (current > static_cast<int64_t>(all.size())) {
      return Status::FailedPrecondition("database schema version " + std::to_string(current) +
                                        " is newer than this binary supports (" + std::to_string(all.size()) +
                                        "); upgrade idlegrid");
    }
    if (current == static_cast<int64_t>(all.size())) return Status::Ok();
    for (size_t v = static_cast<size_t>(current); v < all.size(); ++v) {
      if (all[v] == nullptr) continue;
      IG_RETURN_IF_ERROR(c.ExecScript(all[v]).WithContext("migration " + std::to_string(v + 1)));
    }
    return c.Exec("UPDATE idlegrid_schema SET version = $1", pg::Params().Int(static_cast<int64_t>(all.size())))
        .status();
  });
}

Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& conninfo, const PostgresOptions& options) {
  auto store = std::make_unique<PostgresStore>(conninfo, options.pool_size == 0 ? 1 : options.pool_size);
  IG_RETURN_IF_ERROR(store->Migrate().WithContext("PostgreSQL store"));
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace idlegrid::store
