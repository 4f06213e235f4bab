#pragma once
// Decoding stored values shared by the PostgreSQL store's files.
#include <string>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "store/codec.h"
#include "store/postgres/pg_connection.h"
#include "store/store.h"

namespace idlegrid::store::pg {

using store::ParseSpec;
using store::SplitCommaList;

// Bytes in bytea's hex input form (\x0a1b...), for an element of a
// Params::TextArray cast to bytea[].
std::string ByteaLiteral(const std::string& bytes);

// Columns 0..7 of `row`: id, job_id, idx, node_id, state, cpu, memory, gpus.
ActiveAttempt ReadActiveAttempt(const Rows& rows, int row);

}  // namespace idlegrid::store::pg
