#include "ledger/plans.h"

#include <algorithm>
#include <limits>

namespace idlegrid::ledger {
namespace {

constexpr int64_t kMsPerHour = 3'600'000;
constexpr int64_t kPpm = 1'000'000;

Status RequireName(const std::string& value, const char* what) {
  if (value.empty()) return Status::InvalidArgument(std::string("ledger: ") + what + " is empty");
  return Status::Ok();
}

Status RequirePositive(Micros amount, const char* what) {
  if (amount <= 0) {
    return Status::InvalidArgument(std::string("ledger: ") + what + " must be more than 0 (got " +
                                   FormatCredits(amount) + ")");
  }
  return Status::Ok();
}

Status RequireNonNegative(Micros amount, const char* what) {
  if (amount < 0) {
    return Status::InvalidArgument(std::string("ledger: ") + what + " is negative (" + FormatCredits(amount) + ")");
  }
  return Status::Ok();
}

Posting Nothing(std::string key, Reason reason, std::string job_id, std::string memo) {
  return Posting{std::move(key), reason, std::move(job_id), std::move(memo), {}};
}

// from -> to, one amount.
Posting Move(std::string key, Reason reason, std::string job_id, std::string memo, AccountKey from, AccountKey to,
             Micros amount) {
  return Posting{std::move(key),
                 reason,
                 std::move(job_id),
                 std::move(memo),
                 {{std::move(from), -amount}, {std::move(to), amount}}};
}

// Appends `entry` unless its amount is zero (CheckBalanced refuses zeros).
void AddEntry(Posting& posting, AccountKey account, Micros amount) {
  if (amount != 0) posting.entries.push_back({std::move(account), amount});
}

}  // namespace

Status ValidatePolicy(const LedgerPolicy& policy) {
  if (policy.fee_ppm < 0 || policy.fee_ppm > kPpm) {
    return Status::InvalidArgument("ledger policy: fee share must be between 0 and 1000000 ppm");
  }
  if (policy.slash_to_requester_ppm < 0 || policy.slash_to_requester_ppm > kPpm) {
    return Status::InvalidArgument("ledger policy: slash share to the requester must be between 0 and 1000000 ppm");
  }
  if (policy.dispute_window_ms < 0) return Status::InvalidArgument("ledger policy: dispute window is negative");
  if (policy.slash_micro < 0) return Status::InvalidArgument("ledger policy: slash amount is negative");
  return Status::Ok();
}

Result<Micros> ChargeFor(Micros price_per_hour_micro, int64_t run_ms) {
  if (price_per_hour_micro < 0) return Status::InvalidArgument("ledger: price per hour is negative");
  if (run_ms < 0) return Status::InvalidArgument("ledger: run time is negative");
  __int128 micros = static_cast<__int128>(price_per_hour_micro) * run_ms / kMsPerHour;
  return static_cast<Micros>(std::min<__int128>(micros, std::numeric_limits<Micros>::max()));
}

Micros PartsPerMillion(Micros amount, int64_t ppm) {
  return static_cast<Micros>(static_cast<__int128>(amount) * ppm / kPpm);
}

Result<Posting> Deposit(const std::string& owner, Micros amount, const std::string& request_id) {
  IG_RETURN_IF_ERROR(RequireName(owner, "account"));
  IG_RETURN_IF_ERROR(RequireName(request_id, "request id"));
  IG_RETURN_IF_ERROR(RequirePositive(amount, "deposit"));
  return Move("deposit:" + request_id, Reason::kDeposit, "", "deposit of " + FormatCredits(amount), World(),
              Available(owner), amount);
}

Result<Posting> Withdraw(const std::string& owner, Micros amount, Micros available, const std::string& request_id) {
  IG_RETURN_IF_ERROR(RequireName(owner, "account"));
  IG_RETURN_IF_ERROR(RequireName(request_id, "request id"));
  IG_RETURN_IF_ERROR(RequirePositive(amount, "withdrawal"));
  if (available < amount) {
    return Status::FailedPrecondition("insufficient funds: " + owner + " has " + FormatCredits(available) +
                                      " credits available, the withdrawal needs " + FormatCredits(amount));
  }
  return Move("withdraw:" + request_id, Reason::kWithdraw, "", "withdrawal of " + FormatCredits(amount),
              Available(owner), World(), amount);
}

Result<Posting> EscrowForJob(const std::string& requester, const std::string& job_id, Micros cost_cap,
                             Micros available) {
  IG_RETURN_IF_ERROR(RequireName(requester, "requester"));
  IG_RETURN_IF_ERROR(RequireName(job_id, "job id"));
  IG_RETURN_IF_ERROR(RequireNonNegative(cost_cap, "cost cap"));
  std::string key = "escrow:" + job_id;
  if (cost_cap == 0) return Nothing(key, Reason::kEscrow, job_id, "no cost cap: nothing escrowed");
  if (available < cost_cap) {
    return Status::FailedPrecondition("insufficient funds: " + requester + " has " + FormatCredits(available) +
                                      " credits available, job " + job_id + " needs " + FormatCredits(cost_cap) +
                                      " (its cost cap)");
  }
  return Move(key, Reason::kEscrow, job_id, "escrow of job " + job_id + "'s cost cap", Available(requester),
              Escrow(requester, job_id), cost_cap);
}

int64_t BilledRunMs(int64_t started_at_ms, int64_t finished_at_ms) {
  return started_at_ms > 0 && finished_at_ms > started_at_ms ? finished_at_ms - started_at_ms : 0;
}

bool IsCharged(AttemptEnd end) { return end == AttemptEnd::kVerified; }

std::string ChargeKey(const std::string& attempt_id) { return "charge:" + attempt_id; }

Result<Posting> Charge(const ChargeRequest& request) {
  IG_RETURN_IF_ERROR(RequireName(request.requester, "requester"));
  IG_RETURN_IF_ERROR(RequireName(request.job_id, "job id"));
  IG_RETURN_IF_ERROR(RequireName(request.provider, "provider"));
  IG_RETURN_IF_ERROR(RequireName(request.attempt_id, "attempt id"));
  IG_RETURN_IF_ERROR(RequireNonNegative(request.price, "price"));
  IG_RETURN_IF_ERROR(RequireNonNegative(request.escrow_left, "escrow"));
  std::string key = ChargeKey(request.attempt_id);
  const auto skip = [&](const char* why) {
    return Nothing(key, Reason::kCharge, request.job_id, "attempt " + request.attempt_id + " not charged: " + why);
  };
  switch (request.end) {
    case AttemptEnd::kVerified:
      break;
    case AttemptEnd::kUnverified:
      return skip("its result is not verified yet");
    case AttemptEnd::kFailedVerification:
      return skip("its result failed verification");
    case AttemptEnd::kJobFailure:
      return skip("it failed (failed attempts are not charged)");
    case AttemptEnd::kPlatformFailure:
      return skip("a platform failure is never charged");
  }
  IG_RETURN_IF_ERROR(RequireNonNegative(request.slashed_left, "slashed balance"));
  IG_RETURN_IF_ERROR(RequireNonNegative(request.fees_left, "fees balance"));
  const Micros from_escrow = std::min(request.price, request.escrow_left);
  Micros from_slashed = 0, from_fees = 0;
  if (request.verification) {
    from_slashed = std::min(request.price - from_escrow, request.slashed_left);
    from_fees = std::min(request.price - from_escrow - from_slashed, request.fees_left);
  }
  const Micros amount = from_escrow + from_slashed + from_fees;
  if (amount == 0) {
    if (request.price == 0) return skip("its price is 0");
    return skip(request.verification
                    ? "the job's escrow is spent or refunded, and the platform's slashed and fees accounts are empty"
                    : "the job's escrow is spent (its cost cap is reached)");
  }
  std::string memo = "attempt " + request.attempt_id + " verified: " + FormatCredits(amount) + " to " +
                     request.provider + " (pending)";
  if (from_slashed + from_fees > 0) {
    memo += ", " + FormatCredits(from_slashed + from_fees) +
            " of it the platform's (verification beyond the job's escrow: " + FormatCredits(from_slashed) +
            " from slashed, " + FormatCredits(from_fees) + " from fees)";
  }
  if (amount < request.price) {
    memo += ", price " + FormatCredits(request.price) +
            (request.verification ? " capped by the job's escrow and the platform's accounts"
                                  : " capped by the job's escrow");
  }
  Posting posting{key, Reason::kCharge, request.job_id, memo, {}};
  AddEntry(posting, Escrow(request.requester, request.job_id), -from_escrow);
  AddEntry(posting, Slashed(), -from_slashed);
  AddEntry(posting, Fees(), -from_fees);
  AddEntry(posting, Pending(request.provider, request.attempt_id), amount);
  return posting;
}

Result<Posting> Release(const std::string& provider, const std::string& attempt_id, Micros pending, int64_t charged_ms,
                        int64_t now_ms, const LedgerPolicy& policy) {
  IG_RETURN_IF_ERROR(RequireName(provider, "provider"));
  IG_RETURN_IF_ERROR(RequireName(attempt_id, "attempt id"));
  IG_RETURN_IF_ERROR(RequireNonNegative(pending, "pending balance"));
  IG_RETURN_IF_ERROR(ValidatePolicy(policy));
  std::string key = "release:" + attempt_id;
  if (pending == 0) return Nothing(key, Reason::kRelease, "", "attempt " + attempt_id + " has nothing pending");
  int64_t due_ms = charged_ms + policy.dispute_window_ms;
  if (now_ms < due_ms) {
    return Status::FailedPrecondition("attempt " + attempt_id + "'s dispute window is open for another " +
                                      std::to_string((due_ms - now_ms + 999) / 1000) + " s");
  }
  Micros fee = PartsPerMillion(pending, policy.fee_ppm);
  Posting posting{key,
                  Reason::kRelease,
                  "",
                  "attempt " + attempt_id + " released: " + FormatCredits(pending - fee) + " to " + provider +
                      ", fee " + FormatCredits(fee),
                  {}};
  AddEntry(posting, Pending(provider, attempt_id), -pending);
  AddEntry(posting, Available(provider), pending - fee);
  AddEntry(posting, Fees(), fee);
  return posting;
}

Result<Posting> Clawback(const std::string& requester, const std::string& job_id, const std::string& provider,
                         const std::string& attempt_id, Micros pending) {
  IG_RETURN_IF_ERROR(RequireName(requester, "requester"));
  IG_RETURN_IF_ERROR(RequireName(provider, "provider"));
  IG_RETURN_IF_ERROR(RequireName(attempt_id, "attempt id"));
  IG_RETURN_IF_ERROR(RequireNonNegative(pending, "pending balance"));
  std::string key = "clawback:" + attempt_id;
  if (pending == 0) {
    return Nothing(key, Reason::kClawback, job_id, "attempt " + attempt_id + " has nothing pending to claw back");
  }
  return Move(key, Reason::kClawback, job_id,
              "dispute upheld: attempt " + attempt_id + "'s " + FormatCredits(pending) + " back to " + requester,
              Pending(provider, attempt_id), Available(requester), pending);
}

Result<Posting> Refund(const std::string& requester, const std::string& job_id, Micros escrow_left) {
  IG_RETURN_IF_ERROR(RequireName(requester, "requester"));
  IG_RETURN_IF_ERROR(RequireName(job_id, "job id"));
  IG_RETURN_IF_ERROR(RequireNonNegative(escrow_left, "escrow"));
  std::string key = "refund:" + job_id;
  if (escrow_left == 0) return Nothing(key, Reason::kRefund, job_id, "job " + job_id + " has no escrow left");
  return Move(key, Reason::kRefund, job_id, "job " + job_id + " settled: unused escrow refunded",
              Escrow(requester, job_id), Available(requester), escrow_left);
}

Result<Posting> StakeFunds(const std::string& provider, Micros amount, Micros available,
                           const std::string& request_id) {
  IG_RETURN_IF_ERROR(RequireName(provider, "provider"));
  IG_RETURN_IF_ERROR(RequireName(request_id, "request id"));
  IG_RETURN_IF_ERROR(RequirePositive(amount, "stake"));
  if (available < amount) {
    return Status::FailedPrecondition("insufficient funds: " + provider + " has " + FormatCredits(available) +
                                      " credits available, the stake needs " + FormatCredits(amount));
  }
  return Move("stake:" + request_id, Reason::kStake, "", "stake of " + FormatCredits(amount), Available(provider),
              Stake(provider), amount);
}

Result<Posting> Unstake(const std::string& provider, Micros amount, Micros stake, Micros pending_total,
                        const std::string& request_id) {
  IG_RETURN_IF_ERROR(RequireName(provider, "provider"));
  IG_RETURN_IF_ERROR(RequireName(request_id, "request id"));
  IG_RETURN_IF_ERROR(RequirePositive(amount, "unstake"));
  if (stake < amount) {
    return Status::FailedPrecondition(provider + " has a stake of " + FormatCredits(stake) + ", cannot unstake " +
                                      FormatCredits(amount));
  }
  if (pending_total > 0) {
    return Status::FailedPrecondition(provider + " has " + FormatCredits(pending_total) +
                                      " credits inside their dispute windows: the stake stays until they are released");
  }
  return Move("unstake:" + request_id, Reason::kUnstake, "", "unstake of " + FormatCredits(amount), Stake(provider),
              Available(provider), amount);
}

Result<Posting> Slash(const std::string& provider, const std::string& harmed_requester, const std::string& job_id,
                      const std::string& ref, Micros stake, const LedgerPolicy& policy) {
  IG_RETURN_IF_ERROR(RequireName(provider, "provider"));
  IG_RETURN_IF_ERROR(RequireName(ref, "slash reference"));
  IG_RETURN_IF_ERROR(RequireNonNegative(stake, "stake"));
  IG_RETURN_IF_ERROR(ValidatePolicy(policy));
  std::string key = "slash:" + ref;
  Micros amount = std::min(policy.slash_micro, stake);
  if (amount == 0) return Nothing(key, Reason::kSlash, job_id, provider + " has no stake to slash for " + ref);
  Micros to_requester = harmed_requester.empty() ? 0 : PartsPerMillion(amount, policy.slash_to_requester_ppm);
  Posting posting{key,
                  Reason::kSlash,
                  job_id,
                  provider + " slashed " + FormatCredits(amount) + " for " + ref +
                      (to_requester > 0 ? ", " + FormatCredits(to_requester) + " to " + harmed_requester : ""),
                  {}};
  AddEntry(posting, Stake(provider), -amount);
  if (to_requester > 0) AddEntry(posting, Available(harmed_requester), to_requester);
  AddEntry(posting, Slashed(), amount - to_requester);
  return posting;
}

}  // namespace idlegrid::ledger
