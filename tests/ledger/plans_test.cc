// The ledger's pure plans: one table per posting, the arithmetic of charges,
// and the refusals users see.
#include <gtest/gtest.h>

#include <limits>

#include "ledger/book.h"
#include "ledger/plans.h"

namespace idlegrid::ledger {
namespace {

constexpr Micros C = kMicrosPerCredit;  // one credit

std::vector<Entry> E(std::initializer_list<Entry> entries) { return entries; }

TEST(LedgerAmountsTest, ChargeForRoundsDownInIntegers) {
  struct Row {
    Micros price_per_hour;
    int64_t run_ms;
    Micros want;
  };
  const Row rows[] = {
      {3'600'000, 1, 1},          // exactly one micro per ms
      {3'600'000, 0, 0},          // no run time, no charge
      {2 * C, 3'600'000, 2 * C},  // an hour at 2/h
      {2 * C, 1'800'000, C},      // half an hour
      {1, 3'599'999, 0},          // under one micro: rounds down
      {1'000'001, 3'600'000 * 3, 3'000'003},
      {std::numeric_limits<Micros>::max(), 3'600'000, std::numeric_limits<Micros>::max()},  // no overflow
      {std::numeric_limits<Micros>::max(), std::numeric_limits<int64_t>::max(),
       std::numeric_limits<Micros>::max()},  // saturates
  };
  for (const Row& row : rows) {
    auto got = ChargeFor(row.price_per_hour, row.run_ms);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, row.want) << row.price_per_hour << " x " << row.run_ms;
  }
  EXPECT_EQ(ChargeFor(-1, 10).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ChargeFor(10, -1).status().code(), Code::kInvalidArgument);
}

TEST(LedgerAmountsTest, CreditsFormatAndParse) {
  EXPECT_EQ(FormatCredits(0), "0.000000");
  EXPECT_EQ(FormatCredits(12'500'000), "12.500000");
  EXPECT_EQ(FormatCredits(-1), "-0.000001");
  EXPECT_EQ(FormatCredits(std::numeric_limits<Micros>::min()), "-9223372036854.775808");
  EXPECT_EQ(*ParseCredits("12"), 12 * C);
  EXPECT_EQ(*ParseCredits("12.5"), 12'500'000);
  EXPECT_EQ(*ParseCredits("0.000001"), 1);
  for (const char* bad : {"", "-1", "1.", ".5", "1.0000001", "1e3", "abc", "99999999999999999999"}) {
    EXPECT_EQ(ParseCredits(bad).status().code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_EQ(*MicrosFromCredits(0.1), 100'000);  // rounded to nearest, not truncated to 99'999
  EXPECT_EQ(*MicrosFromCredits(2.5), 2'500'000);
  EXPECT_FALSE(MicrosFromCredits(-1).ok());
  EXPECT_FALSE(MicrosFromCredits(std::numeric_limits<double>::quiet_NaN()).ok());
  EXPECT_EQ(PartsPerMillion(1'000'001, 250'000), 250'000);  // rounds down
}

TEST(LedgerPlansTest, PostingsMoveWhatTheyShould) {
  LedgerPolicy policy;
  policy.fee_ppm = 100'000;  // 10%
  policy.dispute_window_ms = 1000;
  policy.slash_micro = 5 * C;
  policy.slash_to_requester_ppm = 600'000;
  struct Row {
    const char* name;
    Result<Posting> got;
    std::string key;
    Reason reason;
    std::vector<Entry> want;
  };
  Row rows[] = {
      {"deposit", Deposit("alice", 7 * C, "r1"), "deposit:r1", Reason::kDeposit,
       E({{World(), -7 * C}, {Available("alice"), 7 * C}})},
      {"withdraw", Withdraw("alice", 2 * C, 7 * C, "r2"), "withdraw:r2", Reason::kWithdraw,
       E({{Available("alice"), -2 * C}, {World(), 2 * C}})},
      {"escrow", EscrowForJob("alice", "j1", 5 * C, 5 * C), "escrow:j1", Reason::kEscrow,
       E({{Available("alice"), -5 * C}, {Escrow("alice", "j1"), 5 * C}})},
      {"charge", Charge({"alice", "j1", "bob", "a1", 2 * C, 5 * C, AttemptEnd::kVerified}), "charge:a1",
       Reason::kCharge, E({{Escrow("alice", "j1"), -2 * C}, {Pending("bob", "a1"), 2 * C}})},
      {"charge capped by escrow", Charge({"alice", "j1", "bob", "a2", 4 * C, 3 * C, AttemptEnd::kVerified}),
       "charge:a2", Reason::kCharge, E({{Escrow("alice", "j1"), -3 * C}, {Pending("bob", "a2"), 3 * C}})},
      {"release less fee", Release("bob", "a1", 2 * C, 0, 1000, policy), "release:a1", Reason::kRelease,
       E({{Pending("bob", "a1"), -2 * C}, {Available("bob"), 1'800'000}, {Fees(), 200'000}})},
      {"clawback", Clawback("alice", "j1", "bob", "a2", 3 * C), "clawback:a2", Reason::kClawback,
       E({{Pending("bob", "a2"), -3 * C}, {Available("alice"), 3 * C}})},
      {"refund", Refund("alice", "j1", C), "refund:j1", Reason::kRefund,
       E({{Escrow("alice", "j1"), -C}, {Available("alice"), C}})},
      {"stake", StakeFunds("bob", 4 * C, 4 * C, "r3"), "stake:r3", Reason::kStake,
       E({{Available("bob"), -4 * C}, {Stake("bob"), 4 * C}})},
      {"unstake", Unstake("bob", C, 4 * C, 0, "r4"), "unstake:r4", Reason::kUnstake,
       E({{Stake("bob"), -C}, {Available("bob"), C}})},
      {"slash split", Slash("bob", "alice", "j1", "a3", 8 * C, policy), "slash:a3", Reason::kSlash,
       E({{Stake("bob"), -5 * C}, {Available("alice"), 3 * C}, {Slashed(), 2 * C}})},
      {"slash capped by stake", Slash("bob", "alice", "j1", "a4", 1 * C, policy), "slash:a4", Reason::kSlash,
       E({{Stake("bob"), -C}, {Available("alice"), 600'000}, {Slashed(), 400'000}})},
      {"slash without a harmed requester", Slash("bob", "", "", "receipt-7", 8 * C, policy), "slash:receipt-7",
       Reason::kSlash, E({{Stake("bob"), -5 * C}, {Slashed(), 5 * C}})},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    ASSERT_TRUE(row.got.ok()) << row.got.status().ToString();
    EXPECT_EQ(row.got->key, row.key);
    EXPECT_EQ(row.got->reason, row.reason);
    EXPECT_EQ(row.got->entries, row.want);
    EXPECT_TRUE(CheckBalanced(row.got.value()).ok());
    EXPECT_FALSE(row.got->memo.empty());
  }
}

// Verification beyond the job's escrow (a re-verification or known-answer
// check after the escrow was refunded) is the platform's cost: escrow first,
// then slashed, then fees, as far as they hold; never more of the requester's.
TEST(LedgerPlansTest, VerificationBeyondTheEscrowIsThePlatformsCost) {
  struct Row {
    const char* name;
    Micros price, escrow, slashed, fees;
    bool verification;
    std::vector<Entry> want;
    std::string memo_has;
  };
  const Row rows[] = {
      {"escrow covers it", 2 * C, 5 * C, 9 * C, 9 * C, true,
       E({{Escrow("alice", "j1"), -2 * C}, {Pending("bob", "a1"), 2 * C}}), "to bob (pending)"},
      {"after the refund: slashed pays", 2 * C, 0, 9 * C, 9 * C, true,
       E({{Slashed(), -2 * C}, {Pending("bob", "a1"), 2 * C}}), "2.000000 of it the platform's"},
      {"escrow, then slashed, then fees", 4 * C, C, C, 9 * C, true,
       E({{Escrow("alice", "j1"), -C}, {Slashed(), -C}, {Fees(), -2 * C}, {Pending("bob", "a1"), 4 * C}}),
       "1.000000 from slashed, 2.000000 from fees"},
      {"the platform short too: capped", 4 * C, 0, C, C, true,
       E({{Slashed(), -C}, {Fees(), -C}, {Pending("bob", "a1"), 2 * C}}),
       "capped by the job's escrow and the platform's accounts"},
      {"not a verified job: the escrow is the cap", 4 * C, C, 9 * C, 9 * C, false,
       E({{Escrow("alice", "j1"), -C}, {Pending("bob", "a1"), C}}), "capped by the job's escrow"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    ChargeRequest req{"alice", "j1", "bob", "a1", row.price, row.escrow, AttemptEnd::kVerified};
    req.verification = row.verification;
    req.slashed_left = row.slashed;
    req.fees_left = row.fees;
    Result<Posting> got = Charge(req);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->key, "charge:a1");
    EXPECT_EQ(got->entries, row.want);
    EXPECT_TRUE(CheckBalanced(*got).ok());
    EXPECT_NE(got->memo.find(row.memo_has), std::string::npos) << got->memo;
  }
  ChargeRequest broke{"alice", "j1", "bob", "a1", C, 0, AttemptEnd::kVerified};
  broke.verification = true;
  Result<Posting> nothing = Charge(broke);
  ASSERT_TRUE(nothing.ok());
  EXPECT_TRUE(nothing->empty());
  EXPECT_NE(nothing->memo.find("platform's slashed and fees accounts are empty"), std::string::npos) << nothing->memo;
  broke.slashed_left = -1;
  EXPECT_EQ(Charge(broke).status().code(), Code::kInvalidArgument);
}

TEST(LedgerPlansTest, NothingToMoveIsAnEmptyPostingThatSaysWhy) {
  LedgerPolicy policy;
  struct Row {
    const char* name;
    Result<Posting> got;
    std::string memo_has;
  };
  const auto charge = [](AttemptEnd end, Micros price, Micros escrow) {
    return Charge({"alice", "j1", "bob", "a1", price, escrow, end});
  };
  Row rows[] = {
      {"platform failure", charge(AttemptEnd::kPlatformFailure, C, C), "platform failure is never charged"},
      {"job failure", charge(AttemptEnd::kJobFailure, C, C), "failed"},
      {"unverified", charge(AttemptEnd::kUnverified, C, C), "not verified yet"},
      {"failed verification", charge(AttemptEnd::kFailedVerification, C, C), "failed verification"},
      {"free", charge(AttemptEnd::kVerified, 0, C), "price is 0"},
      {"cap reached", charge(AttemptEnd::kVerified, C, 0), "cost cap is reached"},
      {"no cap", EscrowForJob("alice", "j1", 0, 0), "no cost cap"},
      {"refund of nothing", Refund("alice", "j1", 0), "no escrow left"},
      {"release of nothing", Release("bob", "a1", 0, 0, 0, policy), "nothing pending"},
      {"clawback of nothing", Clawback("alice", "j1", "bob", "a1", 0), "nothing pending"},
      {"slash without stake", Slash("bob", "alice", "j1", "a1", 0, policy), "no stake"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    ASSERT_TRUE(row.got.ok()) << row.got.status().ToString();
    EXPECT_TRUE(row.got->empty());
    EXPECT_NE(row.got->memo.find(row.memo_has), std::string::npos) << row.got->memo;
  }
}

TEST(LedgerPlansTest, RefusalsSayWhatIsShort) {
  LedgerPolicy policy;
  policy.dispute_window_ms = 60'000;
  struct Row {
    const char* name;
    Status got;
    Code code;
    std::string message_has;
  };
  Row rows[] = {
      {"escrow short", EscrowForJob("alice", "j1", 5 * C, 1'500'000).status(), Code::kFailedPrecondition,
       "insufficient funds: alice has 1.500000 credits available, job j1 needs 5.000000 (its cost cap)"},
      {"withdraw short", Withdraw("alice", 2 * C, C, "r").status(), Code::kFailedPrecondition,
       "alice has 1.000000 credits available, the withdrawal needs 2.000000"},
      {"stake short", StakeFunds("bob", 2 * C, C, "r").status(), Code::kFailedPrecondition, "the stake needs 2.000000"},
      {"unstake over stake", Unstake("bob", 2 * C, C, 0, "r").status(), Code::kFailedPrecondition,
       "has a stake of 1.000000"},
      {"unstake while pending", Unstake("bob", C, C, 1, "r").status(), Code::kFailedPrecondition,
       "inside their dispute windows"},
      {"release early", Release("bob", "a1", C, 1000, 2000, policy).status(), Code::kFailedPrecondition,
       "dispute window is open for another 59 s"},
      {"zero deposit", Deposit("alice", 0, "r").status(), Code::kInvalidArgument, "must be more than 0"},
      {"negative withdrawal", Withdraw("alice", -1, C, "r").status(), Code::kInvalidArgument, "must be more than 0"},
      {"nameless", Deposit("", C, "r").status(), Code::kInvalidArgument, "account is empty"},
      {"no request id", Deposit("alice", C, "").status(), Code::kInvalidArgument, "request id is empty"},
      {"bad policy", Slash("bob", "alice", "j", "a", C, LedgerPolicy{.fee_ppm = 2'000'000}).status(),
       Code::kInvalidArgument, "fee share"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(row.got.code(), row.code) << row.got.ToString();
    EXPECT_NE(row.got.message().find(row.message_has), std::string::npos) << row.got.message();
  }
}

TEST(LedgerPlansTest, CheckBalancedCatchesBrokenPlans) {
  Posting ok{"k", Reason::kDeposit, "", "", {{World(), -1}, {Available("a"), 1}}};
  EXPECT_TRUE(CheckBalanced(ok).ok());
  Posting unbalanced = ok;
  unbalanced.entries[1].amount = 2;
  EXPECT_EQ(CheckBalanced(unbalanced).code(), Code::kInternal);
  Posting zero{"k", Reason::kDeposit, "", "", {{World(), 0}, {Available("a"), 0}}};
  EXPECT_EQ(CheckBalanced(zero).code(), Code::kInternal);
  Posting twice{"k", Reason::kDeposit, "", "", {{Available("a"), -1}, {Available("a"), 1}}};
  EXPECT_EQ(CheckBalanced(twice).code(), Code::kInternal);
  Posting keyless = ok;
  keyless.key.clear();
  EXPECT_EQ(CheckBalanced(keyless).code(), Code::kInternal);
  // Sums that overflow int64 along the way still balance in 128 bits.
  Posting big{
      "k",
      Reason::kDeposit,
      "",
      "",
      {{World(), std::numeric_limits<Micros>::min() + 1}, {Available("a"), std::numeric_limits<Micros>::max()}}};
  EXPECT_TRUE(CheckBalanced(big).ok());
}

TEST(MemoryBookTest, AppliesOnceAndNeverOverdraws) {
  MemoryBook book;
  ASSERT_TRUE(book.Apply(*Deposit("alice", 5 * C, "r1")).ok());
  ASSERT_TRUE(book.Apply(*Deposit("alice", 5 * C, "r1")).ok());  // replay: no effect
  EXPECT_EQ(book.Balance(Available("alice")), 5 * C);
  EXPECT_EQ(book.Balance(World()), -5 * C);
  // A plan made from a stale balance is refused by the book, not applied in part.
  Posting stale = *Withdraw("alice", 6 * C, 6 * C, "r2");
  Status refused = book.Apply(stale);
  EXPECT_EQ(refused.code(), Code::kFailedPrecondition);
  EXPECT_NE(refused.message().find("alice/available"), std::string::npos) << refused.message();
  EXPECT_EQ(book.Balance(Available("alice")), 5 * C);
  EXPECT_FALSE(book.Applied("withdraw:r2"));
  ASSERT_TRUE(book.Apply(*EscrowForJob("alice", "j1", 3 * C, 5 * C)).ok());
  EXPECT_EQ(book.Total("alice", Kind::kEscrow), 3 * C);
  EXPECT_EQ(book.SumExceptWorld(), 5 * C);
  Posting unbalanced{"bad", Reason::kDeposit, "", "", {{World(), -1}, {Available("a"), 2}}};
  EXPECT_EQ(book.Apply(unbalanced).code(), Code::kInternal);
}

}  // namespace
}  // namespace idlegrid::ledger
