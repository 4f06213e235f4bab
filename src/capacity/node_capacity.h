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

// A device's memory less the owner's per-device reserve, floored at 0: what
// it offers with no tenant. The only place that is worked out.
uint64_t UsableVram(uint64_t total, uint64_t reserve);

// Whether a job of `r` takes a VRAM slice of one device (a share of its memory
// without a compute share): one GPU, with memory named, not exclusive.
bool IsVramSlice(const v1::Resources& r, bool exclusive_gpu);
// The milli-GPUs an attempt of `spec` holds on each device placed for it, as
// the scheduler places it: 1000 for a device held whole, 1..999 for a
// compute share, 0 for a VRAM slice (and for a job without GPUs).
uint32_t PlacedMilli(const v1::JobSpec& spec);

// What one attempt holds (or would hold) on its node, as stored.
struct AttemptHold {
  double cpu = 0;
  uint64_t memory = 0;
  uint64_t gpu_memory = 0;           // the job's per device; with gpu_milli 0: a VRAM slice
  uint32_t gpu_milli = 0;            // the placement's per device (ClaimOf says what it means)
  std::vector<std::string> devices;  // uuids
};
// The hold of an attempt of `spec` placed on `devices`: what the agent checks
// an assignment against, the same claim the coordinator stored for it.
AttemptHold HoldOf(const v1::JobSpec& spec, std::vector<std::string> devices);

class NodeCapacity {
 public:
  // What `info` and `ad` offer: cores less the owner's reserve, memory (0 if
  // not reported: nothing that needs memory fits), disk not checked, and each
  // advertised device's memory less the owner's per-device reserve.
  static NodeCapacity Offered(const v1::NodeInfo& info, const v1::Advertisement& ad);
  // The same from the agent's side: its own description, its owner's policy
  // and the devices it would advertise.
  static NodeCapacity Offered(const v1::NodeInfo& info, const v1::LocalPolicy& policy,
                              const std::vector<v1::GpuDevice>& devices);

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
  // Sets what advertised device `index` (ledger order) has reserved and left
  // after the holds, as advertisements and node listings show it.
  void Describe(size_t index, uint64_t reserve, v1::GpuDevice* d) const;
  // Devices in ledger order: the advertised ones first, then unlisted ones holds named.
  const std::vector<std::string>& device_uuids() const { return uuids_; }

 private:
  // Indices of `h`'s devices. An unlisted uuid is skipped (nothing holds it
  // yet and its size is unknown: anything fits), or added by AddIndices.
  std::vector<uint32_t> Indices(const AttemptHold& h) const;
  std::vector<uint32_t> AddIndices(const AttemptHold& h);

  template <class Devices>
  static NodeCapacity Build(const v1::NodeInfo& info, const v1::LocalPolicy& policy, const Devices& devices);

  NodeLedger ledger_;
  std::vector<std::string> uuids_;
};

// Splits a stored "a,b," list (device uuids, excluded nodes) into `out`
// (cleared first); empty items are dropped. store/codec.h uses it too.
void SplitDeviceList(std::string_view s, std::vector<std::string>* out);

}  // namespace idlegrid::capacity
