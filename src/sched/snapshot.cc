#include "sched/snapshot.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace idlegrid::sched {
namespace {

uint64_t Mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// "12.4" -> {12, 4}; false on garbage.
bool ParseMajorMinor(const std::string& s, int* major, int* minor) {
  if (s.empty()) return false;
  char* end = nullptr;
  long a = std::strtol(s.c_str(), &end, 10);
  if (end == s.c_str() || a < 0 || a > 100000) return false;
  long b = 0;
  if (*end == '.') {
    const char* start = end + 1;
    b = std::strtol(start, &end, 10);
    if (end == start || b < 0 || b > 999) return false;
  }
  *major = static_cast<int>(a);
  *minor = static_cast<int>(b);
  return true;
}

uint32_t InternModel(Snapshot* snap, const std::string& name) {
  auto [it, inserted] = snap->model_ids.emplace(name, static_cast<uint32_t>(snap->models.size()));
  if (inserted) snap->models.push_back(name);
  return it->second;
}

// What is free of a device as the view gives it: its compute share and
// allocatable VRAM, within the device less the owner's reserve.
capacity::DeviceLedger DeviceCapacity(const v1::GpuDevice& d, uint32_t free_milli) {
  const uint64_t free_vram = d.allocatable_memory_bytes();
  const uint64_t total = d.memory_total_bytes();
  const uint64_t vram_capacity =
      std::max(free_vram, total > d.reserved_memory_bytes() ? total - d.reserved_memory_bytes() : 0);
  return capacity::DeviceLedger::FromFree(vram_capacity, std::min(free_milli, kWholeGpuMilli), free_vram);
}

DeviceState MakeDevice(const v1::GpuDevice& d, const NodeView& view, Snapshot* snap) {
  DeviceState s;
  s.compute_capability = ParseComputeCapability(d.compute_capability());
  s.cuda_version = ParseCudaVersion(d.cuda_driver_version());
  s.trusted = d.measured() && !d.simulated();
  s.ready = d.unavailable_reason().empty();
  s.benchmark_may_use = d.owner_hold().empty();
  s.model = InternModel(snap, d.name());
  s.ask = market::AskFor(view.asks, d.name());
  if (d.power_limit_mw() > 0) {
    s.headroom = std::clamp(1.0 - static_cast<double>(d.power_draw_mw()) / d.power_limit_mw(), 0.0, 1.0);
  }
  return s;
}

}  // namespace

int ParseComputeCapability(const std::string& s) {
  int major = 0, minor = 0;
  return ParseMajorMinor(s, &major, &minor) ? major * 10 + std::min(minor, 9) : -1;
}

int ParseCudaVersion(const std::string& s) {
  int major = 0, minor = 0;
  return ParseMajorMinor(s, &major, &minor) ? major * 1000 + minor : -1;
}

Snapshot BuildSnapshot(std::vector<NodeView> nodes, uint64_t seed) {
  Snapshot snap;
  snap.views = std::move(nodes);
  std::stable_sort(snap.views.begin(), snap.views.end(),
                   [](const NodeView& a, const NodeView& b) { return a.id < b.id; });
  snap.nodes.resize(snap.views.size());
  for (size_t i = 0; i < snap.views.size(); ++i) {
    const NodeView& v = snap.views[i];
    NodeState& n = snap.nodes[i];
    n.view = &v;
    const double cpu_free = std::max(v.cpu_free, 0.0);
    n.cpu_total = std::max(v.cpu_total, cpu_free);
    static_assert(NodeView::kDiskUnknown == capacity::kUnlimited, "unknown disk is not checked");
    n.ledger = capacity::NodeLedger(cpu_free, v.memory_free, v.disk_free);
    n.cpu_ask = market::AskFor(v.asks, market::kCpuCoreClass);
    n.tiebreak = Mix(seed ^ Fnv1a(v.id));
    const size_t count = std::min(v.gpus.size(), kMaxDevicesPerNode);
    n.devices.reserve(count);
    for (size_t d = 0; d < count; ++d) {
      uint32_t milli = d < v.gpu_free_milli.size()                ? v.gpu_free_milli[d]
                       : v.gpus[d].allocatable_memory_bytes() > 0 ? kWholeGpuMilli
                                                                  : 0;
      n.ledger.AddDevice(DeviceCapacity(v.gpus[d], milli));
      n.devices.push_back(MakeDevice(v.gpus[d], v, &snap));
      snap.max_gpu_ask = std::max(snap.max_gpu_ask, n.devices.back().ask);
    }
    snap.max_cpu_ask = std::max(snap.max_cpu_ask, n.cpu_ask);
    snap.node_ids.emplace(v.id, static_cast<uint32_t>(i));
  }
  return snap;
}

Demand MakeDemand(const TaskView& task, const SchedulingPolicy& policy, const Snapshot& snap) {
  Demand d;
  d.task = &task;
  d.policy = &policy;
  d.runtime = task.runtime.empty() ? "runc" : task.runtime;
  const auto& r = task.resources;
  d.cpu = std::max(r.cpu(), 0.0);
  d.memory = r.memory_bytes();
  // The total it may write (resources.disk) when the job gives one; else the
  // largest file it may write, the least it could need.
  d.disk = r.output_bytes() > 0 ? r.output_bytes() : r.disk_bytes();
  d.share = (task.gpu_milli > 0 && task.gpu_milli < kWholeGpuMilli) || task.vram_slice;
  if (d.share) {
    d.gpus = 1;
    d.milli = std::min(task.gpu_milli, kWholeGpuMilli);
    d.vram = task.vram_slice ? std::max<uint64_t>(r.gpu_memory_bytes(), 1) : r.gpu_memory_bytes();
  } else {
    d.gpus = r.gpus();
    d.milli = kWholeGpuMilli;
    d.vram = std::max<uint64_t>(r.gpu_memory_bytes(), 1);  // a device held whole has 0 left
  }
  d.min_cc = ParseComputeCapability(task.min_compute_capability);
  d.min_cuda = ParseCudaVersion(task.min_cuda_version);
  d.any_model = task.gpu_models.empty();
  for (const auto& m : task.gpu_models) {
    auto it = snap.model_ids.find(m);
    if (it != snap.model_ids.end()) d.models.push_back(it->second);
  }
  std::sort(d.models.begin(), d.models.end());
  d.bid.max_price_per_gpu_hour = task.max_price_per_gpu_hour;
  d.bid.max_price_per_cpu_core_hour = task.max_price_per_cpu_core_hour;
  d.bid.max_cost = task.max_cost;
  d.bid.run_hours = task.run_timeout_seconds / 3600.0;
  d.price_first = policy.price_first || task.max_price_per_gpu_hour > 0 || task.max_price_per_cpu_core_hour > 0 ||
                  task.max_cost > 0;
  return d;
}

namespace {

template <typename T>
void AppendRaw(std::string* key, const T& value) {
  key->append(reinterpret_cast<const char*>(&value), sizeof value);
}

void AppendString(std::string* key, const std::string& s) {
  AppendRaw(key, s.size());
  key->append(s);
}

}  // namespace

// Raw bytes, not text: this runs once per task and printf of doubles was the
// hot spot of a trace replay.
std::string ShapeKey(const Demand& d) {
  const TaskView& t = *d.task;
  std::string key;
  key.reserve(192);
  AppendRaw(&key, d.cpu);
  AppendRaw(&key, d.memory);
  AppendRaw(&key, d.disk);
  AppendRaw(&key, d.gpus);
  AppendRaw(&key, d.milli);
  AppendRaw(&key, d.vram);
  AppendRaw(&key, d.min_cc);
  AppendRaw(&key, d.min_cuda);
  AppendRaw(&key, t.min_trust_tier);
  AppendRaw(&key, d.bid.max_price_per_gpu_hour);
  AppendRaw(&key, d.bid.max_price_per_cpu_core_hour);
  AppendRaw(&key, d.bid.max_cost);
  AppendRaw(&key, t.run_timeout_seconds);
  const uint8_t flags = (d.share ? 1 : 0) | (t.readiness ? 2 : 0) | (t.co_tenancy_allowed ? 4 : 0) |
                        (t.resources.strict_cpu() ? 8 : 0) | (d.any_model ? 16 : 0) | (t.untrusted_tenant ? 32 : 0);
  AppendRaw(&key, flags);
  AppendRaw(&key, d.models.size());
  for (uint32_t m : d.models) AppendRaw(&key, m);
  AppendString(&key, d.runtime);
  AppendString(&key, d.policy->name);
  AppendString(&key, t.image);
  AppendString(&key, t.registry);
  AppendString(&key, t.pinned_node);
  AppendString(&key, t.pinned_device);
  AppendRaw(&key, t.regions.size());
  for (const auto& r : t.regions) AppendString(&key, r);
  // Names of GPU models absent from the snapshot still tell tasks apart.
  AppendRaw(&key, t.gpu_models.size());
  for (const auto& m : t.gpu_models) AppendString(&key, m);
  const DataClassRule& data = t.data_class;
  AppendString(&key, data.name);
  AppendRaw(&key, data.min_trust_tier);
  AppendRaw(&key, data.min_reliability);
  AppendRaw(&key, data.exclusive_gpu);
  AppendRaw(&key, data.regions.size());
  for (const auto& r : data.regions) AppendString(&key, r);
  AppendRaw(&key, t.image_signers.size());
  for (const auto& k : t.image_signers) AppendString(&key, k);
  return key;
}

void ReserveOn(NodeState* node, const Demand& d, DeviceMask devices) {
  uint32_t named[kMaxDevicesPerNode];
  size_t count = 0;
  for (size_t i = 0; i < node->devices.size(); ++i) {
    if (devices & (DeviceMask{1} << i)) named[count++] = static_cast<uint32_t>(i);
  }
  node->ledger.Take(d.claim(), std::span<const uint32_t>(named, count));
  ++node->version;
}

}  // namespace idlegrid::sched
