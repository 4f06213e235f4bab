#pragma once
// The scheduler's working copy of a snapshot: NodeViews turned into compact
// numbers once (parsed versions, interned GPU models, and each node's free
// capacity as a capacity ledger), and a task turned into the Demand the
// stages check. Internal to src/sched; exposed for its tests and benchmarks.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "capacity/ledger.h"
#include "market/market.h"
#include "sched/policy.h"
#include "sched/scheduler.h"

namespace idlegrid::sched {

// Trust tiers (NodeView::trust_tier, TaskView::min_trust_tier).
inline constexpr int kTrustUnverified = 0;
inline constexpr int kTrustMeasured = 1;       // readiness benchmark passed; real GPUs measured
inline constexpr int kTrustOwnerVerified = 2;  // the owner is known to the grid operator

// Devices past this index on one node are not scheduled (masks are 64 bits).
inline constexpr size_t kMaxDevicesPerNode = 64;
inline constexpr uint32_t kWholeGpuMilli = capacity::kWholeGpuMilli;

using DeviceMask = uint64_t;

// What does not change while a plan is made; what is free lives in the
// node's ledger (NodeState::ledger), device for device.
struct DeviceState {
  int compute_capability = -1;  // major*10 + minor; -1 unknown
  int cuda_version = -1;        // major*1000 + minor; -1 unknown
  bool trusted = false;         // measured and not simulated
  // Offered for ordinary work (GpuDevice.unavailable_reason empty); when not,
  // whether a readiness benchmark may still use it (it awaits measurement,
  // its owner does not hold it back).
  bool ready = true;
  bool benchmark_may_use = false;
  uint32_t model = 0;    // index into Snapshot::models
  double ask = 0;        // per GPU-hour
  double headroom = -1;  // 1 - power draw / limit; < 0 unknown
};

struct NodeState {
  const NodeView* view = nullptr;  // strings, runtimes, enforcement (owned by the Snapshot)
  uint32_t version = 0;            // bumped by every reservation
  double cpu_total = 0;            // offered cores, for spread/pack
  double cpu_ask = 0;              // per core-hour
  uint64_t tiebreak = 0;           // hash(seed, node id): breaks score ties
  // What is free now: cores, memory, disk and each device's compute and VRAM
  // (the same rule the coordinator and the store's guard use).
  capacity::NodeLedger ledger;
  std::vector<DeviceState> devices;  // parallel to ledger.devices()

  double cpu_free() const { return ledger.FreeCpu(); }
  uint64_t memory_free() const { return ledger.FreeMemory(); }
  uint64_t disk_free() const { return ledger.FreeDisk(); }
  uint32_t free_milli(size_t device) const { return ledger.devices()[device].FreeMilli(); }
  uint64_t free_vram(size_t device) const { return ledger.devices()[device].FreeVram(); }
};

struct Snapshot {
  Snapshot() = default;
  Snapshot(Snapshot&&) = default;
  Snapshot& operator=(Snapshot&&) = default;
  Snapshot(const Snapshot&) = delete;  // nodes point into views
  std::vector<NodeView> views;         // sorted by id
  std::vector<NodeState> nodes;        // parallel to views
  std::vector<std::string> models;
  std::map<std::string, uint32_t, std::less<>> model_ids;
  std::map<std::string, uint32_t, std::less<>> node_ids;
  double max_gpu_ask = 0;
  double max_cpu_ask = 0;
};

// Takes ownership of `nodes`; deterministic for a given multiset of nodes and seed.
Snapshot BuildSnapshot(std::vector<NodeView> nodes, uint64_t seed);

// Parses "8.6" -> 86 and "12.4" -> 12004; -1 for "" or garbage.
int ParseComputeCapability(const std::string& s);
int ParseCudaVersion(const std::string& s);

// What one task needs, in the snapshot's terms. Two tasks with equal
// ShapeKey are interchangeable for every stage except exclusions.
struct Demand {
  const TaskView* task = nullptr;
  const SchedulingPolicy* policy = nullptr;
  std::string runtime;
  double cpu = 0;
  uint64_t memory = 0;
  uint64_t disk = 0;
  uint32_t gpus = 0;   // devices held
  bool share = false;  // a fraction of one device, co-located with others
  uint32_t milli = 0;  // held of each device (1000 whole)
  uint64_t vram = 0;   // needed free on each device (held, for a share)
  int min_cc = -1;
  int min_cuda = -1;
  bool any_model = true;
  std::vector<uint32_t> models;  // allowed model ids (sorted) when !any_model
  market::Bid bid;
  bool price_first = false;

  // What a placement takes of its node, in the ledger's terms.
  capacity::DeviceClaim device_claim() const { return {!share, share ? milli : kWholeGpuMilli, vram}; }
  capacity::Claim claim() const { return {cpu, memory, disk, device_claim()}; }
};

Demand MakeDemand(const TaskView& task, const SchedulingPolicy& policy, const Snapshot& snap);
std::string ShapeKey(const Demand& d);

// Takes what `d` needs from `node`, holding the devices in `devices`.
void ReserveOn(NodeState* node, const Demand& d, DeviceMask devices);

}  // namespace idlegrid::sched
