// Accounts, API tokens and join tokens in PostgreSQL (issue 11): single
// statements, each its own transaction.
#include "store/postgres/postgres_store.h"

namespace idlegrid::store {

using pg::Connection;
using pg::Isolation;
using pg::Params;
using pg::Rows;

namespace {

constexpr char kAccountColumns[] =
    "SELECT name, role, created_ms, weight, max_queued_tasks, max_running_tasks, max_stored_bytes FROM accounts ";

AccountRecord ReadAccount(const Rows& q, int r) {
  AccountRecord a;
  a.name = q.Text(r, 0);
  a.role = q.Text(r, 1);
  a.created_ms = q.Int(r, 2);
  a.weight = q.Double(r, 3);
  a.max_queued_tasks = static_cast<uint32_t>(q.Int(r, 4));
  a.max_running_tasks = static_cast<uint32_t>(q.Int(r, 5));
  a.max_stored_bytes = static_cast<uint64_t>(q.Int(r, 6));
  return a;
}

// The role is the account's, joined: a token never outranks its account.
constexpr char kTokenColumns[] =
    "SELECT t.id, t.hash, t.account, a.role, t.name, t.scopes, t.created_ms, t.expires_ms, t.revoked_ms "
    "FROM api_tokens t JOIN accounts a ON a.name = t.account ";

TokenRecord ReadToken(const Rows& q, int r) {
  TokenRecord t;
  t.id = q.Text(r, 0);
  t.hash = q.Text(r, 1);
  t.account = q.Text(r, 2);
  t.role = q.Text(r, 3);
  t.name = q.Text(r, 4);
  t.scopes = static_cast<uint32_t>(q.Int(r, 5));
  t.created_ms = q.Int(r, 6);
  t.expires_ms = q.Int(r, 7);
  t.revoked_ms = q.Int(r, 8);
  return t;
}

}  // namespace

Status PgAccounts::CreateAccount(const AccountRecord& a) {
  return Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("INSERT INTO accounts(name, role, created_ms, weight, max_queued_tasks, "
                                       "max_running_tasks, max_stored_bytes) VALUES($1, $2, $3, $4, $5, $6, $7) "
                                       "ON CONFLICT(name) DO NOTHING RETURNING name",
                                       Params()
                                           .Text(a.name)
                                           .Text(a.role)
                                           .Int(a.created_ms)
                                           .Double(a.weight)
                                           .Int(a.max_queued_tasks)
                                           .Int(a.max_running_tasks)
                                           .Int(static_cast<int64_t>(a.max_stored_bytes))));
    if (q.empty()) return Status::AlreadyExists("account " + a.name + " already exists");
    return Status::Ok();
  });
}

Result<std::vector<AccountRecord>> PgAccounts::ListAccounts() {
  std::vector<AccountRecord> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec((std::string(kAccountColumns) + "ORDER BY name").c_str()));
    for (int r = 0; r < q.size(); ++r) out.push_back(ReadAccount(q, r));
    return Status::Ok();
  }));
  return out;
}

Result<std::optional<AccountRecord>> PgAccounts::GetAccount(const std::string& name) {
  std::optional<AccountRecord> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows q,
                        c.Exec((std::string(kAccountColumns) + "WHERE name = $1").c_str(), Params().Text(name)));
    if (!q.empty()) out = ReadAccount(q, 0);
    return Status::Ok();
  }));
  return out;
}

Result<AccountUsage> PgAccounts::UsageOf(const std::string& account) {
  AccountUsage u;
  IG_RETURN_IF_ERROR(Tx(Isolation::kReadOnlySnapshot, [&](Connection& c) -> Status {
    u = AccountUsage{};
    IG_ASSIGN_OR_RETURN(Rows t, c.Exec("SELECT t.state, COUNT(*) FROM tasks t JOIN jobs j ON j.id = t.job_id "
                                       "WHERE j.account = $1 AND t.state IN ($2, $3, $4) GROUP BY t.state",
                                       Params().Text(account).Int(v1::QUEUED).Int(v1::ASSIGNED).Int(v1::RUNNING)));
    for (int r = 0; r < t.size(); ++r) {
      auto n = static_cast<uint32_t>(t.Int(r, 1));
      (t.Int(r, 0) == v1::QUEUED ? u.queued_tasks : u.running_tasks) += n;
    }
    IG_ASSIGN_OR_RETURN(Rows b, c.Exec("SELECT (COALESCE((SELECT SUM(a.size) FROM artifacts a WHERE a.digest IN "
                                       "(SELECT digest FROM artifact_refs WHERE account = $1)), 0) + "
                                       "COALESCE((SELECT SUM(l.head_bytes + l.tail_bytes) FROM log_usage l "
                                       "JOIN jobs j ON j.id = l.job_id WHERE j.account = $1), 0))::bigint",
                                       Params().Text(account)));
    u.stored_bytes = static_cast<uint64_t>(b.Int(0, 0));
    return Status::Ok();
  }));
  return u;
}

Status PgAccounts::AddApiToken(const TokenRecord& t) {
  return Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("INSERT INTO api_tokens(hash, role, created_ms, id, account, scopes, "
                                       "expires_ms, revoked_ms, name) "
                                       "SELECT $1, role, $2, $3, name, $4, $5, 0, $6 FROM accounts WHERE name = $7 "
                                       "RETURNING id",
                                       Params()
                                           .Text(t.hash)
                                           .Int(t.created_ms)
                                           .Text(t.id)
                                           .Int(t.scopes)
                                           .Int(t.expires_ms)
                                           .Text(t.name)
                                           .Text(t.account)));
    if (q.empty()) return Status::NotFound("account " + t.account + " does not exist");
    return Status::Ok();
  });
}

Result<std::optional<TokenRecord>> PgAccounts::TokenByHash(const std::string& token_hash) {
  std::optional<TokenRecord> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows q,
                        c.Exec((std::string(kTokenColumns) + "WHERE t.hash = $1").c_str(), Params().Text(token_hash)));
    if (!q.empty()) out = ReadToken(q, 0);
    return Status::Ok();
  }));
  return out;
}

Result<std::vector<TokenRecord>> PgAccounts::ListTokens(const std::string& account) {
  std::vector<TokenRecord> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(
        Rows q,
        c.Exec((std::string(kTokenColumns) + "WHERE $1 = '' OR t.account = $1 ORDER BY t.created_ms, t.id").c_str(),
               Params().Text(account)));
    for (int r = 0; r < q.size(); ++r) out.push_back(ReadToken(q, r));
    return Status::Ok();
  }));
  return out;
}

Result<TokenRecord> PgAccounts::RevokeToken(const std::string& id, int64_t now_ms) {
  std::optional<TokenRecord> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kReadCommitted, [&](Connection& c) -> Status {
    IG_RETURN_IF_ERROR(
        c.Exec("UPDATE api_tokens SET revoked_ms = $1 WHERE id = $2 AND revoked_ms = 0", Params().Int(now_ms).Text(id))
            .status());
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec((std::string(kTokenColumns) + "WHERE t.id = $1").c_str(), Params().Text(id)));
    if (!q.empty()) out = ReadToken(q, 0);
    return Status::Ok();
  }));
  if (!out) return Status::NotFound("no token with id " + id);
  return *out;
}

Status PgAccounts::AddJoinToken(const JoinTokenRecord& t) {
  return Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("INSERT INTO join_tokens(hash, provider, created_ms, expires_ms) "
                                       "SELECT $1, name, $2, $3 FROM accounts WHERE name = $4 RETURNING hash",
                                       Params().Text(t.hash).Int(t.created_ms).Int(t.expires_ms).Text(t.provider)));
    if (q.empty()) return Status::NotFound("account " + t.provider + " does not exist");
    return Status::Ok();
  });
}

Result<std::optional<JoinTokenRecord>> PgAccounts::JoinTokenByHash(const std::string& token_hash) {
  std::optional<JoinTokenRecord> out;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("SELECT hash, provider, created_ms, expires_ms FROM join_tokens WHERE hash = $1",
                                       Params().Text(token_hash)));
    if (!q.empty()) out = JoinTokenRecord{q.Text(0, 0), q.Text(0, 1), q.Int(0, 2), q.Int(0, 3)};
    return Status::Ok();
  }));
  return out;
}

}  // namespace idlegrid::store

namespace idlegrid::store {

Result<std::optional<std::string>> PgJobs::JobAccount(const std::string& job_id) {
  std::optional<std::string> out;
  IG_RETURN_IF_ERROR(Tx(pg::Isolation::kAutocommit, [&](pg::Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(pg::Rows q, c.Exec("SELECT account FROM jobs WHERE id = $1", pg::Params().Text(job_id)));
    if (!q.empty()) out = q.Text(0, 0);
    return Status::Ok();
  }));
  return out;
}

Status PgArtifacts::AddArtifactRefs(const std::vector<ArtifactRef>& refs) {
  if (refs.empty()) return Status::Ok();
  std::vector<std::string> digests, holders, accounts, expiries;
  for (const ArtifactRef& r : refs) {
    digests.push_back(r.digest);
    holders.push_back(r.holder);
    accounts.push_back(r.account);
    expiries.push_back(std::to_string(r.expires_ms));
  }
  return Tx(pg::Isolation::kAutocommit, [&](pg::Connection& c) -> Status {
    return c
        .Exec(
            "INSERT INTO artifact_refs(digest, holder, account, expires_ms) "
            "SELECT DISTINCT ON (d, h) d, h, a, e FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) "
            "AS r(d, h, a, e) ORDER BY d, h, e "
            "ON CONFLICT(digest, holder) DO UPDATE SET expires_ms = CASE WHEN artifact_refs.expires_ms = 0 OR "
            "excluded.expires_ms = 0 THEN 0 ELSE GREATEST(artifact_refs.expires_ms, excluded.expires_ms) END",
            pg::Params().TextArray(digests).TextArray(holders).TextArray(accounts).TextArray(expiries))
        .status();
  });
}

Status PgArtifacts::SetArtifactPublic(const std::string& digest) {
  return Tx(pg::Isolation::kAutocommit, [&](pg::Connection& c) -> Status {
    return c.Exec("UPDATE artifacts SET public = TRUE WHERE digest = $1", pg::Params().Text(digest)).status();
  });
}

Result<ArtifactAccess> PgArtifacts::ArtifactAccessOf(const std::string& digest) {
  ArtifactAccess out;
  IG_RETURN_IF_ERROR(Tx(pg::Isolation::kReadOnlySnapshot, [&](pg::Connection& c) -> Status {
    out = ArtifactAccess{};
    IG_ASSIGN_OR_RETURN(pg::Rows a,
                        c.Exec("SELECT public FROM artifacts WHERE digest = $1", pg::Params().Text(digest)));
    if (a.empty()) return Status::Ok();
    out.exists = true;
    out.is_public = a.Int(0, 0) != 0;
    IG_ASSIGN_OR_RETURN(
        pg::Rows r, c.Exec("SELECT DISTINCT account FROM artifact_refs WHERE digest = $1", pg::Params().Text(digest)));
    for (int i = 0; i < r.size(); ++i) out.accounts.insert(r.Text(i, 0));
    return Status::Ok();
  }));
  return out;
}

}  // namespace idlegrid::store
