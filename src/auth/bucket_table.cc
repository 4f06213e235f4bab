#include "auth/bucket_table.h"

#include <algorithm>
#include <bit>

namespace idlegrid::auth {
namespace {
constexpr size_t kInitialSlots = 16;
}  // namespace

BucketTable::BucketTable(size_t max_entries)
    : max_entries_(std::max<size_t>(max_entries, 1)),
      max_slots_(std::bit_ceil(2 * max_entries_)),
      slots_(std::min(kInitialSlots, max_slots_)) {}

TokenBucket* BucketTable::Find(uint64_t hash) {
  const size_t mask = slots_.size() - 1;
  for (size_t at = IndexOf(hash);; at = (at + 1) & mask) {
    if (slots_[at].hash == hash) return &slots_[at].bucket;
    if (slots_[at].hash == 0) return nullptr;
  }
}

bool BucketTable::Insert(uint64_t hash, TokenBucket bucket) {
  if (size_ >= max_entries_) return false;
  if ((size_ + 1) * 2 > slots_.size() && slots_.size() < max_slots_) Grow();
  const size_t mask = slots_.size() - 1;
  size_t at = IndexOf(hash);
  while (slots_[at].hash != 0) at = (at + 1) & mask;
  slots_[at] = Slot{hash, bucket};
  ++size_;
  return true;
}

void BucketTable::Grow() {
  std::vector<Slot> old(slots_.size() * 2);
  old.swap(slots_);
  const size_t mask = slots_.size() - 1;
  for (const Slot& slot : old) {
    if (slot.hash == 0) continue;
    size_t at = IndexOf(slot.hash);
    while (slots_[at].hash != 0) at = (at + 1) & mask;
    slots_[at] = slot;
  }
}

void BucketTable::EraseAt(size_t hole) {
  const size_t mask = slots_.size() - 1;
  for (size_t next = (hole + 1) & mask; slots_[next].hash != 0; next = (next + 1) & mask) {
    // The entry at `next` stays if its home slot lies after the hole (cyclically,
    // in (hole, next]): moved back, it would sit before its home and be lost.
    const size_t home = IndexOf(slots_[next].hash);
    const bool stays = hole < next ? (hole < home && home <= next) : (hole < home || home <= next);
    if (stays) continue;
    slots_[hole] = slots_[next];
    hole = next;
  }
  slots_[hole] = Slot{};
  --size_;
}

}  // namespace idlegrid::auth
