#pragma once
// The database's side of the dual-layer concurrency control (R9): inside the
// transaction that commits a batch of assignments, the store loads what each
// node of the batch offers (its stored NodeInfo and Advertisement) and what
// its active attempts already hold, then admits the batch's attempts one by
// one, in order, only while they still fit. The coordinator's snapshot may be
// stale or another coordinator may have committed first: whatever does not
// fit any more is skipped and goes back to the queue for re-planning.
//
// The rules mirror the coordinator's own accounting (NodeViewsLocked,
// AccountedGpusLocked), so a plan made from a fresh snapshot always passes:
// - CPU: held cores <= info.cpu_cores - advertisement.policy.reserved_cpu;
// - memory: held bytes <= info.memory_bytes (when known);
// - per GPU device named by the attempt:
//   - a device held whole (gpu_memory 0 and gpu_milli 0 or 1000) is held by
//     that attempt alone: it takes no other tenant, and goes whole only to an
//     attempt when no other holds any of it;
//   - compute shares add up to at most 1000 milli-GPUs (whole: 1000, a share:
//     its gpu_milli, a VRAM slice with no compute share: 0);
//   - VRAM slices (gpu_memory > 0) add up to at most the device's
//     memory_total_bytes - policy.reserved_gpu_memory_bytes (devices listed
//     in the advertisement's inventory; an unlisted device only gets the two
//     checks above).
// A node without stored capacity (no row, or 0 cores: nothing advertised
// yet) is not checked. Header-only: both backends include it.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::store {

// What one attempt holds (or would hold) on its node.
struct CapacityHold {
  double cpu = 0;
  uint64_t memory = 0;
  uint64_t gpu_memory = 0;  // per device; 0: no VRAM slice
  uint32_t gpu_milli = 0;   // compute share per device; 0 or >= 1000: whole (unless a VRAM slice)
  std::vector<std::string> devices;

  bool whole() const { return gpu_memory == 0 && (gpu_milli == 0 || gpu_milli >= 1000); }
  // Compute held of each device: a share its milli, a VRAM slice without a
  // share none, anything else the whole device.
  uint32_t milli() const {
    if (gpu_milli > 0 && gpu_milli < 1000) return gpu_milli;
    return gpu_memory > 0 && gpu_milli == 0 ? 0 : 1000;
  }
};

class CapacityLedger {
 public:
  static constexpr uint32_t kWholeMilli = 1000;

  // Starts checking `node_id` with what its stored info and advertisement
  // offer. A node with 0 cores is left unchecked. Returns whether it is checked.
  bool AddNode(const std::string& node_id, const v1::NodeInfo& info, const v1::Advertisement& ad) {
    if (info.cpu_cores() == 0) return false;
    Node& n = nodes_[node_id];
    n.cpu_total = static_cast<double>(info.cpu_cores()) - ad.policy().reserved_cpu();
    n.memory_total = info.memory_bytes();
    const uint64_t reserved = ad.policy().reserved_gpu_memory_bytes();
    for (const auto& d : ad.inventory().gpus().devices()) {
      Device& dev = n.devices[d.uuid()];
      dev.listed = true;
      dev.vram_capacity = d.memory_total_bytes() > reserved ? d.memory_total_bytes() - reserved : 0;
    }
    return true;
  }

  bool Checks(const std::string& node_id) const { return nodes_.count(node_id) > 0; }

  // Whether `h` fits on the node next to everything held so far.
  bool Fits(const std::string& node_id, const CapacityHold& h) const {
    auto it = nodes_.find(node_id);
    if (it == nodes_.end()) return true;
    const Node& n = it->second;
    if (n.cpu_used + h.cpu > n.cpu_total + 1e-9) return false;
    if (n.memory_total > 0 && n.memory_used + h.memory > n.memory_total) return false;
    for (size_t i = 0; i < h.devices.size(); ++i) {
      bool repeated = false;  // the same uuid twice in one attempt counts once
      for (size_t k = 0; k < i; ++k) repeated |= h.devices[k] == h.devices[i];
      if (repeated) continue;
      auto d = n.devices.find(h.devices[i]);
      if (d == n.devices.end()) continue;  // nothing holds it yet (and it is not listed)
      const Device& dev = d->second;
      if (dev.whole_holders > 0 || (h.whole() && dev.holders > 0)) return false;
      if (dev.milli + h.milli() > kWholeMilli) return false;
      if (h.gpu_memory > 0 && dev.listed && dev.vram_slices + h.gpu_memory > dev.vram_capacity) return false;
    }
    return true;
  }

  // Records what `h` holds (an active attempt, or one just admitted).
  void Hold(const std::string& node_id, const CapacityHold& h) {
    auto it = nodes_.find(node_id);
    if (it == nodes_.end()) return;
    Node& n = it->second;
    n.cpu_used += h.cpu;
    n.memory_used += h.memory;
    for (size_t i = 0; i < h.devices.size(); ++i) {
      bool repeated = false;
      for (size_t k = 0; k < i; ++k) repeated |= h.devices[k] == h.devices[i];
      if (repeated) continue;
      Device& dev = n.devices[h.devices[i]];
      if (h.whole()) ++dev.whole_holders;
      ++dev.holders;
      dev.milli += h.milli();
      dev.vram_slices += h.gpu_memory;
    }
  }

  // Fits, then Hold. False (nothing held) if it does not fit.
  bool TryHold(const std::string& node_id, const CapacityHold& h) {
    if (!Fits(node_id, h)) return false;
    Hold(node_id, h);
    return true;
  }

 private:
  struct Device {
    bool listed = false;          // in the advertisement's inventory
    uint64_t vram_capacity = 0;   // memory_total - owner's reserve
    uint64_t vram_slices = 0;
    uint32_t milli = 0;
    uint32_t whole_holders = 0;
    uint32_t holders = 0;
  };
  struct Node {
    double cpu_total = 0;
    double cpu_used = 0;
    uint64_t memory_total = 0;  // 0: not known, not checked
    uint64_t memory_used = 0;
    std::unordered_map<std::string, Device> devices;
  };
  std::unordered_map<std::string, Node> nodes_;
};

// Splits a stored "uuid,uuid," device list into `out` (cleared first).
inline void SplitDeviceList(std::string_view s, std::vector<std::string>* out) {
  out->clear();
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string_view::npos) end = s.size();
    if (end > start) out->emplace_back(s.substr(start, end - start));
    start = end + 1;
  }
}

}  // namespace idlegrid::store
