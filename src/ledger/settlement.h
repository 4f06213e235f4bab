#pragma once
// Settlement (docs/ledger.md): what leaves the ledger's books for the outside
// world is exported in batches, apart from verification and from the postings
// themselves. A SettlementSink receives settled batches in order; the built-in
// sink is the ledger itself (the books are the settlement, nothing else to do).
// An on-chain or bank adapter is another sink: it needs the batch and its
// cursor, never a change to the plans or the books.
//
// A settled posting is one that is final for someone outside the grid:
// money released to a provider, refunded or clawed back to a requester,
// slashed, or withdrawn. Escrows, charges and stakes are still in flight.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "ledger/accounts.h"
#include "ledger/posting.h"

namespace idlegrid::ledger {

// Whether postings of this reason are final (see above).
bool IsSettlement(Reason reason);

// A posting as the books hold it: its place in the book's order and when it
// was applied.
struct BookedPosting {
  int64_t seq = 0;  // > 0, increasing in the order postings were applied
  int64_t applied_ms = 0;
  Posting posting;
};

struct SettledBatch {
  int64_t after_seq = 0;                // the cursor this batch starts after
  int64_t last_seq = 0;                 // the cursor after it (the last posting's seq; after_seq if empty)
  std::vector<BookedPosting> postings;  // settlement postings only, in seq order
  // Net movement per owner account (world and grid accounts included) over
  // the batch: what an adapter pays out or collects.
  std::map<AccountKey, Micros> net;
};

// The batch of the settlement postings among `booked` (in seq order, all
// after `after_seq`), at most `max_postings` of them. The cursor advances
// past non-settlement postings it skips, so they are never looked at again.
// Internal if `booked` is out of order or at/before the cursor.
Result<SettledBatch> MakeSettledBatch(int64_t after_seq, const std::vector<BookedPosting>& booked, size_t max_postings);

class SettlementSink {
 public:
  virtual ~SettlementSink() = default;
  // "ledger", "chain:<name>", for logs and `ledger history`.
  virtual std::string Name() const = 0;
  // Exports one batch. Batches arrive in cursor order; after a crash the
  // same batch (same after_seq) may be offered again, so a sink must treat a
  // repeat as done. Ok means the caller may advance its cursor to
  // batch.last_seq; an error leaves the cursor where it was (retry later).
  // Called from one thread at a time.
  virtual Status Export(const SettledBatch& batch) = 0;
};

// The built-in sink: the ledger's books already are the settlement. Export
// checks that each posting balances (an Internal error otherwise) and keeps
// the last cursor it accepted, nothing else.
class LedgerSettlement final : public SettlementSink {
 public:
  std::string Name() const override { return "ledger"; }
  Status Export(const SettledBatch& batch) override;
  int64_t last_seq() const { return last_seq_; }

 private:
  int64_t last_seq_ = 0;
};

}  // namespace idlegrid::ledger
