#pragma once
// Allocatable capacity arithmetic (R4). Pure: plain values in, plain values out.
// Allocatable = what the owner offers - what the owner holds back - what
// running attempts already hold, floored at 0, so a 24 GiB device with 18 GiB
// held cannot take a 20 GiB job.
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::advert {

// Memory held on one GPU (by uuid) by one running attempt.
struct DeviceHold {
  std::string uuid;
  uint64_t memory_bytes = 0;
};

// Returns copies of `devices` with reserved_memory_bytes set to the owner's
// per-device reserve (policy.reserved_gpu_memory_bytes, capped at the device's
// memory_total_bytes) and allocatable_memory_bytes = total - reserve - the sum
// of holds naming the device's uuid, floored at 0. Order is preserved. Holds
// with an empty uuid or naming no listed device are ignored. The device's live
// memory_used_bytes is not subtracted: that is the caller's decision.
std::vector<v1::GpuDevice> ComputeAllocatable(const std::vector<v1::GpuDevice>& devices,
                                              const v1::LocalPolicy& policy,
                                              const std::vector<DeviceHold>& holds);

// True if `gpus` distinct devices each have allocatable_memory_bytes >=
// memory_per_gpu (use the output of ComputeAllocatable). On success `chosen`
// (if not null) receives their uuids, least leftover memory first (best fit,
// so big devices stay free for big jobs), ties broken by uuid then index so
// the choice is deterministic. On failure `chosen` is cleared. gpus == 0
// always fits with nothing chosen.
bool FitGpus(const std::vector<v1::GpuDevice>& devices, uint32_t gpus, uint64_t memory_per_gpu,
             std::vector<std::string>* chosen);

// offered - reserved - held, floored at 0. Negative reserved/held count as 0;
// NaN inputs yield 0.
double AllocatableCpu(double offered, double reserved, double held);

// offered - held, floored at 0.
uint64_t AllocatableMemory(uint64_t offered, uint64_t held);

// What a new assignment asks of a node, checked by the agent against its own
// accounting before it acknowledges: the coordinator's view may lag (an
// attempt it ended may still be tearing down here), and a node must never run
// more than it advertises.
struct FitRequest {
  double cpu = 0;
  uint64_t memory_bytes = 0;
  std::vector<std::string> device_uuids;
  uint64_t gpu_memory_bytes = 0;  // per device
};
// Ok if `request` fits in `allocatable_cpu`, `allocatable_memory` and, for
// each named device listed in `devices` (output of ComputeAllocatable), its
// allocatable memory; devices not listed are not judged here. Otherwise
// FailedPrecondition naming what is short, by how much.
Status CheckFits(double allocatable_cpu, uint64_t allocatable_memory, const std::vector<v1::GpuDevice>& devices,
                 const FitRequest& request);

}  // namespace idlegrid::advert
