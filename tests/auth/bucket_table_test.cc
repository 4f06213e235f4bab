// The rate limiter's table (auth/bucket_table.h) against a std::map model:
// random inserts, lookups and sweeps, with hashes crowded into a few home
// slots so that runs are long and wrap around the array's end.
#include "auth/bucket_table.h"

#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <random>

namespace idlegrid::auth {
namespace {

TEST(BucketTableTest, HoldsAtMostMaxEntries) {
  BucketTable table(5);
  for (uint64_t h = 1; h <= 5; ++h) ASSERT_TRUE(table.Insert(h, {.credit_milli = int64_t(h)})) << h;
  EXPECT_FALSE(table.Insert(6, {}));
  EXPECT_EQ(table.size(), 5u);
  EXPECT_EQ(table.Find(6), nullptr);
  for (uint64_t h = 1; h <= 5; ++h) {
    ASSERT_NE(table.Find(h), nullptr) << h;
    EXPECT_EQ(table.Find(h)->credit_milli, int64_t(h));
  }
}

TEST(BucketTableTest, FindReturnsTheStoredBucketToUpdateInPlace) {
  BucketTable table(100);
  ASSERT_TRUE(table.Insert(42, {.credit_milli = 1, .updated_ms = 2}));
  table.Find(42)->credit_milli = 7;
  EXPECT_EQ(table.Find(42)->credit_milli, 7);
  EXPECT_EQ(table.Find(42)->updated_ms, 2);
}

TEST(BucketTableTest, EraseIfSeesEachEntryOnceAndKeepsTheRestReachable) {
  BucketTable table(1000);
  for (uint64_t h = 1; h <= 1000; ++h)
    ASSERT_TRUE(table.Insert(h * 0x9E3779B97F4A7C15ull, {.credit_milli = int64_t(h)}));
  std::map<int64_t, int> calls;
  const size_t dropped = table.EraseIf([&](const TokenBucket& b) {
    ++calls[b.credit_milli];
    return b.credit_milli % 3 == 0;
  });
  EXPECT_EQ(dropped, 333u);
  EXPECT_EQ(table.size(), 667u);
  ASSERT_EQ(calls.size(), 1000u);
  for (const auto& [credit, n] : calls) EXPECT_EQ(n, 1) << credit;
  for (uint64_t h = 1; h <= 1000; ++h) {
    const TokenBucket* b = table.Find(h * 0x9E3779B97F4A7C15ull);
    if (h % 3 == 0) {
      EXPECT_EQ(b, nullptr) << h;
    } else {
      ASSERT_NE(b, nullptr) << h;
      EXPECT_EQ(b->credit_milli, int64_t(h));
    }
  }
  EXPECT_TRUE(table.Insert(3 * 0x9E3779B97F4A7C15ull, {}));
}

// Property: after any sequence of operations the table answers as the model
// does, and a sweep asks about each entry exactly once. Hashes share a handful
// of low bits (home slots) and differ above, so runs collide, chain and wrap;
// sweeps drop a random third. Every stored value is distinct, to tell the
// sweep's calls apart.
TEST(BucketTableTest, AgreesWithAMapUnderRandomOperations) {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    const size_t max_entries = 1 + rng() % 40;
    BucketTable table(max_entries);
    std::map<uint64_t, int64_t> model;
    int64_t next_value = 0;
    auto random_hash = [&] {
      // Home slots at the start and the end of the array at each size it
      // grows through (16 to 128 slots), so that runs wrap around its end.
      static constexpr uint64_t kHomes[] = {0, 1, 2, 13, 14, 15, 29, 30, 31, 61, 62, 63, 125, 126, 127};
      const uint64_t home = kHomes[rng() % std::size(kHomes)];
      const uint64_t high = (rng() % 50) + 1;  // a few distinct keys per home
      return (high << 32) | home;
    };
    for (int op = 0; op < 400; ++op) {
      const int kind = static_cast<int>(rng() % 10);
      if (kind < 6) {
        const uint64_t h = random_hash();
        if (model.count(h)) continue;  // Insert requires a new key
        const int64_t value = next_value++;
        const bool inserted = table.Insert(h, {.credit_milli = value});
        ASSERT_EQ(inserted, model.size() < max_entries) << "seed " << seed << " op " << op;
        if (inserted) model[h] = value;
      } else if (kind < 9) {
        const uint64_t h = random_hash();
        TokenBucket* b = table.Find(h);
        ASSERT_EQ(b != nullptr, model.count(h) == 1) << "seed " << seed << " op " << op;
        if (b != nullptr) {
          ASSERT_EQ(b->credit_milli, model[h]);
          b->credit_milli = model[h] = next_value++;
        }
      } else {
        const int64_t salt = static_cast<int64_t>(rng() % 3);
        auto drop = [salt](int64_t value) { return (value + salt) % 3 == 0; };
        std::map<int64_t, int> calls;
        const size_t dropped = table.EraseIf([&](const TokenBucket& b) {
          ++calls[b.credit_milli];
          return drop(b.credit_milli);
        });
        ASSERT_EQ(calls.size(), model.size()) << "seed " << seed << " op " << op;
        for (const auto& [value, n] : calls) ASSERT_EQ(n, 1) << "seed " << seed << " op " << op << " value " << value;
        size_t model_dropped = 0;
        for (auto it = model.begin(); it != model.end();) {
          if (drop(it->second)) {
            it = model.erase(it);
            ++model_dropped;
          } else {
            ++it;
          }
        }
        ASSERT_EQ(dropped, model_dropped) << "seed " << seed << " op " << op;
      }
      ASSERT_EQ(table.size(), model.size()) << "seed " << seed << " op " << op;
    }
    for (const auto& [h, value] : model) {
      const TokenBucket* b = table.Find(h);
      ASSERT_NE(b, nullptr) << "seed " << seed;
      EXPECT_EQ(b->credit_milli, value);
    }
  }
}

}  // namespace
}  // namespace idlegrid::auth
