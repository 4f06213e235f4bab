#include "ledger/settlement.h"

namespace idlegrid::ledger {

bool IsSettlement(Reason reason) {
  switch (reason) {
    case Reason::kRelease:
    case Reason::kRefund:
    case Reason::kClawback:
    case Reason::kSlash:
    case Reason::kWithdraw:
      return true;
    case Reason::kDeposit:
    case Reason::kEscrow:
    case Reason::kCharge:
    case Reason::kStake:
    case Reason::kUnstake:
      return false;
  }
  return false;
}

Result<SettledBatch> MakeSettledBatch(int64_t after_seq, const std::vector<BookedPosting>& booked,
                                      size_t max_postings) {
  SettledBatch batch;
  batch.after_seq = after_seq;
  batch.last_seq = after_seq;
  for (const BookedPosting& b : booked) {
    if (b.seq <= batch.last_seq) {
      return Status::Internal("settlement: posting " + std::to_string(b.seq) + " is out of order after " +
                              std::to_string(batch.last_seq));
    }
    if (IsSettlement(b.posting.reason)) {
      // Stop before the first one that does not fit, so the cursor never
      // skips a settlement posting.
      if (batch.postings.size() >= max_postings) break;
      batch.postings.push_back(b);
      for (const Entry& entry : b.posting.entries) batch.net[entry.account] += entry.amount;
    }
    batch.last_seq = b.seq;
  }
  for (auto it = batch.net.begin(); it != batch.net.end();) {
    it = it->second == 0 ? batch.net.erase(it) : std::next(it);
  }
  return batch;
}

Status LedgerSettlement::Export(const SettledBatch& batch) {
  if (batch.last_seq <= last_seq_ && batch.after_seq < last_seq_) return Status::Ok();  // a repeat
  for (const BookedPosting& b : batch.postings) IG_RETURN_IF_ERROR(CheckBalanced(b.posting));
  last_seq_ = batch.last_seq;
  return Status::Ok();
}

}  // namespace idlegrid::ledger
