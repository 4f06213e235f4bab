#include "auth/rate_limit.h"

#include <sodium.h>

#include <algorithm>
#include <cstring>

namespace idlegrid::auth {
namespace {

constexpr int64_t kMilli = 1000;  // credit units per request

// A shard full of active keys is scanned for full buckets at most this often.
// Without a gap, a flood of new keys arriving as fast as old buckets refill
// could scan every shard every millisecond. A scan of one full shard (6,250
// buckets at the default cap) measured 73 us freeing none and 124 us freeing
// all (bench/rate_limit.cc, on a busy 2-core VM), so scans cost at most
// 16 x 124 us per 100 ms, about 2% of a core. New keys wait at most this much
// longer for room; keys already tracked are not affected.
constexpr int64_t kMinSweepGapMs = 100;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::array<unsigned char, crypto_shorthash_KEYBYTES> SipHashKey(uint64_t seed) {
  std::array<unsigned char, crypto_shorthash_KEYBYTES> key{};
  static_assert(sizeof(seed) <= key.size());
  std::memcpy(key.data(), &seed, sizeof(seed));
  return key;
}

constexpr std::string_view kPerToken = "requests/s per token";
constexpr std::string_view kPerPeer = "failed authentications/s per address";

}  // namespace

Status ValidateRateLimit(const RateLimit& limit, std::string_view what) {
  if (limit.per_second == 0) return Status::Ok();
  if (limit.per_second > kMaxRatePerSecond) {
    return Status::InvalidArgument(std::string(what) + ": " + std::to_string(limit.per_second) +
                                   " requests/s is more than the most allowed, " + std::to_string(kMaxRatePerSecond) +
                                   " (0 turns the limit off)");
  }
  if (limit.burst < 1 || limit.burst > kMaxBurst) {
    return Status::InvalidArgument(std::string(what) + ": burst must be 1 to " + std::to_string(kMaxBurst) + ", not " +
                                   std::to_string(limit.burst));
  }
  return Status::Ok();
}

RateLimiter::RateLimiter(RateLimit limit, RateLimiterOptions options)
    // Clamped as well as validated: out-of-range values must not overflow the
    // arithmetic below even where a caller skipped ValidateRateLimit.
    : limit_{std::min(limit.per_second, kMaxRatePerSecond), std::clamp(limit.burst, 1u, kMaxBurst)},
      capacity_milli_(int64_t{limit_.burst} * kMilli),
      max_keys_per_shard_(std::max<size_t>(1, CeilDiv(options.max_keys, kShards))),
      hash_key_(SipHashKey(options.hash_seed)) {
  for (Shard& shard : shards_) {
    MutexLock lock(&shard.mu);
    shard.buckets = BucketTable(max_keys_per_shard_);
  }
}

uint64_t RateLimiter::KeyHash(std::string_view key) const {
  static_assert(crypto_shorthash_BYTES == sizeof(uint64_t));
  uint64_t out = 0;
  crypto_shorthash(reinterpret_cast<unsigned char*>(&out), reinterpret_cast<const unsigned char*>(key.data()),
                   key.size(), hash_key_.data());
  return out == 0 ? 1 : out;  // 0 marks an empty slot in BucketTable
}

void RateLimiter::Refill(TokenBucket& bucket, int64_t now_ms) const {
  if (now_ms <= bucket.updated_ms) return;
  // Capped before multiplying: a key idle for years must not overflow.
  const int64_t elapsed = std::min(now_ms - bucket.updated_ms, capacity_milli_);
  bucket.credit_milli = std::min(capacity_milli_, bucket.credit_milli + elapsed * limit_.per_second);
  bucket.updated_ms = now_ms;
}

int64_t RateLimiter::FullAtMs(const TokenBucket& bucket) const {
  return bucket.updated_ms + CeilDiv(capacity_milli_ - bucket.credit_milli, limit_.per_second);
}

int64_t RateLimiter::RetryAfterMs(const TokenBucket& bucket, int64_t now_ms) const {
  const int64_t wait =
      std::max<int64_t>(bucket.updated_ms - now_ms, 0) + CeilDiv(kMilli - bucket.credit_milli, limit_.per_second);
  return std::max<int64_t>(wait, 1);
}

void RateLimiter::SweepIfDue(Shard& shard, int64_t now_ms) const {
  if (now_ms < shard.next_sweep_ms) return;
  int64_t earliest_full = INT64_MAX;
  shard.buckets.EraseIf([&](const TokenBucket& bucket) {
    const int64_t full_at = FullAtMs(bucket);
    if (full_at <= now_ms) return true;
    earliest_full = std::min(earliest_full, full_at);
    return false;
  });
  shard.next_sweep_ms = std::max(earliest_full, now_ms + kMinSweepGapMs);
}

RateDecision RateLimiter::Take(std::string_view key, int64_t now_ms, bool consume) {
  if (limit_.per_second == 0) return {};
  const uint64_t hash = KeyHash(key);
  // The top bits pick the shard, the low bits the slot in its table.
  Shard& shard = shards_[hash >> 60];
  static_assert(kShards == 16, "the shard index takes the hash's top 4 bits");
  MutexLock lock(&shard.mu);
  TokenBucket* bucket = shard.buckets.Find(hash);
  if (bucket == nullptr) {
    if (!consume) return {};  // an untracked key has a full bucket
    if (shard.buckets.size() >= shard.buckets.max_entries()) SweepIfDue(shard, now_ms);
    if (!shard.buckets.Insert(hash, {.credit_milli = capacity_milli_ - kMilli, .updated_ms = now_ms})) {
      return {
          .allowed = false, .retry_after_ms = std::max<int64_t>(shard.next_sweep_ms - now_ms, 1), .table_full = true};
    }
    return {};
  }
  Refill(*bucket, now_ms);
  if (bucket->credit_milli < kMilli) return {.allowed = false, .retry_after_ms = RetryAfterMs(*bucket, now_ms)};
  if (consume) bucket->credit_milli -= kMilli;
  return {};
}

RateDecision RateLimiter::Allow(std::string_view key, int64_t now_ms) { return Take(key, now_ms, true); }

RateDecision RateLimiter::Peek(std::string_view key, int64_t now_ms) { return Take(key, now_ms, false); }

Status RateLimiter::Check(std::string_view key, int64_t now_ms, std::string_view per_what) {
  return RefusalStatus(*this, Allow(key, now_ms), per_what);
}

size_t RateLimiter::TrackedKeys() const {
  size_t total = 0;
  for (const Shard& shard : shards_) {
    MutexLock lock(&shard.mu);
    total += shard.buckets.size();
  }
  return total;
}

Status RefusalStatus(const RateLimiter& limiter, const RateDecision& d, std::string_view per_what) {
  if (d.allowed) return Status::Ok();
  const std::string retry = "retry in " + std::to_string(d.retry_after_ms) + " ms";
  if (d.table_full) {
    return Status::ResourceExhausted("rate limit: too many callers at once (" + std::to_string(limiter.max_keys()) +
                                     " tracked); " + retry);
  }
  return Status::ResourceExhausted("rate limit: " + std::to_string(limiter.limit().per_second) + " " +
                                   std::string(per_what) + "; " + retry);
}

Status ValidateRateLimitConfig(const RateLimitConfig& config) {
  IG_RETURN_IF_ERROR(ValidateRateLimit(config.per_token, "per-token rate limit"));
  IG_RETURN_IF_ERROR(ValidateRateLimit(config.failed_auth_per_peer, "failed-authentication rate limit"));
  if (config.options.max_keys < 1) return Status::InvalidArgument("rate limit: max_keys must be at least 1");
  return Status::Ok();
}

RequestRateLimits::RequestRateLimits(const RateLimitConfig& config)
    : per_token_(config.per_token, config.options),
      failed_auth_per_peer_(config.failed_auth_per_peer, config.options) {}

Status RequestRateLimits::CheckToken(std::string_view token_hash, int64_t now_ms) {
  return per_token_.Check(token_hash, now_ms, kPerToken);
}

Status RequestRateLimits::CheckPeer(std::string_view peer, int64_t now_ms) {
  return RefusalStatus(failed_auth_per_peer_, failed_auth_per_peer_.Peek(peer, now_ms), kPerPeer);
}

void RequestRateLimits::RecordFailedAuth(std::string_view peer, int64_t now_ms) {
  // Refused here means either the peer is already out of attempts (CheckPeer
  // stops it next time) or the table is full of other failing peers; then this
  // one goes uncharged, which is the side to err on: charging it would mean
  // evicting a peer that is being held back.
  (void)failed_auth_per_peer_.Allow(peer, now_ms);
}

}  // namespace idlegrid::auth
