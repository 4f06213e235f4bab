#pragma once
// The coordinator's half of a receipt: what it recorded about an attempt
// (times, end state, price) around the node's signed statement. Pure.
#include <string>

#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::receipt {

// A receipt, not yet countersigned, for `recorded` (the attempt as the store
// holds it after the exit was applied) on a node of `provider`. The charge is
// ChargeMicro(price, finished - started) on the coordinator's clock, the
// times it bills by; an attempt that never started is charged nothing.
v1::Receipt AssembleReceipt(const v1::ReceiptStatement& statement, const std::string& node_signature,
                            const std::string& node_public_key, const v1::Attempt& recorded,
                            const std::string& provider);

}  // namespace idlegrid::receipt
