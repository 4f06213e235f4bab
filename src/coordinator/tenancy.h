#pragma once
// Accounts and credentials (issue 11): turns a bearer token into an
// auth::Caller, mints and revokes API tokens and per-provider join tokens,
// and answers quota questions. The rules are auth/credentials.h's; this
// piece reads and writes the store. Thread-safe (no state of its own).
#include <string>

#include "auth/authz.h"
#include "auth/credentials.h"
#include "common/clock.h"
#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "store/store.h"

namespace idlegrid::coordinator {

class Tenancy {
 public:
  Tenancy(store::Store* store, Clock* clock, auth::Quota default_quota)
      : store_(store), clock_(clock), default_quota_(default_quota) {}

  // "Bearer <token>" -> who is calling. Unauthenticated for a missing,
  // unknown, expired or revoked token.
  Result<auth::Caller> Authenticate(const std::string& bearer);

  // Operators only (the gate checked): a new account.
  Result<v1::Account> CreateAccount(const v1::Account& account);
  // Every account for an operator, else the caller's own; with usage.
  Result<v1::ListAccountsResponse> ListAccounts(const auth::Caller& caller);
  // A token for `request.account` ("" = the caller's), with at most the
  // caller's own scopes and the account's role's. The secret is returned once.
  Result<v1::CreateTokenResponse> CreateToken(const auth::Caller& caller, const v1::CreateTokenRequest& request);
  // An operator's first credential (printed at first start).
  Result<std::string> CreateOperatorToken(const std::string& name);
  Result<v1::ListTokensResponse> ListTokens(const std::string& account);
  Result<v1::TokenInfo> RevokeToken(const std::string& token_id);
  // The account a token id belongs to (NotFound if none): whose it is to revoke.
  Result<std::string> AccountOfToken(const std::string& token_id);
  Result<v1::CreateJoinTokenResponse> CreateJoinToken(const auth::Caller& caller,
                                                      const v1::CreateJoinTokenRequest& request);
  // The provider account a join secret enrolls nodes under; PermissionDenied
  // for an unknown or expired one.
  Result<std::string> ProviderOfJoinToken(const std::string& secret);

  // ResourceExhausted (with the numbers) when queuing `new_tasks` more would
  // pass the account's queued-task quota.
  Status CheckSubmitQuota(const std::string& account, uint32_t new_tasks);
  Status CheckStoreQuota(const std::string& account, uint64_t new_bytes);
  // The account's running-task limit (0: none).
  Result<uint32_t> RunningLimit(const std::string& account);

 private:
  Result<auth::Quota> QuotaOf(const std::string& account);

  store::Store* store_;
  Clock* clock_;
  auth::Quota default_quota_;
};

}  // namespace idlegrid::coordinator
