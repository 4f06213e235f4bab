// The ledger's requester operations (ledger_requests.h).
#include "coordinator/ledger_requests.h"

#include <algorithm>

namespace idlegrid::coordinator {
namespace {

constexpr uint32_t kDefaultHistory = 100;
constexpr uint32_t kMaxHistory = 1000;

}  // namespace

Status LedgerRequests::CheckAccount(const std::string& account) {
  if (!ledger_) {
    return Status::FailedPrecondition("this coordinator keeps no ledger (start it with --ledger)");
  }
  IG_ASSIGN_OR_RETURN(auto record, store_->GetAccount(account));
  if (!record) return Status::NotFound("no account " + account);
  return Status::Ok();
}

Result<v1::LedgerBalanceResponse> LedgerRequests::Balance(const std::string& account) {
  IG_RETURN_IF_ERROR(CheckAccount(account));
  IG_ASSIGN_OR_RETURN(auto balances, store_->LedgerBalances(account));
  v1::LedgerBalanceResponse out;
  out.set_account(account);
  for (const auto& [key, micros] : balances) {
    switch (key.kind) {
      case ledger::Kind::kAvailable:
        out.set_available_micros(out.available_micros() + micros);
        break;
      case ledger::Kind::kEscrow:
        out.set_escrow_micros(out.escrow_micros() + micros);
        break;
      case ledger::Kind::kPending:
        out.set_pending_micros(out.pending_micros() + micros);
        break;
      case ledger::Kind::kStake:
        out.set_stake_micros(out.stake_micros() + micros);
        break;
      default:
        break;  // the grid's accounts have owner "", never an account name
    }
    if (micros == 0) continue;
    auto* row = out.add_accounts();
    row->set_kind(ledger::KindName(key.kind));
    row->set_scope(key.scope);
    row->set_micros(micros);
  }
  return out;
}

Result<v1::LedgerHistoryResponse> LedgerRequests::History(const std::string& account, int64_t after_seq,
                                                          uint32_t limit) {
  IG_RETURN_IF_ERROR(CheckAccount(account));
  const uint32_t n = limit == 0 ? kDefaultHistory : std::min(limit, kMaxHistory);
  IG_ASSIGN_OR_RETURN(auto booked, store_->LedgerPostings(after_seq, n, account));
  v1::LedgerHistoryResponse out;
  for (const ledger::BookedPosting& b : booked) {
    auto* p = out.add_postings();
    p->set_seq(b.seq);
    p->set_key(b.posting.key);
    p->set_reason(ledger::ReasonName(b.posting.reason));
    p->set_job_id(b.posting.job_id);
    p->set_memo(b.posting.memo);
    p->set_applied_at_ms(b.applied_ms);
    for (const ledger::Entry& e : b.posting.entries) {
      auto* entry = p->add_entries();
      entry->set_owner(e.account.owner);
      entry->set_kind(ledger::KindName(e.account.kind));
      entry->set_scope(e.account.scope);
      entry->set_micros(e.amount);
    }
  }
  return out;
}

Result<v1::LedgerBalanceResponse> LedgerRequests::Transfer(const v1::LedgerTransferRequest& request, bool deposit) {
  IG_RETURN_IF_ERROR(CheckAccount(request.account()));
  IG_RETURN_IF_ERROR(
      ledger_->Transfer(request.account(), request.micros(), request.request_id(), deposit, clock_->NowMs()));
  return Balance(request.account());
}

Result<v1::LedgerBalanceResponse> LedgerRequests::Stake(const v1::LedgerStakeRequest& request) {
  IG_RETURN_IF_ERROR(CheckAccount(request.account()));
  IG_RETURN_IF_ERROR(
      ledger_->Stake(request.account(), request.micros(), request.unstake(), request.request_id(), clock_->NowMs()));
  return Balance(request.account());
}

}  // namespace idlegrid::coordinator
