#include "capacity/node_capacity.h"

#include <algorithm>

namespace idlegrid::capacity {
namespace {

Claim ClaimOfAttempt(const AttemptHold& h) { return Claim{h.cpu, h.memory, 0, ClaimOf(h.gpu_milli, h.gpu_memory)}; }

}  // namespace

uint64_t UsableVram(uint64_t total, uint64_t reserve) { return total > reserve ? total - reserve : 0; }

bool IsVramSlice(const v1::Resources& r, bool exclusive_gpu) {
  return r.gpus() == 1 && r.gpu_memory_bytes() > 0 && !exclusive_gpu;
}

uint32_t PlacedMilli(const v1::JobSpec& spec) {
  const v1::Resources& r = spec.resources();
  const bool compute_share = r.gpu_milli() > 0 && r.gpu_milli() < kWholeGpuMilli;
  if (compute_share || IsVramSlice(r, spec.exclusive_gpu())) return compute_share ? r.gpu_milli() : 0;
  return r.gpus() > 0 || r.gpu_milli() > 0 ? kWholeGpuMilli : 0;
}

AttemptHold HoldOf(const v1::JobSpec& spec, std::vector<std::string> devices) {
  const v1::Resources& r = spec.resources();
  return AttemptHold{r.cpu(), r.memory_bytes(), r.gpu_memory_bytes(), PlacedMilli(spec), std::move(devices)};
}

template <class Devices>
NodeCapacity NodeCapacity::Build(const v1::NodeInfo& info, const v1::LocalPolicy& policy, const Devices& devices) {
  NodeCapacity n;
  n.ledger_ =
      NodeLedger(static_cast<double>(info.cpu_cores()) - std::max(policy.reserved_cpu(), 0.0), info.memory_bytes());
  for (const auto& d : devices) {
    n.ledger_.AddDevice(DeviceLedger(UsableVram(d.memory_total_bytes(), policy.reserved_gpu_memory_bytes())));
    n.uuids_.push_back(d.uuid());
  }
  return n;
}

NodeCapacity NodeCapacity::Offered(const v1::NodeInfo& info, const v1::Advertisement& ad) {
  return Build(info, ad.policy(), ad.inventory().gpus().devices());
}

NodeCapacity NodeCapacity::Offered(const v1::NodeInfo& info, const v1::LocalPolicy& policy,
                                   const std::vector<v1::GpuDevice>& devices) {
  return Build(info, policy, devices);
}

void NodeCapacity::Describe(size_t index, uint64_t reserve, v1::GpuDevice* d) const {
  d->set_reserved_memory_bytes(std::min(reserve, d->memory_total_bytes()));
  d->set_allocatable_memory_bytes(index < ledger_.devices().size() ? ledger_.devices()[index].FreeVram() : 0);
}

std::vector<uint32_t> NodeCapacity::Indices(const AttemptHold& h) const {
  std::vector<uint32_t> out;
  out.reserve(h.devices.size());
  for (const auto& uuid : h.devices) {
    auto it = std::find(uuids_.begin(), uuids_.end(), uuid);
    if (it != uuids_.end()) out.push_back(static_cast<uint32_t>(it - uuids_.begin()));
  }
  return out;
}

std::vector<uint32_t> NodeCapacity::AddIndices(const AttemptHold& h) {
  for (const auto& uuid : h.devices) {
    if (std::find(uuids_.begin(), uuids_.end(), uuid) != uuids_.end()) continue;
    ledger_.AddDevice(DeviceLedger(kUnlimited));
    uuids_.push_back(uuid);
  }
  return Indices(h);
}

Status NodeCapacity::Check(const AttemptHold& h) const { return ledger_.Check(ClaimOfAttempt(h), Indices(h), &uuids_); }

void NodeCapacity::Hold(const AttemptHold& h) { ledger_.Take(ClaimOfAttempt(h), AddIndices(h)); }

void NodeCapacity::Release(const AttemptHold& h) { ledger_.Release(ClaimOfAttempt(h), Indices(h)); }

Status NodeCapacity::TryHold(const AttemptHold& h) {
  IG_RETURN_IF_ERROR(Check(h));
  Hold(h);
  return Status::Ok();
}

void SplitDeviceList(std::string_view s, std::vector<std::string>* out) {
  out->clear();
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string_view::npos) end = s.size();
    if (end > start) out->emplace_back(s.substr(start, end - start));
    start = end + 1;
  }
}

}  // namespace idlegrid::capacity
