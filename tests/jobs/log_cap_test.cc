// The log cap (jobs/log_cap.h) on plain values: head first, one note, a
// bounded tail with the oldest rows evicted, every byte accounted for.
#include "jobs/log_cap.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace idlegrid::jobs {
namespace {

v1::LogChunk Chunk(const std::string& data, const std::string& stream = "stdout") {
  v1::LogChunk c;
  c.set_task_index(3);
  c.set_attempt_id("a1");
  c.set_stream(stream);
  c.set_data(data);
  return c;
}

std::string Parts(const LogAppendPlan& plan) {
  std::string out;
  for (const auto& r : plan.rows) out += r.part == LogPart::kHead ? 'H' : r.part == LogPart::kTail ? 'T' : 'N';
  return out;
}

const LogCap kCap{10, 6};

TEST(LogCapTest, UnderTheHeadEverythingIsKeptAsIs) {
  LogAppendPlan p = PlanLogAppend(kCap, {}, {}, {Chunk("abc"), Chunk("def", "stderr")});
  EXPECT_EQ(Parts(p), "HH");
  EXPECT_EQ(p.rows[1].chunk.data(), "def");
  EXPECT_EQ(p.rows[1].chunk.stream(), "stderr");
  EXPECT_EQ(p.rows[1].chunk.attempt_id(), "a1");
  EXPECT_EQ(p.usage.head, 6u);
  EXPECT_EQ(p.usage.tail, 0u);
  EXPECT_TRUE(p.evict.empty());
}

TEST(LogCapTest, PassingTheHeadSplitsTheChunkAndWritesTheNoteOnce) {
  LogAppendPlan p = PlanLogAppend(kCap, {8, 0, 0}, {}, {Chunk("abcdef")});
  ASSERT_EQ(Parts(p), "HNT");
  EXPECT_EQ(p.rows[0].chunk.data(), "ab");
  EXPECT_EQ(p.rows[1].chunk.stream(), "idlegrid");
  EXPECT_NE(p.rows[1].chunk.data().find("idlegrid status JOB"), std::string::npos);
  EXPECT_EQ(p.rows[2].chunk.data(), "cdef");
  EXPECT_EQ(p.usage.head, 10u);
  EXPECT_EQ(p.usage.tail, 4u);
  // The next batch adds to the tail without another note.
  LogAppendPlan q = PlanLogAppend(kCap, p.usage, {{7, 4}}, {Chunk("gh")});
  EXPECT_EQ(Parts(q), "T");
  EXPECT_EQ(q.usage.tail, 6u);
}

TEST(LogCapTest, AFullTailEvictsItsOldestRowsAndCountsThemDropped) {
  LogAppendPlan p = PlanLogAppend(kCap, {10, 6, 0}, {{7, 4}, {9, 2}}, {Chunk("xyz")});
  EXPECT_EQ(Parts(p), "T");
  EXPECT_EQ(p.evict, std::vector<int64_t>{7});
  EXPECT_EQ(p.usage.tail, 5u);
  EXPECT_EQ(p.usage.dropped, 4u);
}

TEST(LogCapTest, AChunkLargerThanTheTailKeepsItsEnd) {
  LogAppendPlan p = PlanLogAppend(kCap, {10, 2, 0}, {{7, 2}}, {Chunk("0123456789")});
  ASSERT_EQ(Parts(p), "T");
  EXPECT_EQ(p.rows[0].chunk.data(), "456789");
  EXPECT_EQ(p.evict, std::vector<int64_t>{7});
  EXPECT_EQ(p.usage.tail, 6u);
  EXPECT_EQ(p.usage.dropped, 4u + 2u);
}

TEST(LogCapTest, RowsEvictedWithinTheSameBatchAreNeverWritten) {
  LogAppendPlan p = PlanLogAppend(kCap, {10, 0, 1}, {}, {Chunk("aaaa"), Chunk("bbbb"), Chunk("cc")});
  ASSERT_EQ(Parts(p), "TT");
  EXPECT_EQ(p.rows[0].chunk.data(), "bbbb");
  EXPECT_EQ(p.rows[1].chunk.data(), "cc");
  EXPECT_EQ(p.usage.dropped, 1u + 4u);
}

TEST(LogCapTest, EveryByteIsKeptOrCountedAndNeitherPartPassesItsCap) {
  std::mt19937 rng(7);
  LogUsage usage;
  std::vector<TailRow> tail;
  uint64_t total = 0;
  int64_t next_seq = 1;
  int notes = 0;
  for (int batch = 0; batch < 200; ++batch) {
    std::vector<v1::LogChunk> in;
    for (int i = 0, n = static_cast<int>(rng() % 4); i < n; ++i) {
      in.push_back(Chunk(std::string(rng() % 9, 'x')));
      total += in.back().data().size();
    }
    LogAppendPlan p = PlanLogAppend(kCap, usage, tail, in);
    for (int64_t seq : p.evict) {
      ASSERT_FALSE(tail.empty());
      EXPECT_EQ(tail.front().seq, seq) << "evicted out of order";
      tail.erase(tail.begin());
    }
    for (const auto& r : p.rows) {
      if (r.part == LogPart::kNote) ++notes;
      if (r.part == LogPart::kTail) tail.push_back({next_seq, r.chunk.data().size()});
      ++next_seq;
    }
    usage = p.usage;
    ASSERT_LE(usage.head, kCap.head_bytes);
    ASSERT_LE(usage.tail, kCap.tail_bytes);
    uint64_t held = 0;
    for (const auto& t : tail) held += t.size;
    ASSERT_EQ(held, usage.tail);
    ASSERT_EQ(usage.head + usage.tail + usage.dropped, total);
  }
  EXPECT_EQ(notes, 1);
  EXPECT_GT(usage.dropped, 0u);
}

}  // namespace
}  // namespace idlegrid::jobs
