#pragma once
// A receipt as the JSON file users keep and `receipt verify` reads: protobuf's
// JSON with the proto field names, indented. One function, so that
// `idlegrid receipt --json` and GET /v1/jobs/ID/receipt print the same bytes.
#include <string>

#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::receipt {

// The receipt's JSON (never fails for a message of this build).
std::string ReceiptJson(const v1::Receipt& receipt);

}  // namespace idlegrid::receipt
