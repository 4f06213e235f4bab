#pragma once
// Pure ledger plans: each turns one event, and the balances it needs, into a
// balanced Posting (ledger/posting.h) or an error a user can act on. No I/O,
// no clock: the shell reads balances and the time, calls a plan, and applies
// the posting in one transaction (the store re-checks that no account but
// world goes negative, so a plan made from a stale balance cannot overdraw).
//
// Errors: InvalidArgument for malformed input (negative or zero amounts, empty
// names); FailedPrecondition when the books do not allow it (funds short, the
// dispute window still open), with the amounts in the message. A plan that
// has nothing to move returns an empty Posting whose memo says why (a refund
// of an escrow already spent, a platform failure, which is never charged).
#include <cstdint>
#include <string>

#include "common/status.h"
#include "ledger/accounts.h"
#include "ledger/posting.h"

namespace idlegrid::ledger {

// The operator's money rules. Parts per million keep them integral.
struct LedgerPolicy {
  int64_t fee_ppm = 0;                           // operator's share of each released charge
  int64_t dispute_window_ms = 24 * 3600 * 1000;  // charge -> release delay
  Micros slash_micro = 10 * kMicrosPerCredit;    // taken from stake per proven misbehaviour
  int64_t slash_to_requester_ppm = 500'000;      // share of a slash paid to the harmed requester
};

// InvalidArgument naming the field when a ppm is outside [0, 1e6] or a
// window or slash amount is negative.
Status ValidatePolicy(const LedgerPolicy& policy);

// price/hour x run time, in micros: floor(price_per_hour_micro x run_ms /
// 3'600'000), computed in 128 bits so it cannot overflow before the division
// (the result saturates at INT64_MAX). Rounding down: the requester never pays
// for a fraction of a micro it did not use, and a provider loses under one
// micro per attempt. InvalidArgument for a negative price or run time.
Result<Micros> ChargeFor(Micros price_per_hour_micro, int64_t run_ms);

// How long a run is billed for: finished - started, floored at 0; 0 for a run
// that never started. The ledger's charges, receipts (made and verified),
// cost caps and the costs every surface shows all take it from here.
int64_t BilledRunMs(int64_t started_at_ms, int64_t finished_at_ms);

// `amount` x ppm / 1e6, rounded down (fees and slash shares; 128-bit).
Micros PartsPerMillion(Micros amount, int64_t ppm);

// world -> owner's available. `request_id` makes the key ("deposit:<id>").
Result<Posting> Deposit(const std::string& owner, Micros amount, const std::string& request_id);

// owner's available -> world; FailedPrecondition when `available` < amount.
Result<Posting> Withdraw(const std::string& owner, Micros amount, Micros available, const std::string& request_id);

// At submission: requester's available -> escrow(job), the job's whole cost
// cap. FailedPrecondition "insufficient funds: alice has 1.500000 credits
// available, job j-1 needs 5.000000 (its cost cap)" when short. A zero cap
// escrows nothing (an empty posting). Key "escrow:<job id>".
Result<Posting> EscrowForJob(const std::string& requester, const std::string& job_id, Micros cost_cap,
                             Micros available);

// How an attempt ended, as far as the ledger cares.
enum class AttemptEnd {
  kVerified,            // succeeded and its result passed the job's verification (or `none`)
  kUnverified,          // succeeded, verification not decided yet: not charged yet
  kFailedVerification,  // its result was wrong: never charged (and slashable)
  kJobFailure,          // the job's own fault (exit code, timeout): not charged in this version
  kPlatformFailure,     // node lost or failed, cancelled, preempted: never charged
};
// Whether an attempt that ended so is charged (only kVerified in this
// version); jobs::LedgerEnd says how an attempt ended.
bool IsCharged(AttemptEnd end);

struct ChargeRequest {
  std::string requester;
  std::string job_id;
  std::string provider;
  std::string attempt_id;
  Micros price = 0;        // ChargeFor(price/hour, run time)
  Micros escrow_left = 0;  // the job's escrow balance now
  AttemptEnd end = AttemptEnd::kVerified;
  // A run of a verified job (a replica, an audit, a re-verification, a
  // known-answer check): what the escrow cannot cover is the platform's cost,
  // taken from `slashed_left` (what cheaters lost), then `fees_left`.
  bool verification = false;
  Micros slashed_left = 0;  // the grid's slashed balance now
  Micros fees_left = 0;     // the grid's fees balance now
};

// The key of the charge of `attempt_id` ("charge:<attempt id>"): a pending
// balance's charge is found by it (Store::PendingCharges).
std::string ChargeKey(const std::string& attempt_id);

// A verified attempt: escrow(job) -> pending(attempt) of min(price,
// escrow_left) (a job is never charged past what it escrowed: its cap). For
// a run of a verified job (`verification`), the rest of the price comes from
// slashed, then fees, as far as they hold: verification run after the job's
// escrow was refunded or spent (backtracking's re-verification of a result
// the requester already paid for, a known-answer check) is the platform's
// cost, never the requester's beyond its escrow. Any other end is an empty
// posting saying why. Key "charge:<attempt id>".
Result<Posting> Charge(const ChargeRequest& request);

// After the dispute window: pending(attempt) -> provider's available, less
// the policy's fee, which goes to fees. FailedPrecondition while now_ms <
// charged_ms + window. Empty when pending is 0 (already released or clawed
// back). Key "release:<attempt id>".
Result<Posting> Release(const std::string& provider, const std::string& attempt_id, Micros pending, int64_t charged_ms,
                        int64_t now_ms, const LedgerPolicy& policy);

// A dispute upheld inside the window: pending(attempt) -> requester's
// available, all of it (fees are only taken at release). Empty when pending
// is 0. Key "clawback:<attempt id>".
Result<Posting> Clawback(const std::string& requester, const std::string& job_id, const std::string& provider,
                         const std::string& attempt_id, Micros pending);

// When a job settles (every task ended): escrow(job) -> requester's
// available, whatever is left. Empty when 0. Key "refund:<job id>".
Result<Posting> Refund(const std::string& requester, const std::string& job_id, Micros escrow_left);

// available -> stake; FailedPrecondition when short.
Result<Posting> StakeFunds(const std::string& provider, Micros amount, Micros available, const std::string& request_id);

// stake -> available. FailedPrecondition when the stake is short, or while
// the provider still has earnings inside a dispute window (`pending_total` >
// 0): a slash for those must still find the stake.
Result<Posting> Unstake(const std::string& provider, Micros amount, Micros stake, Micros pending_total,
                        const std::string& request_id);

// Proven misbehaviour (a wrong result, a forged receipt) by `provider` on
// `ref` (an attempt id): min(policy.slash_micro, stake) leaves its stake;
// slash_to_requester_ppm of it goes to `harmed_requester`'s available ("" for
// none: all to slashed), the rest to slashed. Empty when the stake is 0.
// Key "slash:<ref>".
Result<Posting> Slash(const std::string& provider, const std::string& harmed_requester, const std::string& job_id,
                      const std::string& ref, Micros stake, const LedgerPolicy& policy);

}  // namespace idlegrid::ledger
