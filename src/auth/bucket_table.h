#pragma once
// The table behind each shard of RateLimiter (auth/rate_limit.h): an
// open-addressing hash table, linear probing, from a key's 64-bit hash to its
// token bucket. Entries live in one array, so a lookup reads one or two cache
// lines, a new key allocates nothing once the array has grown, and a sweep
// reads memory in order. (std::unordered_map chased a pointer per entry: with
// 100k keys a refused new key cost ~1 us and a sweep of one shard 0.74 ms on
// the development VM; bench/rate_limit.cc has the figures for this one.)
// Not thread-safe: the shard's mutex guards it.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace idlegrid::auth {

// Credit is kept in thousandths of a request: a rate of R requests/s refills
// exactly R per millisecond, so no rounding ever loses a request.
struct TokenBucket {
  int64_t credit_milli = 0;
  int64_t updated_ms = 0;
};

class BucketTable {
 public:
  // Holds at most max_entries (at least 1); the array starts small and grows
  // by doubling to the power of two at or above twice that (load <= 1/2).
  explicit BucketTable(size_t max_entries = 1);

  // The bucket stored under `hash`, or null. `hash` must not be 0 (it marks an
  // empty slot). The pointer is valid until the next Insert or EraseIf.
  TokenBucket* Find(uint64_t hash);
  // Stores `bucket` under `hash` (nonzero, not present). False, storing
  // nothing, when the table holds max_entries already.
  bool Insert(uint64_t hash, TokenBucket bucket);
  // Drops every entry for which drop(const TokenBucket&) is true, calling it
  // once per entry, in one pass over the array; returns how many it dropped.
  template <typename Drop>
  size_t EraseIf(Drop drop);

  size_t size() const { return size_; }
  size_t max_entries() const { return max_entries_; }

 private:
  struct Slot {
    uint64_t hash = 0;  // 0: empty
    TokenBucket bucket;
  };

  size_t IndexOf(uint64_t hash) const { return hash & (slots_.size() - 1); }
  void Grow();
  // Empties slot `at` and shifts later entries of its run back, so that every
  // entry stays reachable from its home slot without tombstones.
  void EraseAt(size_t at);

  size_t max_entries_;
  size_t max_slots_;
  size_t size_ = 0;
  std::vector<Slot> slots_;
};

template <typename Drop>
size_t BucketTable::EraseIf(Drop drop) {
  if (size_ == 0) return 0;
  // Start just after an empty slot (the load is at most 1/2, so there is
  // one): EraseAt then only ever moves entries back into the slot being looked
  // at or into slots not yet reached, so one lap sees every entry once.
  const size_t mask = slots_.size() - 1;
  size_t empty = 0;
  while (slots_[empty].hash != 0) ++empty;
  size_t dropped = 0;
  size_t at = (empty + 1) & mask;
  for (size_t seen = 0; seen < slots_.size();) {
    if (slots_[at].hash != 0 && drop(static_cast<const TokenBucket&>(slots_[at].bucket))) {
      EraseAt(at);  // an entry may have moved into `at`: look at it again
      ++dropped;
      continue;
    }
    at = (at + 1) & mask;
    ++seen;
  }
  return dropped;
}

}  // namespace idlegrid::auth
