#pragma once
// The capacity ledger: the one rule for what a node has left after the holds
// on it, and whether a new hold fits. Pure: plain values in and out.
//
// The scheduler's snapshot (sched/snapshot.h), the coordinator's accounting
// of active attempts (coordinator/advertisements.cc, NodeTable::Views), the stores' batch admission
// (capacity/batch_admission.h) and the agent's own admission of an assignment
// and its advertisement (agent/attempt_host.cc, agent/advertiser.cc) all keep
// their numbers in it, through capacity/node_capacity.h, so a plan made from
// a fresh snapshot always passes the stores' check, and every layer refuses
// the same things.
//
// The rule, per node:
// - CPU: held cores + the request <= capacity (+ 1e-9, cores are fractions);
// - memory and disk: held bytes + the request <= capacity (kUnlimited: not
//   checked);
// - per device named by a hold:
//   - a whole claim takes the device alone: it needs no other tenant and at
//     least its VRAM free, and leaves no compute and no VRAM to anyone;
//   - a share claim takes milli-GPUs of compute (0..999; 0 for a VRAM slice
//     without a compute share) and bytes of VRAM: shares add up to at most
//     kWholeGpuMilli, VRAM to at most the device's capacity;
//   - any tenant, a VRAM slice without compute included, means the device can
//     no longer be given whole.
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace idlegrid::capacity {

inline constexpr uint32_t kWholeGpuMilli = 1000;
inline constexpr uint64_t kUnlimited = std::numeric_limits<uint64_t>::max();

// What a hold takes of each device it names.
struct DeviceClaim {
  bool whole = true;
  uint32_t milli = kWholeGpuMilli;  // a share: compute held, 0..999
  uint64_t vram = 1;                // whole: VRAM it needs free (>= 1); share: VRAM it holds
};

// The claim of an attempt as it is stored (placement gpu_milli, the job's
// gpu_memory per device): a share is 1..999 milli, or 0 milli with VRAM (a
// VRAM slice without compute); 1000 milli, or 0 milli without VRAM (rows from
// before milli were stored), is the whole device, whatever VRAM it names.
DeviceClaim ClaimOf(uint32_t gpu_milli, uint64_t gpu_memory);

// One device's capacity and what is held of it.
class DeviceLedger {
 public:
  // `vram_capacity`: allocatable with no tenant (total less the owner's
  // reserve); kUnlimited for a device whose size is not known.
  explicit DeviceLedger(uint64_t vram_capacity = kUnlimited) : vram_capacity_(vram_capacity) {}
  // A device others already use, known only by what is free of it (a view
  // computed elsewhere): `free_milli` < 1000 counts as a tenant, and 999 as
  // a tenant holding no compute.
  static DeviceLedger FromFree(uint64_t vram_capacity, uint32_t free_milli, uint64_t free_vram);

  uint32_t FreeMilli() const;  // 1000: no tenant; 0 when held whole
  uint64_t FreeVram() const;   // 0 when held whole; kUnlimited if not known
  uint64_t vram_capacity() const { return vram_capacity_; }
  bool HasTenant() const { return tenants_ > 0; }

  bool Fits(const DeviceClaim& c) const;
  // Take records `c` whether or not it fits (holds read from the store are
  // facts, even on a node that shrank); Give removes one Take of `c`.
  void Take(const DeviceClaim& c);
  void Give(const DeviceClaim& c);

 private:
  uint64_t vram_capacity_;
  uint64_t vram_held_ = 0;
  uint32_t milli_held_ = 0;
  uint32_t tenants_ = 0;
  uint32_t whole_tenants_ = 0;
};

// What one hold takes of its node: cores, bytes, and `device` of each device
// it names.
struct Claim {
  double cpu = 0;
  uint64_t memory = 0;
  uint64_t disk = 0;
  DeviceClaim device;
};

// One node's capacity and holds; devices by index (0..).
class NodeLedger {
 public:
  NodeLedger() = default;
  NodeLedger(double cpu, uint64_t memory, uint64_t disk = kUnlimited)
      : cpu_capacity_(cpu), memory_capacity_(memory), disk_capacity_(disk) {}

  // Adds a device; returns its index.
  size_t AddDevice(DeviceLedger d) {
    devices_.push_back(d);
    return devices_.size() - 1;
  }

  double cpu_capacity() const { return cpu_capacity_; }
  uint64_t memory_capacity() const { return memory_capacity_; }  // kUnlimited: not checked
  double FreeCpu() const;                                        // capacity - held, floored at 0
  uint64_t FreeMemory() const;                                   // floored at 0; kUnlimited if not checked
  uint64_t FreeDisk() const;                                     // floored at 0; kUnlimited if not checked
  bool CpuFits(double cores) const;
  bool MemoryFits(uint64_t bytes) const;
  bool DiskFits(uint64_t bytes) const;
  const std::vector<DeviceLedger>& devices() const { return devices_; }

  // Ok if `c` fits next to every hold, on each device index in `devices`
  // (an index past the last device, or named twice, is ignored); otherwise
  // FailedPrecondition naming the first resource short, a device by its
  // entry in `device_names` when given, else by index.
  Status Check(const Claim& c, std::span<const uint32_t> devices,
               const std::vector<std::string>* device_names = nullptr) const;
  bool Fits(const Claim& c, std::span<const uint32_t> devices) const { return Check(c, devices).ok(); }
  // Records `c` without checking; Release removes what one Take added.
  void Take(const Claim& c, std::span<const uint32_t> devices);
  void Release(const Claim& c, std::span<const uint32_t> devices);

 private:
  double cpu_capacity_ = 0;
  double cpu_held_ = 0;
  uint64_t memory_capacity_ = 0;
  uint64_t memory_held_ = 0;
  uint64_t disk_capacity_ = kUnlimited;
  uint64_t disk_held_ = 0;
  std::vector<DeviceLedger> devices_;
};

}  // namespace idlegrid::capacity
