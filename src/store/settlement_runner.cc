#include "store/settlement_runner.h"

namespace idlegrid::store {

Result<ledger::SettledBatch> ExportSettledBatch(Store& store, ledger::SettlementSink& sink, size_t max_postings) {
  IG_ASSIGN_OR_RETURN(int64_t cursor, store.SettlementCursor(sink.Name()));
  // Read more than the batch may hold: the batch skips unsettled postings.
  IG_ASSIGN_OR_RETURN(std::vector<ledger::BookedPosting> booked,
                      store.LedgerPostings(cursor, max_postings * 4 + 16, std::nullopt));
  IG_ASSIGN_OR_RETURN(ledger::SettledBatch batch, ledger::MakeSettledBatch(cursor, booked, max_postings));
  if (batch.last_seq == cursor) return batch;
  IG_RETURN_IF_ERROR(sink.Export(batch).WithContext("settlement sink " + sink.Name()));
  IG_RETURN_IF_ERROR(store.SetSettlementCursor(sink.Name(), batch.last_seq));
  return batch;
}

}  // namespace idlegrid::store
