#include "advert/allocatable.h"

#include <algorithm>
#include <limits>

namespace idlegrid::advert {
namespace {

uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  return b > std::numeric_limits<uint64_t>::max() - a ? std::numeric_limits<uint64_t>::max()
                                                      : a + b;
}

uint64_t FlooredSub(uint64_t a, uint64_t b) { return b >= a ? 0 : a - b; }

uint64_t HeldOn(const std::string& uuid, const std::vector<DeviceHold>& holds) {
  uint64_t held = 0;
  if (uuid.empty()) return held;
  for (const DeviceHold& hold : holds) {
    if (hold.uuid == uuid) held = SaturatingAdd(held, hold.memory_bytes);
  }
  return held;
}

}  // namespace

std::vector<v1::GpuDevice> ComputeAllocatable(const std::vector<v1::GpuDevice>& devices,
                                              const v1::LocalPolicy& policy,
                                              const std::vector<DeviceHold>& holds) {
  std::vector<v1::GpuDevice> out = devices;
  for (v1::GpuDevice& device : out) {
    const uint64_t total = device.memory_total_bytes();
    const uint64_t reserved = std::min(policy.reserved_gpu_memory_bytes(), total);
    device.set_reserved_memory_bytes(reserved);
    device.set_allocatable_memory_bytes(FlooredSub(total - reserved, HeldOn(device.uuid(), holds)));
  }
  return out;
}

bool FitGpus(const std::vector<v1::GpuDevice>& devices, uint32_t gpus, uint64_t memory_per_gpu,
             std::vector<std::string>* chosen) {
  std::vector<const v1::GpuDevice*> candidates;
  for (const v1::GpuDevice& device : devices) {
    if (device.allocatable_memory_bytes() >= memory_per_gpu) candidates.push_back(&device);
  }
  if (candidates.size() < gpus) {
    if (chosen != nullptr) chosen->clear();
    return false;
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const v1::GpuDevice* a, const v1::GpuDevice* b) {
              if (a->allocatable_memory_bytes() != b->allocatable_memory_bytes()) {
                return a->allocatable_memory_bytes() < b->allocatable_memory_bytes();
              }
              if (a->uuid() != b->uuid()) return a->uuid() < b->uuid();
              return a->index() < b->index();
            });
  if (chosen != nullptr) {
    chosen->clear();
    for (uint32_t i = 0; i < gpus; ++i) chosen->push_back(candidates[i]->uuid());
  }
  return true;
}

double AllocatableCpu(double offered, double reserved, double held) {
  const double remaining = offered - std::max(reserved, 0.0) - std::max(held, 0.0);
  return remaining > 0 ? remaining : 0.0;  // also maps NaN to 0
}

uint64_t AllocatableMemory(uint64_t offered, uint64_t held) { return FlooredSub(offered, held); }

Status CheckFits(double allocatable_cpu, uint64_t allocatable_memory, const std::vector<v1::GpuDevice>& devices,
                 const FitRequest& request) {
  // Cores are fractional (250m): compare with a tolerance for the sums.
  constexpr double kEpsilon = 1e-6;
  if (request.cpu > allocatable_cpu + kEpsilon) {
    return Status::FailedPrecondition("needs " + std::to_string(request.cpu) + " cores, " +
                                     std::to_string(allocatable_cpu) + " free on this node");
  }
  if (request.memory_bytes > allocatable_memory) {
    return Status::FailedPrecondition("needs " + std::to_string(request.memory_bytes) + " bytes of memory, " +
                                     std::to_string(allocatable_memory) + " free on this node");
  }
  for (const auto& uuid : request.device_uuids) {
    for (const auto& d : devices) {
      if (d.uuid() == uuid && request.gpu_memory_bytes > d.allocatable_memory_bytes()) {
        return Status::FailedPrecondition("GPU " + uuid + ": needs " + std::to_string(request.gpu_memory_bytes) +
                                         " bytes, " + std::to_string(d.allocatable_memory_bytes()) + " free");
      }
    }
  }
  return Status::Ok();
}

}  // namespace idlegrid::advert
