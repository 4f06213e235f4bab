#include "auth/credentials.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/units.h"

namespace idlegrid::auth {

namespace {

struct ScopeName {
  uint32_t bit;
  std::string_view name;
};
constexpr ScopeName kScopes[] = {{kSubmit, "submit"}, {kRead, "read"}, {kCancel, "cancel"}, {kDrain, "drain"}};

// Exact bytes, and GiB for reading.
std::string Bytes(uint64_t n) { return std::to_string(n) + " bytes (" + FormatGiB(n) + ")"; }

}  // namespace

Result<Role> ParseRole(std::string_view name) {
  if (name == "operator") return Role::kOperator;
  if (name == "requester") return Role::kRequester;
  if (name == "provider") return Role::kProvider;
  return Status::InvalidArgument("role must be operator, requester or provider, not \"" + std::string(name) + "\"");
}

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kOperator:
      return "operator";
    case Role::kRequester:
      return "requester";
    case Role::kProvider:
      return "provider";
    case Role::kAgent:
      return "agent";
  }
  return "unknown";
}

Result<uint32_t> ParseScopes(const std::vector<std::string>& names) {
  uint32_t bits = kNoScope;
  for (const std::string& raw : names) {
    // Each entry may itself be a comma list ("submit,read").
    size_t start = 0;
    while (start <= raw.size()) {
      size_t comma = raw.find(',', start);
      std::string_view name =
          std::string_view(raw).substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      start = comma == std::string::npos ? raw.size() + 1 : comma + 1;
      if (name.empty()) continue;
      bool known = false;
      for (const ScopeName& s : kScopes) {
        if (s.name == name) {
          bits |= s.bit;
          known = true;
        }
      }
      if (!known) {
        return Status::InvalidArgument("unknown scope \"" + std::string(name) +
                                       "\" (scopes are submit, read, cancel, drain)");
      }
    }
  }
  return bits;
}

std::vector<std::string> ScopeNames(uint32_t scopes) {
  std::vector<std::string> out;
  for (const ScopeName& s : kScopes) {
    if (scopes & s.bit) out.emplace_back(s.name);
  }
  return out;
}

uint32_t ScopesOfRole(Role role) {
  switch (role) {
    case Role::kOperator:
      return kSubmit | kRead | kCancel | kDrain;
    case Role::kRequester:
      return kSubmit | kRead | kCancel;
    case Role::kProvider:
      return kRead | kDrain;
    case Role::kAgent:
      return kNoScope;
  }
  return kNoScope;
}

Status CheckTokenUsable(const TokenFacts& token, int64_t now_ms) {
  if (token.revoked_ms != 0) return Status::Unauthenticated("this API token was revoked");
  if (token.expires_ms != 0 && now_ms >= token.expires_ms) {
    return Status::Unauthenticated("this API token expired; ask for a new one (idlegrid token create)");
  }
  return Status::Ok();
}

std::string TokenIdOf(std::string_view token_hash) {
  constexpr std::string_view kPrefix = "sha256:";
  if (token_hash.substr(0, kPrefix.size()) == kPrefix) token_hash.remove_prefix(kPrefix.size());
  return std::string(token_hash.substr(0, 16));
}

int64_t ExpiryOf(int64_t now_ms, uint32_t seconds) { return seconds == 0 ? 0 : now_ms + int64_t{seconds} * 1000; }

bool SameHash(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string AttemptToken(std::string_view key, std::string_view attempt_id, std::string_view node_id,
                         uint64_t lease_epoch) {
  // Each field length-prefixed, so no two tuples encode alike whatever bytes
  // the ids hold.
  const std::string epoch = std::to_string(lease_epoch);
  std::string message;
  for (std::string_view field : {attempt_id, node_id, std::string_view(epoch)}) {
    message += std::to_string(field.size()) + ":" + std::string(field) + ";";
  }
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
       message.size(), mac, &len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "igat_";
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[mac[i] >> 4]);
    out.push_back(kHex[mac[i] & 15]);
  }
  return out;
}

Quota EffectiveQuota(const Quota& account, const Quota& defaults) {
  Quota q = account;
  if (q.max_queued_tasks == 0) q.max_queued_tasks = defaults.max_queued_tasks;
  if (q.max_running_tasks == 0) q.max_running_tasks = defaults.max_running_tasks;
  if (q.max_stored_bytes == 0) q.max_stored_bytes = defaults.max_stored_bytes;
  return q;
}

Status CheckSubmitQuota(const std::string& account, const Quota& quota, const Usage& usage, uint32_t new_tasks) {
  if (quota.max_queued_tasks == 0) return Status::Ok();
  if (uint64_t{usage.queued_tasks} + new_tasks <= quota.max_queued_tasks) return Status::Ok();
  return Status::ResourceExhausted(
      "over quota: account " + account + " may have " + std::to_string(quota.max_queued_tasks) + " queued tasks, has " +
      std::to_string(usage.queued_tasks) + " and this job adds " + std::to_string(new_tasks) +
      "; wait for some to start, cancel some, or ask the "
      "operator for a larger quota");
}

Status CheckStoreQuota(const std::string& account, const Quota& quota, const Usage& usage, uint64_t new_bytes) {
  if (quota.max_stored_bytes == 0) return Status::Ok();
  if (usage.stored_bytes + new_bytes <= quota.max_stored_bytes) return Status::Ok();
  return Status::ResourceExhausted("over quota: account " + account + " may store " + Bytes(quota.max_stored_bytes) +
                                   ", stores " + Bytes(usage.stored_bytes) + " and this adds " + Bytes(new_bytes) +
                                   "; delete finished jobs (idlegrid delete JOB) or ask the operator for more");
}

}  // namespace idlegrid::auth
