// Accounts, API tokens and join tokens (issue 11).
#include "store/sqlite/sqlite_store.h"

namespace idlegrid::store {

namespace {

constexpr char kAccountColumns[] =
    "SELECT name, role, created_ms, weight, max_queued_tasks, max_running_tasks, max_stored_bytes FROM accounts ";

AccountRecord ReadAccount(const Stmt& q) {
  AccountRecord a;
  a.name = q.Text(0);
  a.role = q.Text(1);
  a.created_ms = q.Int(2);
  a.weight = q.Double(3);
  a.max_queued_tasks = static_cast<uint32_t>(q.Int(4));
  a.max_running_tasks = static_cast<uint32_t>(q.Int(5));
  a.max_stored_bytes = static_cast<uint64_t>(q.Int(6));
  return a;
}

// The role is the account's, joined: a token never outranks its account.
constexpr char kTokenColumns[] =
    "SELECT t.id, t.hash, t.account, a.role, t.name, t.scopes, t.created_ms, t.expires_ms, t.revoked_ms "
    "FROM api_tokens t JOIN accounts a ON a.name = t.account ";

TokenRecord ReadToken(const Stmt& q) {
  TokenRecord t;
  t.id = q.Text(0);
  t.hash = q.Text(1);
  t.account = q.Text(2);
  t.role = q.Text(3);
  t.name = q.Text(4);
  t.scopes = static_cast<uint32_t>(q.Int(5));
  t.created_ms = q.Int(6);
  t.expires_ms = q.Int(7);
  t.revoked_ms = q.Int(8);
  return t;
}

}  // namespace

Status SqliteAccounts::CreateAccount(const AccountRecord& a) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_,
         "INSERT INTO accounts(name, role, created_ms, weight, max_queued_tasks, max_running_tasks, "
         "max_stored_bytes) VALUES(?, ?, ?, ?, ?, ?, ?) ON CONFLICT(name) DO NOTHING");
  q.Bind(1, a.name).Bind(2, a.role).Bind(3, a.created_ms).Bind(4, a.weight);
  q.Bind(5, int64_t{a.max_queued_tasks}).Bind(6, int64_t{a.max_running_tasks});
  q.Bind(7, static_cast<int64_t>(a.max_stored_bytes));
  q.Step();
  IG_RETURN_IF_ERROR(q.status());
  if (sqlite3_changes(db_) == 0) return Status::AlreadyExists("account " + a.name + " already exists");
  return Status::Ok();
}

Result<std::vector<AccountRecord>> SqliteAccounts::ListAccounts() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<AccountRecord> out;
  Stmt q(db_, (std::string(kAccountColumns) + "ORDER BY name").c_str());
  while (q.Step()) out.push_back(ReadAccount(q));
  IG_RETURN_IF_ERROR(q.status());
  return out;
}

Result<std::optional<AccountRecord>> SqliteAccounts::GetAccount(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_, (std::string(kAccountColumns) + "WHERE name = ?").c_str());
  q.Bind(1, name);
  if (q.Step()) return std::optional<AccountRecord>(ReadAccount(q));
  IG_RETURN_IF_ERROR(q.status());
  return std::optional<AccountRecord>();
}

Result<AccountUsage> SqliteAccounts::UsageOf(const std::string& account) {
  std::lock_guard<std::mutex> lock(mu_);
  AccountUsage u;
  Stmt tasks(db_,
             "SELECT t.state, COUNT(*) FROM tasks t JOIN jobs j ON j.id = t.job_id "
             "WHERE j.account = ? AND t.state IN (?, ?, ?) GROUP BY t.state");
  tasks.Bind(1, account).Bind(2, int64_t{v1::QUEUED}).Bind(3, int64_t{v1::ASSIGNED}).Bind(4, int64_t{v1::RUNNING});
  while (tasks.Step()) {
    auto n = static_cast<uint32_t>(tasks.Int(1));
    (tasks.Int(0) == v1::QUEUED ? u.queued_tasks : u.running_tasks) += n;
  }
  IG_RETURN_IF_ERROR(tasks.status());
  Stmt bytes(db_,
             "SELECT COALESCE((SELECT SUM(a.size) FROM artifacts a WHERE a.digest IN "
             "(SELECT digest FROM artifact_refs WHERE account = ?)), 0) + "
             "COALESCE((SELECT SUM(l.head_bytes + l.tail_bytes) FROM log_usage l JOIN jobs j ON j.id = l.job_id "
             "WHERE j.account = ?), 0)");
  bytes.Bind(1, account).Bind(2, account);
  if (bytes.Step()) u.stored_bytes = static_cast<uint64_t>(bytes.Int(0));
  IG_RETURN_IF_ERROR(bytes.status());
  return u;
}

Status SqliteAccounts::AddApiToken(const TokenRecord& t) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_,
         "INSERT INTO api_tokens(hash, role, created_ms, id, account, scopes, expires_ms, revoked_ms, name) "
         "SELECT ?, role, ?, ?, name, ?, ?, 0, ? FROM accounts WHERE name = ?");
  q.Bind(1, t.hash).Bind(2, t.created_ms).Bind(3, t.id).Bind(4, int64_t{t.scopes}).Bind(5, t.expires_ms);
  q.Bind(6, t.name).Bind(7, t.account);
  q.Step();
  IG_RETURN_IF_ERROR(q.status());
  if (sqlite3_changes(db_) == 0) return Status::NotFound("account " + t.account + " does not exist");
  return Status::Ok();
}

Result<std::optional<TokenRecord>> SqliteAccounts::TokenByHash(const std::string& token_hash) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_, (std::string(kTokenColumns) + "WHERE t.hash = ?").c_str());
  q.Bind(1, token_hash);
  if (q.Step()) return std::optional<TokenRecord>(ReadToken(q));
  IG_RETURN_IF_ERROR(q.status());
  return std::optional<TokenRecord>();
}

Result<std::vector<TokenRecord>> SqliteAccounts::ListTokens(const std::string& account) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TokenRecord> out;
  Stmt q(db_, (std::string(kTokenColumns) + "WHERE ? = '' OR t.account = ? ORDER BY t.created_ms, t.id").c_str());
  q.Bind(1, account).Bind(2, account);
  while (q.Step()) out.push_back(ReadToken(q));
  IG_RETURN_IF_ERROR(q.status());
  return out;
}

Result<TokenRecord> SqliteAccounts::RevokeToken(const std::string& id, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt upd(db_, "UPDATE api_tokens SET revoked_ms = ? WHERE id = ? AND revoked_ms = 0");
  upd.Bind(1, now_ms).Bind(2, id);
  upd.Step();
  IG_RETURN_IF_ERROR(upd.status());
  Stmt q(db_, (std::string(kTokenColumns) + "WHERE t.id = ?").c_str());
  q.Bind(1, id);
  if (q.Step()) return ReadToken(q);
  IG_RETURN_IF_ERROR(q.status());
  return Status::NotFound("no token with id " + id);
}

Status SqliteAccounts::AddJoinToken(const JoinTokenRecord& t) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_,
         "INSERT INTO join_tokens(hash, provider, created_ms, expires_ms) "
         "SELECT ?, name, ?, ? FROM accounts WHERE name = ?");
  q.Bind(1, t.hash).Bind(2, t.created_ms).Bind(3, t.expires_ms).Bind(4, t.provider);
  q.Step();
  IG_RETURN_IF_ERROR(q.status());
  if (sqlite3_changes(db_) == 0) return Status::NotFound("account " + t.provider + " does not exist");
  return Status::Ok();
}

Result<std::optional<JoinTokenRecord>> SqliteAccounts::JoinTokenByHash(const std::string& token_hash) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_, "SELECT hash, provider, created_ms, expires_ms FROM join_tokens WHERE hash = ?");
  q.Bind(1, token_hash);
  if (q.Step()) return std::optional<JoinTokenRecord>(JoinTokenRecord{q.Text(0), q.Text(1), q.Int(2), q.Int(3)});
  IG_RETURN_IF_ERROR(q.status());
  return std::optional<JoinTokenRecord>();
}

}  // namespace idlegrid::store

namespace idlegrid::store {

Result<std::optional<std::string>> SqliteJobs::JobAccount(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_, "SELECT account FROM jobs WHERE id = ?");
  q.Bind(1, job_id);
  if (q.Step()) return std::optional<std::string>(q.Text(0));
  IG_RETURN_IF_ERROR(q.status());
  return std::optional<std::string>();
}

Status SqliteArtifacts::AddArtifactRefs(const std::vector<ArtifactRef>& refs) {
  std::lock_guard<std::mutex> lock(mu_);
  Transaction tx(db_);
  IG_RETURN_IF_ERROR(tx.status());
  Stmt q(db_,
         "INSERT INTO artifact_refs(digest, holder, account, expires_ms) VALUES(?, ?, ?, ?) "
         "ON CONFLICT(digest, holder) DO UPDATE SET expires_ms = CASE WHEN expires_ms = 0 OR excluded.expires_ms = 0 "
         "THEN 0 ELSE MAX(expires_ms, excluded.expires_ms) END");
  for (const ArtifactRef& r : refs) {
    q.Reset().Bind(1, r.digest).Bind(2, r.holder).Bind(3, r.account).Bind(4, r.expires_ms);
    q.Step();
    IG_RETURN_IF_ERROR(q.status());
  }
  return tx.Commit();
}

Status SqliteArtifacts::SetArtifactPublic(const std::string& digest) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_, "UPDATE artifacts SET public = 1 WHERE digest = ?");
  q.Bind(1, digest);
  q.Step();
  return q.status();
}

Result<ArtifactAccess> SqliteArtifacts::ArtifactAccessOf(const std::string& digest) {
  std::lock_guard<std::mutex> lock(mu_);
  ArtifactAccess out;
  Stmt a(db_, "SELECT public FROM artifacts WHERE digest = ?");
  a.Bind(1, digest);
  if (!a.Step()) {
    IG_RETURN_IF_ERROR(a.status());
    return out;
  }
  out.exists = true;
  out.is_public = a.Int(0) != 0;
  a.Reset();
  Stmt r(db_, "SELECT DISTINCT account FROM artifact_refs WHERE digest = ?");
  r.Bind(1, digest);
  while (r.Step()) out.accounts.insert(r.Text(0));
  IG_RETURN_IF_ERROR(r.status());
  return out;
}

}  // namespace idlegrid::store
