// Settlement batches: only final postings leave, the cursor never skips one,
// and the built-in sink accepts repeats.
#include <gtest/gtest.h>

#include "ledger/book.h"
#include "ledger/plans.h"
#include "ledger/settlement.h"

namespace idlegrid::ledger {
namespace {

constexpr Micros C = kMicrosPerCredit;

std::vector<BookedPosting> Booked(std::vector<Posting> postings) {
  std::vector<BookedPosting> booked;
  int64_t seq = 10;
  for (auto& p : postings) booked.push_back({seq++, 1000, std::move(p)});
  return booked;
}

TEST(SettlementTest, BatchesHoldOnlySettledPostingsAndTheirNet) {
  LedgerPolicy policy;
  policy.fee_ppm = 0;
  policy.dispute_window_ms = 0;
  auto booked = Booked({*Deposit("alice", 10 * C, "d"), *EscrowForJob("alice", "j", 4 * C, 10 * C),
                        *Charge({"alice", "j", "bob", "a", 3 * C, 4 * C, AttemptEnd::kVerified}),
                        *Release("bob", "a", 3 * C, 0, 0, policy), *Refund("alice", "j", C)});
  auto batch = MakeSettledBatch(9, booked, 100);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_EQ(batch->postings.size(), 2u);
  EXPECT_EQ(batch->postings[0].posting.reason, Reason::kRelease);
  EXPECT_EQ(batch->postings[1].posting.reason, Reason::kRefund);
  EXPECT_EQ(batch->last_seq, 14);
  std::map<AccountKey, Micros> want = {
      {Pending("bob", "a"), -3 * C}, {Available("bob"), 3 * C}, {Escrow("alice", "j"), -C}, {Available("alice"), C}};
  EXPECT_EQ(batch->net, want);
}

TEST(SettlementTest, CursorStopsBeforeTheFirstSettledPostingThatDoesNotFit) {
  auto booked = Booked({*Refund("a", "j1", C), *Deposit("a", C, "d"), *Refund("a", "j2", C), *Deposit("a", C, "e")});
  auto first = MakeSettledBatch(9, booked, 1);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->postings.size(), 1u);
  EXPECT_EQ(first->last_seq, 11);  // past the deposit, not past refund j2
  std::vector<BookedPosting> rest(booked.begin() + 2, booked.end());
  auto second = MakeSettledBatch(first->last_seq, rest, 1);
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->postings.size(), 1u);
  EXPECT_EQ(second->postings[0].posting.key, "refund:j2");
  EXPECT_EQ(second->last_seq, 13);
  EXPECT_EQ(MakeSettledBatch(12, booked, 10).status().code(), Code::kInternal);  // at or before the cursor
}

TEST(SettlementTest, BuiltInSinkAcceptsBatchesAndRepeats) {
  LedgerSettlement sink;
  auto batch = MakeSettledBatch(9, Booked({*Refund("a", "j1", C)}), 10);
  ASSERT_TRUE(batch.ok());
  ASSERT_TRUE(sink.Export(*batch).ok());
  EXPECT_EQ(sink.last_seq(), 10);
  EXPECT_TRUE(sink.Export(*batch).ok());  // offered again after a crash
  EXPECT_EQ(sink.last_seq(), 10);
  SettledBatch broken = *batch;
  broken.after_seq = 10;
  broken.last_seq = 11;
  broken.postings[0].posting.entries[0].amount += 1;
  EXPECT_EQ(sink.Export(broken).code(), Code::kInternal);
}

}  // namespace
}  // namespace idlegrid::ledger
