#pragma once
// Pure rules about credentials and account limits (issue 11): scope names,
// which scopes a role may hold, whether a stored token is usable now, token
// ids, expiry arithmetic and quotas. No I/O: the coordinator reads the rows and
// asks these.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "auth/authz.h"
#include "common/status.h"

namespace idlegrid::auth {

// "operator" | "requester" | "provider" (agents are not accounts).
Result<Role> ParseRole(std::string_view name);
std::string_view RoleName(Role role);

// "submit,read" or {"submit", "read"} -> bits; InvalidArgument naming the bad one.
Result<uint32_t> ParseScopes(const std::vector<std::string>& names);
std::vector<std::string> ScopeNames(uint32_t scopes);
// Every scope a role can use: what a token gets when it names none, and the
// most it may hold.
uint32_t ScopesOfRole(Role role);

// Stored facts about a token, as the store returns them.
struct TokenFacts {
  int64_t expires_ms = 0;  // 0: never
  int64_t revoked_ms = 0;  // 0: live
};
// Ok, or Unauthenticated saying the token expired or was revoked (the caller
// holds the token, so saying which leaks nothing).
Status CheckTokenUsable(const TokenFacts& token, int64_t now_ms);

// The non-secret id of a token, from its hash ("sha256:<hex>"): 16 hex digits.
std::string TokenIdOf(std::string_view token_hash);

// now + seconds (0 seconds: 0, never expires).
int64_t ExpiryOf(int64_t now_ms, uint32_t seconds);

// Constant-time equality of two hashes (time depends on length only).
bool SameHash(std::string_view a, std::string_view b);

// The artifact token of an attempt: an HMAC-SHA256 under the
// coordinator's key of (attempt, node, lease epoch). It lets that node read
// that attempt's artifacts and upload its outputs, and nothing else; it dies
// with the lease (the coordinator also checks the lease is live).
std::string AttemptToken(std::string_view key, std::string_view attempt_id, std::string_view node_id,
                         uint64_t lease_epoch);

// An account's limits (0 = none) and use.
struct Quota {
  uint32_t max_queued_tasks = 0;
  uint32_t max_running_tasks = 0;
  uint64_t max_stored_bytes = 0;
};
struct Usage {
  uint32_t queued_tasks = 0;
  uint32_t running_tasks = 0;
  uint64_t stored_bytes = 0;
};
// The account's own limit where it has one, else the coordinator's default.
Quota EffectiveQuota(const Quota& account, const Quota& defaults);
// May `account` queue `new_tasks` more tasks? ResourceExhausted with what the
// limit is, what is in use and what to do, otherwise Ok.
Status CheckSubmitQuota(const std::string& account, const Quota& quota, const Usage& usage, uint32_t new_tasks);
// May it store `new_bytes` more?
Status CheckStoreQuota(const std::string& account, const Quota& quota, const Usage& usage, uint64_t new_bytes);

}  // namespace idlegrid::auth
