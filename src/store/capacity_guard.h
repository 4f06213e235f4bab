#pragma once
// The database's side of the dual-layer concurrency control (R9): inside the
// transaction that commits a batch of assignments, the store loads what each
// node of the batch offers (its stored NodeInfo and Advertisement) and what
// its active attempts already hold, then admits the batch's attempts one by
// one, in order, only while they still fit. The coordinator's snapshot may be
// stale or another coordinator may have committed first: whatever does not
// fit any more is skipped and goes back to the queue for re-planning.
//
// The rule is the capacity ledger's (capacity/ledger.h), the one the
// coordinator's snapshot uses too, so a plan made from a fresh snapshot always
// passes. A node without stored capacity (no row, or 0 cores: nothing
// advertised yet) is not checked. Header-only: both backends include it.
#include <string>
#include <unordered_map>

#include "capacity/node_capacity.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::store {

using CapacityHold = capacity::AttemptHold;
using capacity::SplitDeviceList;

class CapacityGuard {
 public:
  // Starts checking `node_id` with what its stored info and advertisement
  // offer. A node with 0 cores is left unchecked. Returns whether it is checked.
  bool AddNode(const std::string& node_id, const v1::NodeInfo& info, const v1::Advertisement& ad) {
    if (info.cpu_cores() == 0) return false;
    nodes_.insert_or_assign(node_id, capacity::NodeCapacity::Offered(info, ad));
    return true;
  }

  // Records what an active attempt holds (whether or not it fits).
  void Hold(const std::string& node_id, const CapacityHold& h) {
    if (auto it = nodes_.find(node_id); it != nodes_.end()) it->second.Hold(h);
  }

  // Holds `h` if it fits next to everything held so far; false (nothing
  // held) if not. An unchecked node takes anything.
  bool TryHold(const std::string& node_id, const CapacityHold& h) {
    auto it = nodes_.find(node_id);
    return it == nodes_.end() || it->second.TryHold(h).ok();
  }

 private:
  std::unordered_map<std::string, capacity::NodeCapacity> nodes_;
};

}  // namespace idlegrid::store
