#include "capacity/ledger.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace idlegrid::capacity {
namespace {

// Cores are fractional (250m): sums are compared with a tolerance.
constexpr double kCpuEpsilon = 1e-9;

// held + more <= capacity, without overflow; kUnlimited is never exceeded.
bool Within(uint64_t held, uint64_t more, uint64_t capacity) {
  return capacity == kUnlimited || (held <= capacity && more <= capacity - held);
}

uint64_t Left(uint64_t capacity, uint64_t held) {
  return capacity == kUnlimited ? kUnlimited : capacity - std::min(capacity, held);
}

uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return b > kUnlimited - a ? kUnlimited : a + b; }

// Whether `i` appears in devices[0..k): a device named twice counts once.
bool Repeated(std::span<const uint32_t> devices, size_t k) {
  return std::find(devices.begin(), devices.begin() + static_cast<ptrdiff_t>(k), devices[k]) !=
         devices.begin() + static_cast<ptrdiff_t>(k);
}

std::string Cores(double c) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", c);
  return buf;
}

}  // namespace

DeviceClaim ClaimOf(uint32_t gpu_milli, uint64_t gpu_memory) {
  if (gpu_milli >= kWholeGpuMilli || (gpu_milli == 0 && gpu_memory == 0)) {
    return DeviceClaim{true, kWholeGpuMilli, std::max<uint64_t>(gpu_memory, 1)};
  }
  return DeviceClaim{false, gpu_milli, gpu_memory};
}

DeviceLedger DeviceLedger::FromFree(uint64_t vram_capacity, uint32_t free_milli, uint64_t free_vram) {
  DeviceLedger d(vram_capacity);
  if (free_milli < kWholeGpuMilli) {
    // 999 is what a VRAM slice without compute leaves (a tenant, no share
    // held); read so, a share may still fill the device to 1000, as the sum
    // rule allows. (A 1-milli share also leaves 999: the one reading a view
    // cannot tell apart; the store's guard, which sums the holds, decides.)
    d.tenants_ = 1;
    d.milli_held_ = free_milli == kWholeGpuMilli - 1 ? 0 : kWholeGpuMilli - free_milli;
  }
  if (vram_capacity != kUnlimited) d.vram_held_ = vram_capacity - std::min(vram_capacity, free_vram);
  return d;
}

uint32_t DeviceLedger::FreeMilli() const {
  if (whole_tenants_ > 0) return 0;
  if (tenants_ == 0) return kWholeGpuMilli;
  return std::min(kWholeGpuMilli - 1, kWholeGpuMilli - std::min(kWholeGpuMilli, milli_held_));
}

uint64_t DeviceLedger::FreeVram() const { return whole_tenants_ > 0 ? 0 : Left(vram_capacity_, vram_held_); }

bool DeviceLedger::Fits(const DeviceClaim& c) const {
  if (c.whole) return tenants_ == 0 && FreeVram() >= c.vram;
  return FreeMilli() >= c.milli && FreeVram() >= c.vram;
}

void DeviceLedger::Take(const DeviceClaim& c) {
  ++tenants_;
  if (c.whole) {
    ++whole_tenants_;
    return;
  }
  milli_held_ += c.milli;
  vram_held_ = SaturatingAdd(vram_held_, c.vram);
}

void DeviceLedger::Give(const DeviceClaim& c) {
  if (tenants_ > 0) --tenants_;
  if (c.whole) {
    if (whole_tenants_ > 0) --whole_tenants_;
    return;
  }
  milli_held_ -= std::min(milli_held_, c.milli);
  vram_held_ -= std::min(vram_held_, c.vram);
}

double NodeLedger::FreeCpu() const { return std::max(0.0, cpu_capacity_ - cpu_held_); }
uint64_t NodeLedger::FreeMemory() const { return Left(memory_capacity_, memory_held_); }
uint64_t NodeLedger::FreeDisk() const { return Left(disk_capacity_, disk_held_); }
bool NodeLedger::CpuFits(double cores) const { return cpu_held_ + cores <= cpu_capacity_ + kCpuEpsilon; }
bool NodeLedger::MemoryFits(uint64_t bytes) const { return Within(memory_held_, bytes, memory_capacity_); }
bool NodeLedger::DiskFits(uint64_t bytes) const { return Within(disk_held_, bytes, disk_capacity_); }

Status NodeLedger::Check(const Claim& c, std::span<const uint32_t> devices,
                         const std::vector<std::string>* device_names) const {
  if (!CpuFits(c.cpu)) {
    return Status::FailedPrecondition("insufficient CPU: needs " + Cores(c.cpu) + " cores, " + Cores(FreeCpu()) +
                                      " free");
  }
  if (!MemoryFits(c.memory)) {
    return Status::FailedPrecondition("insufficient memory: needs " + std::to_string(c.memory) + " bytes, " +
                                      std::to_string(FreeMemory()) + " free");
  }
  if (!DiskFits(c.disk)) {
    return Status::FailedPrecondition("insufficient disk: needs " + std::to_string(c.disk) + " bytes, " +
                                      std::to_string(FreeDisk()) + " free");
  }
  for (size_t k = 0; k < devices.size(); ++k) {
    if (devices[k] >= devices_.size() || Repeated(devices, k)) continue;
    const DeviceLedger& d = devices_[devices[k]];
    if (d.Fits(c.device)) continue;
    const std::string gpu =
        "GPU " + (device_names != nullptr && devices[k] < device_names->size() ? (*device_names)[devices[k]]
                                                                               : std::to_string(devices[k]));
    if (c.device.whole && d.HasTenant()) return Status::FailedPrecondition(gpu + " has another tenant");
    if (d.FreeMilli() < c.device.milli) {
      return Status::FailedPrecondition(gpu + ": needs " + std::to_string(c.device.milli) + " milli, " +
                                        std::to_string(d.FreeMilli()) + " free");
    }
    return Status::FailedPrecondition(gpu + ": needs " + std::to_string(c.device.vram) + " bytes of VRAM, " +
                                      std::to_string(d.FreeVram()) + " free");
  }
  return Status::Ok();
}

void NodeLedger::Take(const Claim& c, std::span<const uint32_t> devices) {
  cpu_held_ += c.cpu;
  memory_held_ = SaturatingAdd(memory_held_, c.memory);
  disk_held_ = SaturatingAdd(disk_held_, c.disk);
  for (size_t k = 0; k < devices.size(); ++k) {
    if (devices[k] < devices_.size() && !Repeated(devices, k)) devices_[devices[k]].Take(c.device);
  }
}

void NodeLedger::Release(const Claim& c, std::span<const uint32_t> devices) {
  cpu_held_ = std::max(0.0, cpu_held_ - c.cpu);
  memory_held_ -= std::min(memory_held_, c.memory);
  disk_held_ -= std::min(disk_held_, c.disk);
  for (size_t k = 0; k < devices.size(); ++k) {
    if (devices[k] < devices_.size() && !Repeated(devices, k)) devices_[devices[k]].Give(c.device);
  }
}

}  // namespace idlegrid::capacity
