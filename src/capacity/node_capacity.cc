#include "capacity/node_capacity.h"

#include <algorithm>

namespace idlegrid::capacity {
namespace {

Claim ClaimOfAttempt(const AttemptHold& h) {
  return Claim{h.cpu, h.memory, 0, ClaimOf(h.gpu_milli, h.gpu_memory)};
}

}  // namespace

NodeCapacity NodeCapacity::Offered(const v1::NodeInfo& info, const v1::Advertisement& ad) {
  NodeCapacity n;
  n.ledger_ = NodeLedger(static_cast<double>(info.cpu_cores()) - ad.policy().reserved_cpu(), info.memory_bytes());
  const uint64_t reserved = ad.policy().reserved_gpu_memory_bytes();
  for (const auto& d : ad.inventory().gpus().devices()) {
    const uint64_t total = d.memory_total_bytes();
    n.ledger_.AddDevice(DeviceLedger(total > reserved ? total - reserved : 0));
    n.uuids_.push_back(d.uuid());
  }
  return n;
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

Status NodeCapacity::Check(const AttemptHold& h) const {
  return ledger_.Check(ClaimOfAttempt(h), Indices(h), &uuids_);
}

void NodeCapacity::Hold(const AttemptHold& h) { ledger_.Take(ClaimOfAttempt(h), AddIndices(h)); }

void NodeCapacity::Release(const AttemptHold& h) {
  ledger_.Release(ClaimOfAttempt(h), Indices(h));
}

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
