// The rate limiter (auth/rate_limit.h): token buckets driven by plain
// millisecond numbers, its bounded table under floods of distinct keys, and
// exact accounting under concurrent callers.
#include "auth/rate_limit.h"

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <string>
#include <thread>
#include <vector>

namespace idlegrid::auth {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000;  // an epoch-like start, as the coordinator's clock gives

int AllowedOf(RateLimiter& limiter, std::string_view key, int64_t now_ms, int tries) {
  int allowed = 0;
  for (int i = 0; i < tries; ++i) allowed += limiter.Allow(key, now_ms).allowed;
  return allowed;
}

TEST(RateLimiterTest, AllowsABurstThenRefuses) {
  RateLimiter limiter({.per_second = 50, .burst = 10});
  EXPECT_EQ(AllowedOf(limiter, "t1", kT0, 10), 10);
  const RateDecision refused = limiter.Allow("t1", kT0);
  EXPECT_FALSE(refused.allowed);
  EXPECT_FALSE(refused.table_full);
}

TEST(RateLimiterTest, RefillsAtTheRateAndNoFurtherThanTheBurst) {
  RateLimiter limiter({.per_second = 50, .burst = 10});  // one request per 20 ms
  ASSERT_EQ(AllowedOf(limiter, "t1", kT0, 10), 10);
  EXPECT_FALSE(limiter.Allow("t1", kT0 + 19).allowed);
  EXPECT_TRUE(limiter.Allow("t1", kT0 + 20).allowed);
  EXPECT_FALSE(limiter.Allow("t1", kT0 + 20).allowed);
  EXPECT_EQ(AllowedOf(limiter, "t1", kT0 + 20 + 100, 100), 5);
  // Idle far longer than a refill: the bucket holds one burst, not more.
  EXPECT_EQ(AllowedOf(limiter, "t1", kT0 + 3'600'000, 100), 10);
}

// A rate that does not divide a second evenly still refills exactly: 3/s is a
// request after 333.33 ms, so not at 333 and at 334, and exactly 3 a second
// (the burst of 2 is never reached, so the cap clips no fraction away).
TEST(RateLimiterTest, FractionalRefillLosesNothing) {
  RateLimiter limiter({.per_second = 3, .burst = 2});
  ASSERT_EQ(AllowedOf(limiter, "k", kT0, 2), 2);
  EXPECT_FALSE(limiter.Allow("k", kT0 + 333).allowed);
  EXPECT_TRUE(limiter.Allow("k", kT0 + 334).allowed);
  int allowed = 0;
  for (int64_t ms = 335; ms <= 334 + 3000; ++ms) allowed += limiter.Allow("k", kT0 + ms).allowed;
  EXPECT_EQ(allowed, 9);
}

TEST(RateLimiterTest, KeysHaveIndependentBuckets) {
  RateLimiter limiter({.per_second = 1, .burst = 2});
  ASSERT_EQ(AllowedOf(limiter, "alice", kT0, 5), 2);
  EXPECT_EQ(AllowedOf(limiter, "bob", kT0, 5), 2);
  EXPECT_FALSE(limiter.Allow("alice", kT0).allowed);
  EXPECT_EQ(limiter.TrackedKeys(), 2u);
}

TEST(RateLimiterTest, RetryAfterIsTheWaitUntilTheNextRequestIsAllowed) {
  struct Case {
    uint32_t per_second;
    int64_t refused_at;  // ms after the one-request bucket was emptied at 0
    int64_t want_retry_ms;
  };
  for (const Case& c :
       {Case{50, 0, 20}, Case{50, 19, 1}, Case{3, 0, 334}, Case{3, 100, 234}, Case{1000, 0, 1}, Case{1, 999, 1}}) {
    RateLimiter limiter({.per_second = c.per_second, .burst = 1});
    ASSERT_TRUE(limiter.Allow("k", kT0).allowed);
    const RateDecision d = limiter.Allow("k", kT0 + c.refused_at);
    ASSERT_FALSE(d.allowed) << c.per_second << "/s at " << c.refused_at;
    EXPECT_EQ(d.retry_after_ms, c.want_retry_ms) << c.per_second << "/s at " << c.refused_at;
    // The hint is honest: refused just before it, allowed at it.
    if (c.want_retry_ms > 1) {
      EXPECT_FALSE(limiter.Allow("k", kT0 + c.refused_at + c.want_retry_ms - 1).allowed);
    }
    EXPECT_TRUE(limiter.Allow("k", kT0 + c.refused_at + c.want_retry_ms).allowed);
  }
}

TEST(RateLimiterTest, TimeGoingBackwardsAddsNothingAndBreaksNothing) {
  RateLimiter limiter({.per_second = 10, .burst = 1});
  ASSERT_TRUE(limiter.Allow("k", kT0 + 1000).allowed);
  const RateDecision earlier = limiter.Allow("k", kT0);
  ASSERT_FALSE(earlier.allowed);
  EXPECT_EQ(earlier.retry_after_ms, 1000 + 100);  // from the caller's now
  EXPECT_FALSE(limiter.Allow("k", kT0 + 1099).allowed);
  EXPECT_TRUE(limiter.Allow("k", kT0 + 1100).allowed);
}

TEST(RateLimiterTest, RateZeroIsUnlimitedAndTracksNothing) {
  RateLimiter limiter({.per_second = 0, .burst = 0});
  EXPECT_EQ(AllowedOf(limiter, "k", kT0, 10'000), 10'000);
  EXPECT_EQ(limiter.TrackedKeys(), 0u);
  EXPECT_TRUE(limiter.Check("k", kT0, "requests/s per token").ok());
}

TEST(RateLimiterTest, PeekTakesNothingAndTracksNoNewKey) {
  RateLimiter limiter({.per_second = 1, .burst = 1});
  EXPECT_TRUE(limiter.Peek("k", kT0).allowed);
  EXPECT_EQ(limiter.TrackedKeys(), 0u);
  ASSERT_TRUE(limiter.Allow("k", kT0).allowed);
  const RateDecision peeked = limiter.Peek("k", kT0 + 400);
  EXPECT_FALSE(peeked.allowed);
  EXPECT_EQ(peeked.retry_after_ms, 600);
  EXPECT_TRUE(limiter.Peek("k", kT0 + 1000).allowed);
  EXPECT_TRUE(limiter.Peek("k", kT0 + 1000).allowed);
  EXPECT_TRUE(limiter.Allow("k", kT0 + 1000).allowed);
}

TEST(RateLimiterTest, CheckSaysTheLimitAndWhenToRetry) {
  RateLimiter limiter({.per_second = 50, .burst = 1});
  ASSERT_TRUE(limiter.Check("t", kT0, "requests/s per token").ok());
  const Status st = limiter.Check("t", kT0 + 8, "requests/s per token");
  EXPECT_EQ(st.code(), Code::kResourceExhausted);
  EXPECT_EQ(st.message(), "rate limit: 50 requests/s per token; retry in 12 ms");
  EXPECT_TRUE(RefusalStatus(limiter, RateDecision{}, "requests/s per token").ok());
}

// A million distinct keys, each used once as a stream of bad tokens would be:
// a bucket refills completely 100 ms after its one request, so the table never
// needs more than the keys of the last 100 ms plus what a sweep waits for,
// and it never holds more than the cap. Nobody is refused: room is always
// found among refilled buckets.
TEST(RateLimiterTest, AMillionDistinctKeysStayUnderTheCap) {
  RateLimiter limiter({.per_second = 10, .burst = 5}, {.max_keys = 4'000, .hash_seed = 7});
  ASSERT_EQ(limiter.max_keys(), 4'000u);
  size_t most_tracked = 0;
  int refused = 0;
  for (int i = 0; i < 1'000'000; ++i) {
    const int64_t now = kT0 + i / 10;  // 10 new keys a millisecond
    refused += !limiter.Allow("sha256:" + std::to_string(i), now).allowed;
    if (i % 1'000 == 0) most_tracked = std::max(most_tracked, limiter.TrackedKeys());
  }
  EXPECT_EQ(refused, 0);
  EXPECT_LE(most_tracked, limiter.max_keys());
  EXPECT_GT(most_tracked, 1'000u) << "the table should have filled, or eviction was not exercised";
}

// The same flood arriving at one instant: every bucket is active, so the table
// fills, then new keys are refused (table_full, retry hint) and the keys
// already tracked keep their own buckets and keep being served.
TEST(RateLimiterTest, AFullTableRefusesNewKeysAndKeepsActiveOnes) {
  RateLimiter limiter({.per_second = 1, .burst = 2}, {.max_keys = 1'600, .hash_seed = 7});
  ASSERT_TRUE(limiter.Allow("honest", kT0).allowed);
  int admitted = 0;
  RateDecision last_refusal;
  for (int i = 0; i < 1'000'000; ++i) {
    const RateDecision d = limiter.Allow("bad-" + std::to_string(i), kT0);
    if (d.allowed) {
      ++admitted;
    } else {
      last_refusal = d;
    }
  }
  EXPECT_EQ(admitted + 1, 1'600);  // every shard filled to its share
  EXPECT_EQ(limiter.TrackedKeys(), 1'600u);
  EXPECT_TRUE(last_refusal.table_full);
  EXPECT_EQ(last_refusal.retry_after_ms, 1'000);  // when the first of them has refilled
  EXPECT_EQ(RefusalStatus(limiter, last_refusal, "requests/s per token").message(),
            "rate limit: too many callers at once (1600 tracked); retry in 1000 ms");
  // "honest" was not evicted: it still has exactly the one request it had left
  // (a fresh bucket would have two).
  EXPECT_TRUE(limiter.Allow("honest", kT0 + 10).allowed);
  EXPECT_FALSE(limiter.Allow("honest", kT0 + 10).allowed);
  // Once the flood's buckets have refilled, new keys find room again.
  EXPECT_TRUE(limiter.Allow("newcomer", kT0 + 2'000).allowed);
}

// A drained bucket is active for its whole refill: a table full of them
// refuses a new key until the oldest refills, and never evicts one early.
TEST(RateLimiterTest, ActiveKeysAreNotEvictedBeforeTheyRefill) {
  RateLimiter limiter({.per_second = 1, .burst = 1}, {.max_keys = 16, .hash_seed = 7});
  std::vector<std::string> tracked;
  for (int i = 0; tracked.size() < 16 && i < 10'000; ++i) {
    const std::string key = "k" + std::to_string(i);
    if (limiter.Allow(key, kT0).allowed) tracked.push_back(key);
  }
  ASSERT_EQ(tracked.size(), 16u);
  const RateDecision full = limiter.Allow("new", kT0 + 500);
  EXPECT_FALSE(full.allowed);
  EXPECT_TRUE(full.table_full);
  EXPECT_EQ(full.retry_after_ms, 500);
  for (const std::string& key : tracked) EXPECT_FALSE(limiter.Allow(key, kT0 + 999).allowed) << key;
  EXPECT_TRUE(limiter.Allow("new", kT0 + 2'000).allowed);
}

// Four threads hammer one key while each walks its own clock forward 1 ms per
// step (so their now_ms values interleave out of order): exactly the burst
// plus what the rate refills by the latest time anyone saw is admitted.
TEST(RateLimiterTest, ConcurrentCallersOnOneKeyLoseNoUpdates) {
  constexpr uint32_t kRate = 1000;  // one per ms
  constexpr uint32_t kBurst = 20;
  constexpr int64_t kSteps = 20'000;
  RateLimiter limiter({.per_second = kRate, .burst = kBurst});
  std::atomic<int> admitted{0};
  std::latch start(4);  // so the threads overlap rather than run one after another
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      for (int64_t ms = 0; ms < kSteps; ++ms) {
        for (int i = 0; i < 8; ++i) admitted += limiter.Allow("shared", kT0 + ms).allowed;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(admitted.load(), kBurst + kRate * (kSteps - 1) / 1000);
}

TEST(RateLimiterTest, ValidationNamesTheBadLimit) {
  EXPECT_TRUE(ValidateRateLimit({.per_second = 0, .burst = 0}, "x").ok());
  EXPECT_TRUE(ValidateRateLimit({.per_second = 50, .burst = 100}, "x").ok());
  const Status no_burst = ValidateRateLimit({.per_second = 50, .burst = 0}, "--rate-limit-token");
  EXPECT_EQ(no_burst.code(), Code::kInvalidArgument);
  EXPECT_NE(no_burst.message().find("--rate-limit-token"), std::string::npos) << no_burst.message();
  EXPECT_FALSE(ValidateRateLimit({.per_second = kMaxRatePerSecond + 1, .burst = 1}, "x").ok());
  EXPECT_FALSE(ValidateRateLimit({.per_second = 1, .burst = kMaxBurst + 1}, "x").ok());
  RateLimitConfig config;
  EXPECT_TRUE(ValidateRateLimitConfig(config).ok());
  config.failed_auth_per_peer.burst = 0;
  EXPECT_NE(ValidateRateLimitConfig(config).message().find("failed-authentication"), std::string::npos);
}

// Out-of-range values that skipped validation are clamped, not overflowed.
TEST(RateLimiterTest, ExtremeLimitsDoNotOverflow) {
  RateLimiter limiter({.per_second = UINT32_MAX, .burst = UINT32_MAX});
  EXPECT_EQ(limiter.limit().per_second, kMaxRatePerSecond);
  EXPECT_EQ(limiter.limit().burst, kMaxBurst);
  ASSERT_TRUE(limiter.Allow("k", 0).allowed);
  EXPECT_TRUE(limiter.Allow("k", INT64_MAX / 2).allowed);
}

TEST(RequestRateLimitsTest, TokensAreLimitedPerToken) {
  RateLimitConfig config;
  config.per_token = {.per_second = 50, .burst = 2};
  RequestRateLimits limits(config);
  ASSERT_TRUE(limits.CheckToken("sha256:aa", kT0).ok());
  ASSERT_TRUE(limits.CheckToken("sha256:aa", kT0).ok());
  const Status st = limits.CheckToken("sha256:aa", kT0);
  EXPECT_EQ(st.code(), Code::kResourceExhausted);
  EXPECT_EQ(st.message(), "rate limit: 50 requests/s per token; retry in 20 ms");
  EXPECT_TRUE(limits.CheckToken("sha256:bb", kT0).ok());
}

// The failed-authentication gate charges failures only: a peer that keeps
// authenticating is never stopped by it; one that keeps failing is refused
// before its token is looked at, until its bucket refills.
TEST(RequestRateLimitsTest, FailedAuthenticationsArePerPeerAndChargedOnlyOnFailure) {
  RateLimitConfig config;
  config.failed_auth_per_peer = {.per_second = 5, .burst = 3};
  RequestRateLimits limits(config);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(limits.CheckPeer("10.0.0.1", kT0).ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(limits.CheckPeer("10.0.0.2", kT0).ok()) << i;
    limits.RecordFailedAuth("10.0.0.2", kT0);
  }
  const Status st = limits.CheckPeer("10.0.0.2", kT0 + 50);
  EXPECT_EQ(st.code(), Code::kResourceExhausted);
  EXPECT_EQ(st.message(), "rate limit: 5 failed authentications/s per address; retry in 150 ms");
  EXPECT_TRUE(limits.CheckPeer("10.0.0.1", kT0 + 50).ok());
  EXPECT_TRUE(limits.CheckPeer("10.0.0.2", kT0 + 200).ok());
}

}  // namespace
}  // namespace idlegrid::auth
