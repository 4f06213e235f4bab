#include "coordinator/tenancy.h"

#include <spdlog/spdlog.h>

#include "common/digest.h"
#include "common/random.h"

namespace idlegrid::coordinator {

namespace {

std::string BearerOf(const std::string& header) {
  constexpr std::string_view kPrefix = "Bearer ";
  if (header.compare(0, kPrefix.size(), kPrefix) == 0) return header.substr(kPrefix.size());
  return "";
}

v1::TokenInfo InfoOf(const store::TokenRecord& t) {
  v1::TokenInfo info;
  info.set_id(t.id);
  info.set_account(t.account);
  for (const std::string& s : auth::ScopeNames(t.scopes)) info.add_scopes(s);
  info.set_created_at_ms(t.created_ms);
  info.set_expires_at_ms(t.expires_ms);
  info.set_revoked(t.revoked_ms != 0);
  info.set_name(t.name);
  return info;
}

auth::Quota QuotaOfRecord(const store::AccountRecord& a) {
  return {a.max_queued_tasks, a.max_running_tasks, a.max_stored_bytes};
}

auth::Usage UsageOfRecord(const store::AccountUsage& u) { return {u.queued_tasks, u.running_tasks, u.stored_bytes}; }

}  // namespace

Result<auth::Caller> Tenancy::Authenticate(const std::string& bearer) {
  std::string token = BearerOf(bearer);
  if (token.empty()) return Status::Unauthenticated("missing API token (Authorization: Bearer <token>)");
  const std::string hash = Sha256Digest(token);
  IG_ASSIGN_OR_RETURN(auto row, store_->TokenByHash(hash));
  // The lookup is by hash (an index cannot be timed into revealing a token);
  // the final comparison is constant-time all the same.
  if (!row || !auth::SameHash(row->hash, hash)) return Status::Unauthenticated("unknown API token");
  IG_RETURN_IF_ERROR(auth::CheckTokenUsable({row->expires_ms, row->revoked_ms}, clock_->NowMs()));
  IG_ASSIGN_OR_RETURN(auth::Role role, auth::ParseRole(row->role));
  auth::Caller caller;
  caller.role = role;
  // A token never holds more than its account's role allows, whatever was stored.
  caller.scopes = row->scopes & auth::ScopesOfRole(role);
  caller.account = row->account;
  caller.token_id = row->id;
  return caller;
}

Result<v1::Account> Tenancy::CreateAccount(const v1::Account& account) {
  if (account.name().empty() || account.name().size() > 64 ||
      account.name().find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_.") != std::string::npos) {
    return Status::InvalidArgument("account name must be 1-64 characters of a-z, 0-9, '-', '_' or '.'");
  }
  IG_RETURN_IF_ERROR(auth::ParseRole(account.role()).status());
  if (account.weight() < 0) return Status::InvalidArgument("weight must not be negative");
  store::AccountRecord rec;
  rec.name = account.name();
  rec.role = account.role();
  rec.created_ms = clock_->NowMs();
  rec.weight = account.weight() == 0 ? 1 : account.weight();
  rec.max_queued_tasks = account.quota().max_queued_tasks();
  rec.max_running_tasks = account.quota().max_running_tasks();
  rec.max_stored_bytes = account.quota().max_stored_bytes();
  IG_RETURN_IF_ERROR(store_->CreateAccount(rec));
  spdlog::info("account {} created (role {})", rec.name, rec.role);
  v1::Account out = account;
  out.set_created_at_ms(rec.created_ms);
  out.set_weight(rec.weight);
  return out;
}

Result<v1::ListAccountsResponse> Tenancy::ListAccounts(const auth::Caller& caller) {
  IG_ASSIGN_OR_RETURN(auto rows, store_->ListAccounts());
  v1::ListAccountsResponse out;
  for (const store::AccountRecord& a : rows) {
    if (caller.role != auth::Role::kOperator && a.name != caller.account) continue;
    IG_ASSIGN_OR_RETURN(store::AccountUsage use, store_->UsageOf(a.name));
    v1::Account* acc = out.add_accounts();
    acc->set_name(a.name);
    acc->set_role(a.role);
    acc->set_created_at_ms(a.created_ms);
    acc->set_weight(a.weight);
    acc->mutable_quota()->set_max_queued_tasks(a.max_queued_tasks);
    acc->mutable_quota()->set_max_running_tasks(a.max_running_tasks);
    acc->mutable_quota()->set_max_stored_bytes(a.max_stored_bytes);
    acc->set_queued_tasks(use.queued_tasks);
    acc->set_running_tasks(use.running_tasks);
    acc->set_stored_bytes(use.stored_bytes);
  }
  return out;
}

Result<v1::CreateTokenResponse> Tenancy::CreateToken(const auth::Caller& caller,
                                                     const v1::CreateTokenRequest& request) {
  const std::string account = request.account().empty() ? caller.account : request.account();
  IG_ASSIGN_OR_RETURN(auto acc, store_->GetAccount(account));
  if (!acc) return Status::NotFound("no such account: " + account);
  IG_ASSIGN_OR_RETURN(auth::Role role, auth::ParseRole(acc->role));
  IG_ASSIGN_OR_RETURN(uint32_t asked, auth::ParseScopes({request.scopes().begin(), request.scopes().end()}));
  const uint32_t allowed = auth::ScopesOfRole(role) & (caller.role == auth::Role::kOperator ? ~0u : caller.scopes);
  if (asked == auth::kNoScope) asked = allowed;
  if ((asked & ~allowed) != 0) {
    std::string extra;
    for (const std::string& s : auth::ScopeNames(asked & ~allowed)) extra += (extra.empty() ? "" : ",") + s;
    return Status::PermissionDenied("a token for " + account + " cannot have scope " + extra + " (role " + acc->role +
                                    (caller.role == auth::Role::kOperator ? "" : ", or your own token lacks it") + ")");
  }
  const std::string secret = "igt_" + RandomHex(24);
  store::TokenRecord rec;
  rec.hash = Sha256Digest(secret);
  rec.id = auth::TokenIdOf(rec.hash);
  rec.account = account;
  rec.name = request.name();
  rec.scopes = asked;
  rec.created_ms = clock_->NowMs();
  rec.expires_ms = auth::ExpiryOf(rec.created_ms, request.expires_seconds());
  IG_RETURN_IF_ERROR(store_->AddApiToken(rec));
  spdlog::info("token {} created for account {} by {}", rec.id, account, caller.account);
  v1::CreateTokenResponse out;
  out.set_token(secret);
  *out.mutable_info() = InfoOf(rec);
  return out;
}

Result<std::string> Tenancy::CreateOperatorToken(const std::string& name) {
  auth::Caller op;
  op.role = auth::Role::kOperator;
  op.account = store::kOperatorAccount;
  v1::CreateTokenRequest req;
  req.set_name(name);
  IG_ASSIGN_OR_RETURN(v1::CreateTokenResponse made, CreateToken(op, req));
  return made.token();
}

Result<v1::ListTokensResponse> Tenancy::ListTokens(const std::string& account) {
  IG_ASSIGN_OR_RETURN(auto rows, store_->ListTokens(account));
  v1::ListTokensResponse out;
  for (const store::TokenRecord& t : rows) *out.add_tokens() = InfoOf(t);
  return out;
}

Result<v1::TokenInfo> Tenancy::RevokeToken(const std::string& token_id) {
  IG_ASSIGN_OR_RETURN(store::TokenRecord t, store_->RevokeToken(token_id, clock_->NowMs()));
  spdlog::info("token {} of account {} revoked", t.id, t.account);
  return InfoOf(t);
}

Result<std::string> Tenancy::AccountOfToken(const std::string& token_id) {
  IG_ASSIGN_OR_RETURN(auto rows, store_->ListTokens(""));
  for (const store::TokenRecord& t : rows) {
    if (t.id == token_id) return t.account;
  }
  return Status::NotFound("no such token id: " + token_id);
}

Result<v1::CreateJoinTokenResponse> Tenancy::CreateJoinToken(const auth::Caller& caller,
                                                             const v1::CreateJoinTokenRequest& request) {
  const std::string provider = request.provider().empty() ? caller.account : request.provider();
  IG_ASSIGN_OR_RETURN(auto acc, store_->GetAccount(provider));
  if (!acc) return Status::NotFound("no such account: " + provider);
  if (acc->role != "provider" && acc->role != "operator") {
    return Status::InvalidArgument("account " + provider + " is a " + acc->role +
                                   "; join tokens enroll nodes for provider accounts");
  }
  const std::string secret = "igj_" + RandomHex(24);
  store::JoinTokenRecord rec{Sha256Digest(secret), provider, clock_->NowMs(), 0};
  rec.expires_ms = auth::ExpiryOf(rec.created_ms, request.expires_seconds());
  IG_RETURN_IF_ERROR(store_->AddJoinToken(rec));
  spdlog::info("join token for provider {} created by {}", provider, caller.account);
  v1::CreateJoinTokenResponse out;
  out.set_token(secret);
  out.set_provider(provider);
  out.set_expires_at_ms(rec.expires_ms);
  return out;
}

Result<std::string> Tenancy::ProviderOfJoinToken(const std::string& secret) {
  const std::string hash = Sha256Digest(secret);
  IG_ASSIGN_OR_RETURN(auto row, store_->JoinTokenByHash(hash));
  if (!row || !auth::SameHash(row->hash, hash)) {
    return Status::PermissionDenied("join token is not valid for this coordinator");
  }
  if (row->expires_ms != 0 && clock_->NowMs() >= row->expires_ms) {
    return Status::PermissionDenied("join token expired; ask the operator for a new one (idlegrid join-token create)");
  }
  return row->provider;
}

Result<auth::Quota> Tenancy::QuotaOf(const std::string& account) {
  IG_ASSIGN_OR_RETURN(auto acc, store_->GetAccount(account));
  if (!acc) return Status::NotFound("no such account: " + account);
  return auth::EffectiveQuota(QuotaOfRecord(*acc), default_quota_);
}

Status Tenancy::CheckSubmitQuota(const std::string& account, uint32_t new_tasks) {
  IG_ASSIGN_OR_RETURN(auth::Quota quota, QuotaOf(account));
  if (quota.max_queued_tasks == 0) return Status::Ok();
  IG_ASSIGN_OR_RETURN(store::AccountUsage use, store_->UsageOf(account));
  return auth::CheckSubmitQuota(account, quota, UsageOfRecord(use), new_tasks);
}

Status Tenancy::CheckStoreQuota(const std::string& account, uint64_t new_bytes) {
  IG_ASSIGN_OR_RETURN(auth::Quota quota, QuotaOf(account));
  if (quota.max_stored_bytes == 0) return Status::Ok();
  IG_ASSIGN_OR_RETURN(store::AccountUsage use, store_->UsageOf(account));
  return auth::CheckStoreQuota(account, quota, UsageOfRecord(use), new_bytes);
}

Result<uint32_t> Tenancy::RunningLimit(const std::string& account) {
  IG_ASSIGN_OR_RETURN(auth::Quota quota, QuotaOf(account));
  return quota.max_running_tasks;
}

}  // namespace idlegrid::coordinator
