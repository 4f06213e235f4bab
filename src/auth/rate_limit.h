#pragma once
// Rate limits for the request APIs (issue 11): a token bucket per key (a
// token's hash, or a peer address for failed authentications), so a flood of
// calls or of bad tokens is refused cheaply and the coordinator keeps serving
// everyone else. Pure: time comes in as now_ms, randomness as a seed; no clock
// reads, no I/O. Thread-safe.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "auth/bucket_table.h"
#include "common/mutex.h"
#include "common/status.h"

namespace idlegrid::auth {

// How fast one key may go: a bucket of `burst` requests that refills at
// `per_second` requests a second; a key seen for the first time has a full
// bucket. per_second 0 turns the limit off (every request is allowed and
// nothing is tracked).
struct RateLimit {
  uint32_t per_second = 0;
  uint32_t burst = 0;
};
// The largest rate and burst accepted (well inside the integer arithmetic).
inline constexpr uint32_t kMaxRatePerSecond = 1'000'000;
inline constexpr uint32_t kMaxBurst = 1'000'000;

// Ok, or InvalidArgument naming `what` ("--rate-limit-token"): a limit that is
// on needs 1 <= burst <= kMaxBurst and per_second <= kMaxRatePerSecond.
Status ValidateRateLimit(const RateLimit& limit, std::string_view what);

// The answer to one request.
struct RateDecision {
  bool allowed = true;
  // When refused: milliseconds until a request for this key could be allowed
  // (at least 1).
  int64_t retry_after_ms = 0;
  // Refused because the table of keys is full of active ones (see
  // RateLimiter), not because this key spent its own bucket.
  bool table_full = false;
};

struct RateLimiterOptions {
  // The most keys tracked at once, enforced per shard (max_keys / kShards each).
  size_t max_keys = 100'000;
  // Keys the table under a keyed hash (SipHash-2-4). The coordinator passes a
  // random one, so that callers cannot choose keys that pile into one shard
  // or one run of slots; tests pass a fixed one.
  uint64_t hash_seed = 0;
};

// Token buckets keyed by a string. Memory is bounded: at most max_keys buckets
// are kept; a bucket that has refilled completely carries no information (a
// new key starts full) and is dropped when room is needed. When every tracked
// bucket is still refilling, a new key is refused (table_full) rather than
// another key's bucket dropped: dropping one would hand its owner a fresh
// burst, so a flood of distinct keys could reset the limit of the very caller
// it is meant to hold back. Keys already tracked keep being served.
//
// Thread-safe: each call takes one shard's mutex once, briefly (a new key
// arriving at a full shard may scan it first, at most every 100 ms: ~0.1 ms);
// a key already tracked allocates nothing. Buckets are stored under a 64-bit
// keyed hash of the key, not the key itself (two keys share a bucket only on
// a hash collision, about n^2 / 2^65 for n keys: 3e-10 at 100k).
class RateLimiter {
 public:
  static constexpr size_t kShards = 16;

  explicit RateLimiter(RateLimit limit, RateLimiterOptions options = {});
  RateLimiter(const RateLimiter&) = delete;
  RateLimiter& operator=(const RateLimiter&) = delete;

  // Takes one request from `key`'s bucket at now_ms, or says how long to wait.
  // now_ms earlier than a previous call's for the same key (threads racing
  // with a clock read) counts as no time passed.
  RateDecision Allow(std::string_view key, int64_t now_ms);
  // What Allow would answer, taking nothing and tracking no new key: for gates
  // that charge only failures (failed authentications per peer).
  RateDecision Peek(std::string_view key, int64_t now_ms);
  // Allow, as the front doors return it: RefusalStatus below.
  Status Check(std::string_view key, int64_t now_ms, std::string_view per_what);

  // How many keys are tracked now (for tests and metrics; locks every shard).
  size_t TrackedKeys() const;
  const RateLimit& limit() const { return limit_; }
  // The cap actually enforced (max_keys rounded up to a multiple of kShards).
  size_t max_keys() const { return max_keys_per_shard_ * kShards; }

 private:
  struct alignas(64) Shard {
    mutable Mutex mu;
    BucketTable buckets IG_GUARDED_BY(mu);
    // No tracked bucket is full before this (a lower bound), and no sweep for
    // full buckets runs before it: a shard full of active keys answers new
    // keys without scanning.
    int64_t next_sweep_ms IG_GUARDED_BY(mu) = INT64_MIN;
  };

  RateDecision Take(std::string_view key, int64_t now_ms, bool consume);
  uint64_t KeyHash(std::string_view key) const;
  void Refill(TokenBucket& bucket, int64_t now_ms) const;
  int64_t FullAtMs(const TokenBucket& bucket) const;
  int64_t RetryAfterMs(const TokenBucket& bucket, int64_t now_ms) const;
  // Drops the shard's full buckets, unless next_sweep_ms says none can be.
  void SweepIfDue(Shard& shard, int64_t now_ms) const IG_REQUIRES(shard.mu);

  // Constant after construction.
  const RateLimit limit_;
  const int64_t capacity_milli_;
  const size_t max_keys_per_shard_;
  const std::array<unsigned char, 16> hash_key_;  // SipHash-2-4's key size

  std::array<Shard, kShards> shards_;
};

// What a decision becomes at the front door: Ok if allowed, else
// ResourceExhausted "rate limit: 50 requests/s per token; retry in 120 ms"
// (`per_what` = "requests/s per token"), or, for a full table, "rate limit:
// too many callers at once (100000 tracked); retry in 40 ms". A front door that
// also sets a Retry-After header reads decision.retry_after_ms.
Status RefusalStatus(const RateLimiter& limiter, const RateDecision& decision, std::string_view per_what);

// The front doors' limits, from the coordinator's flags.
struct RateLimitConfig {
  // Every call, keyed by the caller's token hash.
  RateLimit per_token{200, 400};
  // Failed authentications, keyed by the peer's address (without the port:
  // each connection has a new one).
  RateLimit failed_auth_per_peer{5, 20};
  RateLimiterOptions options;
};

// Ok, or InvalidArgument naming the limit that is wrong.
Status ValidateRateLimitConfig(const RateLimitConfig& config);

// Both limits, as the gRPC and HTTP front doors ask them. Thread-safe.
//   before authenticating:  CheckPeer(peer)        -> refuse cheaply if it failed too often
//   on a bad token:         RecordFailedAuth(peer) -> then answer Unauthenticated as usual
//   once authenticated:     CheckToken(token_hash)
class RequestRateLimits {
 public:
  explicit RequestRateLimits(const RateLimitConfig& config);

  // Ok, or ResourceExhausted "rate limit: 50 requests/s per token; retry in
  // 120 ms". Takes one request from the token's bucket.
  Status CheckToken(std::string_view token_hash, int64_t now_ms);
  // Ok, or ResourceExhausted when `peer` has used up its failed
  // authentications; takes nothing, so a peer that authenticates is never
  // slowed by this. ResourceExhausted, not Unauthenticated: the token this
  // call carries was never looked at, and may be good (another client behind
  // the same address).
  Status CheckPeer(std::string_view peer, int64_t now_ms);
  // Charges one failed authentication to `peer`.
  void RecordFailedAuth(std::string_view peer, int64_t now_ms);

  RateLimiter& per_token() { return per_token_; }
  RateLimiter& failed_auth_per_peer() { return failed_auth_per_peer_; }

 private:
  RateLimiter per_token_;
  RateLimiter failed_auth_per_peer_;
};

}  // namespace idlegrid::auth
