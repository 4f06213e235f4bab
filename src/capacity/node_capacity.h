#pragma once
// A node's ledger (capacity/ledger.h) as the coordinator and the store see
// it: built from what the node advertises, with devices named by uuid and
// holds as attempts store them. The coordinator's snapshot and the store's
// commit guard both start here, so they agree on what a node offers.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "capacity/ledger.h"
#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::capacity {

// What one attempt holds (or would hold) on its node, as stored.
struct AttemptHold {
  double cpu = 0;
  uint64_t memory = 0;
  uint64_t gpu_memory = 0;  // the job's per device; with gpu_milli 0: a VRAM slice
  uint32_t gpu_milli = 0;   // the placement's per device (ClaimOf says what it means)
  std::vector<std::string> devices;  // uuids
};

class NodeCapacity {
 public:
  // What `info` and `ad` offer: cores less the owner's reserve, memory (0 if
  // not reported: nothing that needs memory fits), disk not checked, and each
  // advertised device's memory less the owner's per-device reserve.
  static NodeCapacity Offered(const v1::NodeInfo& info, const v1::Advertisement& ad);

  // Ok if `h` fits next to every hold so far, else FailedPrecondition with
  // the resource short. A device the advertisement does not list gets only
  // the tenancy and compute rules (its size is not known).
  Status Check(const AttemptHold& h) const;
  // Records `h` without checking (active attempts are facts); an unlisted
  // device is added. Release removes what one Hold added.
  void Hold(const AttemptHold& h);
  void Release(const AttemptHold& h);
  // Check, then Hold; nothing is held if it does not fit.
  Status TryHold(const AttemptHold& h);

  const NodeLedger& ledger() const { return ledger_; }
  // Devices in ledger order: the advertised ones first, then unlisted ones holds named.
  const std::vector<std::string>& device_uuids() const { return uuids_; }

 private:
  // Indices of `h`'s devices. An unlisted uuid is skipped (nothing holds it
  // yet and its size is unknown: anything fits), or added by AddIndices.
  std::vector<uint32_t> Indices(const AttemptHold& h) const;
  std::vector<uint32_t> AddIndices(const AttemptHold& h);

  NodeLedger ledger_;
  std::vector<std::string> uuids_;
};

// Splits a stored "a,b," list (device uuids, excluded nodes) into `out`
// (cleared first); empty items are dropped. store/codec.h uses it too.
void SplitDeviceList(std::string_view s, std::vector<std::string>* out);

}  // namespace idlegrid::capacity
