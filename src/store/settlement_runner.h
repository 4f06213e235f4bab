#pragma once
// Exports the ledger's settled postings to a settlement sink: reads the
// sink's cursor, the postings after it, makes the batch (ledger::
// MakeSettledBatch), hands it to the sink and, once the sink accepts it,
// advances the stored cursor. A crash between the export and the cursor
// update offers the same batch again, which sinks treat as done.
#include <cstddef>

#include "common/status.h"
#include "ledger/settlement.h"
#include "store/store.h"

namespace idlegrid::store {

// One batch of at most `max_postings` settled postings, returned as the sink
// accepted it; the cursor moved from batch.after_seq to batch.last_seq
// (equal: nothing new; the batch may hold no posting yet have moved past
// unsettled ones, so loop until they are equal). The sink's error is
// returned with the cursor left where it was. Not for concurrent use with
// the same sink.
Result<ledger::SettledBatch> ExportSettledBatch(Store& store, ledger::SettlementSink& sink, size_t max_postings);

}  // namespace idlegrid::store
