// Rate limiter benchmark (auth/rate_limit.h): the cost of Allow() on the
// request path (one key and many, one thread and two), of refusing a flood of
// new keys once the table is full, and of one sweep of a full shard, which is
// what kMinSweepGapMs bounds. Pure core; prints figures (the best of three
// runs, since a shared machine only ever adds time), asserts nothing.
//
//   bench_rate_limit [calls]
#include "auth/rate_limit.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

using idlegrid::auth::RateLimit;
using idlegrid::auth::RateLimiter;
using Clock = std::chrono::steady_clock;

constexpr int64_t kT0 = 1'700'000'000'000;

// Keys shaped like the front door's: "sha256:" and 64 hex digits.
std::vector<std::string> TokenHashes(size_t count, const char* salt) {
  std::vector<std::string> out;
  out.reserve(count);
  char hex[65];
  for (size_t i = 0; i < count; ++i) {
    std::snprintf(hex, sizeof(hex), "%016zx%s%048zx", i, salt, i * 2654435761u);
    out.push_back("sha256:" + std::string(hex, 64));
  }
  return out;
}

double NsPerCall(Clock::duration d, size_t calls) {
  return std::chrono::duration<double, std::nano>(d).count() / static_cast<double>(calls);
}

// `threads` threads each make `calls` Allow calls over `keys` (one thread's
// calls walk the keys in turn); the limit is generous, so every call takes the
// path of an admitted request. Returns ns per call per thread (latency).
double AllowNs(const std::vector<std::string>& keys, int threads, size_t calls) {
  RateLimiter limiter(RateLimit{.per_second = 1'000'000, .burst = 1'000'000}, {.hash_seed = 42});
  for (const std::string& k : keys) (void)limiter.Allow(k, kT0);  // tracked before timing
  std::vector<double> ns(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const auto start = Clock::now();
      for (size_t i = 0; i < calls; ++i) {
        (void)limiter.Allow(keys[(i + t * 7919) % keys.size()], kT0 + static_cast<int64_t>(i / 1000));
      }
      ns[t] = NsPerCall(Clock::now() - start, calls);
    });
  }
  for (std::thread& th : pool) th.join();
  double sum = 0;
  for (double v : ns) sum += v;
  return sum / threads;
}

// The median of the 16 slowest of the first calls of a flood: each shard's
// first new key runs its one scan, and the median of those 16 shrugs off a
// preempted call or two.
double ScanUs(RateLimiter& limiter, const std::vector<std::string>& flood, int64_t now_ms) {
  std::vector<double> us;
  for (size_t i = 0; i < 2'000; ++i) {
    const auto t = Clock::now();
    (void)limiter.Allow(flood[i], now_ms);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t).count());
  }
  std::sort(us.begin(), us.end(), std::greater<>());
  return us[RateLimiter::kShards / 2];
}

struct FloodFigures {
  double refuse_ns = 0;     // a new key refused by a full table (no scan due)
  double scan_none_us = 0;  // one scan of a full shard that frees nothing
  double scan_all_us = 0;   // one scan that drops a whole shard of refilled buckets
};

// A table full of buckets still refilling (rate 1/s, burst 2), then floods of
// new keys: before anything has refilled, and after everything has.
FloodFigures Flood() {
  constexpr size_t kCap = 100'000;
  RateLimiter limiter(RateLimit{.per_second = 1, .burst = 2}, {.max_keys = kCap, .hash_seed = 42});
  const std::vector<std::string> active = TokenHashes(kCap * 2, "");
  // Fills every shard (each one's first refusal scans it, next scan at +1000);
  // then the tracked keys take another request at +999, so at +1000, when the
  // next scan is due, none of them is full until +2000.
  for (const std::string& k : active) (void)limiter.Allow(k, kT0);
  for (const std::string& k : active) (void)limiter.Allow(k, kT0 + 999);
  const std::vector<std::string> flood = TokenHashes(10'000, "ffff");
  FloodFigures out;
  out.scan_none_us = ScanUs(limiter, flood, kT0 + 1'000);
  constexpr size_t kCalls = 1'000'000;
  const auto start = Clock::now();
  for (size_t i = 0; i < kCalls; ++i) (void)limiter.Allow(flood[i % flood.size()], kT0 + 1'001);
  out.refuse_ns = NsPerCall(Clock::now() - start, kCalls);
  out.scan_all_us = ScanUs(limiter, flood, kT0 + 10'000);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t calls = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2'000'000;
  const std::vector<std::string> one = TokenHashes(1, "");
  const std::vector<std::string> many = TokenHashes(10'000, "");
  std::printf("Allow(), admitted, keys of %zu chars, %zu calls per thread (ns/call per thread, best of 3):\n",
              one[0].size(), calls);
  for (int threads : {1, 2}) {
    double one_ns = 1e300, many_ns = 1e300;
    for (int run = 0; run < 3; ++run) {
      one_ns = std::min(one_ns, AllowNs(one, threads, calls));
      many_ns = std::min(many_ns, AllowNs(many, threads, calls));
    }
    std::printf("  %d thread%s: one key %.1f ns   10k keys %.1f ns\n", threads, threads == 1 ? " " : "s", one_ns,
                many_ns);
  }
  FloodFigures best{1e300, 1e300, 1e300};
  for (int run = 0; run < 3; ++run) {
    const FloodFigures f = Flood();
    best = {std::min(best.refuse_ns, f.refuse_ns), std::min(best.scan_none_us, f.scan_none_us),
            std::min(best.scan_all_us, f.scan_all_us)};
  }
  std::printf("table full of 100k active keys (best of 3): a new key refused in %.1f ns\n", best.refuse_ns);
  std::printf("one scan of a full shard (%zu buckets): %.1f us freeing none, %.1f us freeing all\n",
              size_t{100'000} / RateLimiter::kShards, best.scan_none_us, best.scan_all_us);
  return 0;
}
