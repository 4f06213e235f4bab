#include "sched/feasibility.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdio>
#include <set>

#include "common/units.h"
namespace idlegrid::sched {
namespace {

bool Reject(Rejection* why, const char* stage, std::string reason) {
  if (why != nullptr) {
    why->stage = stage;
    why->reason = std::move(reason);
    why->detail.clear();
  }
  return false;
}

// `detail` is called only when the caller wants per-node details.
template <typename DetailFn>
bool Reject(Rejection* why, const char* stage, std::string reason, DetailFn detail) {
  Reject(why, stage, std::move(reason));
  if (why != nullptr && !why->brief) why->detail = detail();
  return false;
}

std::string Num(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, ec == std::errc() ? end : buf);
}

std::string Money(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 2);
  return std::string(buf, ec == std::errc() ? end : buf);
}

std::string Version(int v, int scale) {
  return v < 0 ? "unknown" : std::to_string(v / scale) + "." + std::to_string(v % scale);
}

bool HasBit(DeviceMask mask, size_t i) { return (mask >> i) & 1; }

// Keeps the devices of `*eligible` that `keep` accepts; true if at least
// `d.gpus` remain.
template <typename Keep>
bool Narrow(const NodeState& node, const Demand& d, DeviceMask* eligible, Keep keep) {
  DeviceMask out = 0;
  for (size_t i = 0; i < node.devices.size(); ++i) {
    if (HasBit(*eligible, i) && keep(node.devices[i])) out |= DeviceMask{1} << i;
  }
  *eligible = out;
  return static_cast<uint32_t>(std::popcount(out)) >= d.gpus;
}

// --- static stages ----------------------------------------------------------

bool NodeUp(const NodeState& n, const Demand& d, DeviceMask*, Rejection* why) {
  if (!n.view->online) return Reject(why, "node", "offline");
  if (!d.task->readiness && !n.view->unschedulable_reason.empty()) {
    return Reject(why, "node", n.view->unschedulable_reason);
  }
  return true;
}

bool Pinned(const NodeState& n, const Demand& d, DeviceMask*, Rejection* why) {
  if (d.task->pinned_node.empty() || d.task->pinned_node == n.view->id) return true;
  return Reject(why, "pinned", "pinned to another node");
}

bool RuntimeAvailable(const NodeState& n, const Demand& d, DeviceMask*, Rejection* why) {
  const auto& rts = n.view->runtimes;
  if (std::find(rts.begin(), rts.end(), d.runtime) == rts.end()) {
    return Reject(why, "runtime", "runtime " + d.runtime + " not available");
  }
  const std::string& job_class = d.task->job_class;
  const auto& classes = n.view->job_classes;
  if (job_class.empty() || std::find(classes.begin(), classes.end(), job_class) != classes.end()) return true;
  return Reject(why, "runtime", "job class " + job_class + " not approved by the owner");
}

// The limits the agent must enforce for this task.
bool Enforcement(const NodeState& n, const Demand& d, DeviceMask*, Rejection* why) {
  const v1::Enforcement& e = n.view->enforcement;
  if (e.memory().empty()) return Reject(why, "enforcement", "cannot enforce a memory limit");
  // gVisor ignores RLIMIT_DATA, so runsc jobs need a cgroup memory cap.
  if (d.runtime == "runsc" && e.memory() != "cgroup") {
    return Reject(why, "enforcement", "runsc needs cgroup memory limits",
                  [&] { return std::string("memory enforced by " + e.memory()); });
  }
  // A job naming runsc gets gVisor or nothing: its real GPUs need nvproxy
  // (the agent refuses rather than fall back to runc).
  const auto& gpus = n.view->gpus;
  if (d.runtime == "runsc" && d.gpus > 0 && !e.runsc_gpu_unavailable().empty() &&
      std::any_of(gpus.begin(), gpus.end(), [](const v1::GpuDevice& g) { return !g.simulated(); })) {
    return Reject(why, "enforcement", "runsc cannot pass GPUs in", [&] { return e.runsc_gpu_unavailable(); });
  }
  if (d.task->resources.strict_cpu() && e.cpu().empty()) {
    return Reject(why, "enforcement", "cannot cap CPU (strictCpu)");
  }
  return true;
}

bool Region(const NodeState& n, const Demand& d, DeviceMask*, Rejection* why) {
  const auto& allowed = d.task->regions;
  if (allowed.empty() || allowed.count(n.view->region)) return true;
  std::string list;
  for (const auto& r : allowed) list += (list.empty() ? "" : "|") + r;
  return Reject(why, "region", "outside allowed regions (" + list + ")", [&] {
    return std::string("node is in " + (n.view->region.empty() ? std::string("no region") : n.view->region));
  });
}

bool TrustTier(const NodeState& n, const Demand& d, DeviceMask*, Rejection* why) {
  if (n.view->trust_tier >= d.task->min_trust_tier) return true;
  return Reject(why, "trust", "trust tier below " + std::to_string(d.task->min_trust_tier),
                [&] { return std::string("node has tier " + std::to_string(n.view->trust_tier)); });
}

// The job's data class: the node's trust tier, region and reliability, and no
// shared GPU where the class wants one of its own. Apart from `trust` and
// `region` so that a user sees which class (not which constraint they wrote)
// keeps the task waiting.
bool DataClass(const NodeState& n, const Demand& d, DeviceMask*, Rejection* why) {
  const DataClassRule& rule = d.task->data_class;
  if (rule.name.empty()) return true;
  const NodeView& node = *n.view;
  if (node.trust_tier < rule.min_trust_tier) {
    return Reject(why, "data-class",
                  "data class " + rule.name + " needs trust tier " + std::to_string(rule.min_trust_tier),
                  [&] { return "node has " + std::to_string(node.trust_tier); });
  }
  if (!rule.regions.empty() && !rule.regions.count(node.region)) {
    std::string list;
    for (const auto& r : rule.regions) list += (list.empty() ? "" : "|") + r;
    return Reject(why, "data-class", "outside regions allowed for " + rule.name + " (" + list + ")",
                  [&] { return "node is in " + (node.region.empty() ? std::string("no region") : node.region); });
  }
  if (node.reliability < rule.min_reliability) {
    return Reject(why, "data-class", "data class " + rule.name + " needs reliability " + Money(rule.min_reliability),
                  [&] { return "node has " + Money(node.reliability); });
  }
  if (d.share && rule.exclusive_gpu) {
    return Reject(why, "data-class", "data class " + rule.name + " forbids sharing a GPU (ask for a whole GPU)");
  }
  return true;
}

bool OwnerPolicy(const NodeState& n, const Demand& d, DeviceMask*, Rejection* why) {
  const uint32_t limit = n.view->max_run_seconds;
  const uint32_t run = d.task->run_timeout_seconds;
  if (limit > 0 && (run == 0 || run > limit)) {
    return Reject(why, "owner-policy", "run time over the owner's limit", [&] {
      return std::string("owner allows " + std::to_string(limit) + " s, task needs " +
                         (run == 0 ? std::string("unbounded") : std::to_string(run) + " s"));
    });
  }
  const std::string& registry = d.task->registry;
  if (!registry.empty() && !n.view->allowed_registries.count(registry)) {
    // The agent would refuse it (its own copy of the owner's policy): not offered.
    return Reject(why, "owner-policy", "registry " + registry + " not in the owner's allowedRegistries");
  }
  if (d.share && !d.task->co_tenancy_allowed) {
    return Reject(why, "owner-policy", "data class forbids sharing a GPU (ask for a whole GPU)");
  }
  if (d.share && !n.view->allows_sharing) return Reject(why, "owner-policy", "owner does not allow GPU sharing");
  if (d.gpus > 0 && d.task->untrusted_tenant && n.view->tenant_gpu_jobs_refused) {
    // The agent would refuse it (local_policy.h CheckOwnerPolicy): not offered.
    return Reject(why, "owner-policy", "the owner accepts no tenant GPU jobs (policy.yaml tenantGpuJobs: false)");
  }
  return true;
}

// An owner who lists trustedImageKeys runs only images one of them signed
// (docs/containment.md, Signatures); its agent would refuse any other, so none is offered.
bool ImageSigned(const NodeState& n, const Demand& d, DeviceMask*, Rejection* why) {
  const std::set<std::string>& trusted = n.view->trusted_image_keys;
  if (trusted.empty()) return true;
  const std::set<std::string>& signers = d.task->image_signers;
  for (const std::string& id : signers) {
    if (trusted.count(id)) return true;
  }
  return Reject(why, "image-signature", "image not signed by a key the node's owner trusts (idlegrid image sign)", [&] {
    auto join = [](const std::set<std::string>& ids) {
      std::string out;
      for (const auto& id : ids) out += (out.empty() ? "" : ",") + id;
      return out.empty() ? std::string("none") : out;
    };
    return "owner trusts " + join(trusted) + "; image signed by " + join(signers);
  });
}

bool GpuCount(const NodeState& n, const Demand& d, DeviceMask* eligible, Rejection* why) {
  *eligible = AllDevices(n);
  if (n.devices.size() >= d.gpus) return true;
  return Reject(why, "gpu-count", "insufficient GPUs (need " + std::to_string(d.gpus) + ")",
                [&] { return std::string("node has " + std::to_string(n.devices.size())); });
}

// A real GPU takes ordinary work once the coordinator has measured it, and
// while its owner lends it (GpuDevice.unavailable_reason); the node's CPUs
// and its other GPUs work meanwhile. A readiness benchmark may use a device
// that only awaits its measurement.
bool GpuReady(const NodeState& n, const Demand& d, DeviceMask* eligible, Rejection* why) {
  if (d.gpus == 0) return true;
  const bool benchmark = d.task->readiness;
  size_t first_unready = n.devices.size();
  DeviceMask out = 0;
  for (size_t i = 0; i < n.devices.size(); ++i) {
    if (!HasBit(*eligible, i)) continue;
    const DeviceState& dev = n.devices[i];
    if (dev.ready || (benchmark && dev.benchmark_may_use)) {
      out |= DeviceMask{1} << i;
    } else if (first_unready == n.devices.size()) {
      first_unready = i;
    }
  }
  *eligible = out;
  if (static_cast<uint32_t>(std::popcount(out)) >= d.gpus) return true;
  if (first_unready == n.devices.size()) return Reject(why, "gpu-ready", "no GPU ready");
  const v1::GpuDevice& g = n.view->gpus[first_unready];
  return Reject(why, "gpu-ready", "GPU not ready (" + g.name() + ": " + g.unavailable_reason() + ")",
                [&] { return "gpu" + std::to_string(g.index()) + " " + g.uuid(); });
}

bool GpuModel(const NodeState& n, const Demand& d, DeviceMask* eligible, Rejection* why) {
  if (d.gpus == 0 || d.any_model) return true;
  if (Narrow(n, d, eligible,
             [&](const DeviceState& dev) { return std::binary_search(d.models.begin(), d.models.end(), dev.model); })) {
    return true;
  }
  std::string want;
  for (const auto& m : d.task->gpu_models) want += (want.empty() ? "" : "|") + m;
  return Reject(why, "gpu-model", "no allowed GPU model (" + want + ")");
}

bool ComputeCapability(const NodeState& n, const Demand& d, DeviceMask* eligible, Rejection* why) {
  if (d.gpus == 0 || d.min_cc < 0) return true;
  int best = -1;
  if (Narrow(n, d, eligible, [&](const DeviceState& dev) {
        best = std::max(best, dev.compute_capability);
        return dev.compute_capability >= d.min_cc;
      })) {
    return true;
  }
  return Reject(why, "compute-capability", "compute capability below " + Version(d.min_cc, 10),
                [&] { return std::string("best device has " + Version(best, 10)); });
}

bool CudaDriver(const NodeState& n, const Demand& d, DeviceMask* eligible, Rejection* why) {
  if (d.gpus == 0 || d.min_cuda < 0) return true;
  int best = -1;
  if (Narrow(n, d, eligible, [&](const DeviceState& dev) {
        best = std::max(best, dev.cuda_version);
        return dev.cuda_version >= d.min_cuda;
      })) {
    return true;
  }
  return Reject(why, "cuda-driver", "CUDA driver below " + Version(d.min_cuda, 1000),
                [&] { return std::string("best device has " + Version(best, 1000)); });
}

// Simulated GPUs never count as measured, whatever the node's tier. The tier
// asked is the job's own or its data class's, whichever is higher.
bool MeasuredGpus(const NodeState& n, const Demand& d, DeviceMask* eligible, Rejection* why) {
  const int tier = std::max(d.task->min_trust_tier, d.task->data_class.min_trust_tier);
  if (d.gpus == 0 || tier < kTrustMeasured) return true;
  if (Narrow(n, d, eligible, [](const DeviceState& dev) { return dev.trusted; })) return true;
  return Reject(why, "gpu-trust", "GPUs not measured (trust tier " + std::to_string(tier) + ")");
}

bool PinnedDevice(const NodeState& n, const Demand& d, DeviceMask* eligible, Rejection* why) {
  const std::string& uuid = d.task->pinned_device;
  if (uuid.empty()) return true;
  DeviceMask out = 0;
  for (size_t i = 0; i < n.devices.size(); ++i) {
    if (HasBit(*eligible, i) && n.view->gpus[i].uuid() == uuid) out |= DeviceMask{1} << i;
  }
  *eligible = out;
  if (out != 0 && d.gpus <= 1) return true;
  return Reject(why, "pinned-device", "no such GPU");
}

bool MaxPrice(const NodeState& n, const Demand& d, DeviceMask* eligible, Rejection* why) {
  if (std::string cpu = market::CpuBidShortfall(n.cpu_ask, d.bid); !cpu.empty() && d.cpu > 0) {
    return Reject(why, "max-price", "over max price (bid " + Money(d.bid.max_price_per_cpu_core_hour) + "/core-h)",
                  [&] { return std::string(cpu); });
  }
  if (d.gpus == 0 || d.bid.max_price_per_gpu_hour <= 0) return true;
  double lowest = -1;
  if (Narrow(n, d, eligible, [&](const DeviceState& dev) {
        lowest = lowest < 0 ? dev.ask : std::min(lowest, dev.ask);
        return market::GpuBidShortfall(dev.ask, d.bid).empty();
      })) {
    return true;
  }
  return Reject(why, "max-price", "over max price (bid " + Money(d.bid.max_price_per_gpu_hour) + "/GPU-h)",
                [&] { return std::string("lowest ask here " + Money(lowest)); });
}

// --- dynamic stages ---------------------------------------------------------

bool HostCpu(const NodeState& n, const Demand& d, DeviceMask*, Rejection* why) {
  if (n.ledger.CpuFits(d.cpu)) return true;
  return Reject(why, "cpu", "insufficient CPU (need " + Num(d.cpu) + " cores)",
                [&] { return std::string(Num(n.cpu_free()) + " free"); });
}

bool HostMemory(const NodeState& n, const Demand& d, DeviceMask*, Rejection* why) {
  if (n.ledger.MemoryFits(d.memory)) return true;
  return Reject(why, "memory", "insufficient memory (need " + FormatGiB(d.memory) + ")",
                [&] { return std::string(FormatGiB(n.memory_free()) + " free"); });
}

bool Disk(const NodeState& n, const Demand& d, DeviceMask*, Rejection* why) {
  if (n.ledger.DiskFits(d.disk)) return true;
  return Reject(why, "disk", "insufficient disk (need " + FormatGiB(d.disk) + ")",
                [&] { return std::string(FormatGiB(n.disk_free()) + " free"); });
}

// Free compute and VRAM, per device (a hard filter: VRAM never pools across devices).
bool GpuFree(const NodeState& n, const Demand& d, DeviceMask* eligible, Rejection* why) {
  if (d.gpus == 0) return true;
  const DeviceMask free = FreeDevices(n, d, *eligible);
  if (static_cast<uint32_t>(std::popcount(free)) >= d.gpus) {
    *eligible = free;
    return true;
  }
  if (why == nullptr) return false;
  // Name the resource that is short: compute (whole device or share), else VRAM.
  uint32_t compute_ok = 0, best_milli = 0, in_use = 0;
  uint64_t best_vram = 0;
  for (size_t i = 0; i < n.devices.size(); ++i) {
    if (!HasBit(*eligible, i)) continue;
    const uint32_t free_milli = n.free_milli(i);
    const bool ok = d.share ? free_milli >= d.milli : free_milli == kWholeGpuMilli;
    compute_ok += ok;
    in_use += free_milli < kWholeGpuMilli;
    best_milli = std::max(best_milli, free_milli);
    if (ok) best_vram = std::max(best_vram, n.free_vram(i));
  }
  const std::string eligible_count = std::to_string(std::popcount(*eligible));
  if (compute_ok < d.gpus && d.share) {
    return Reject(why, "gpu-free", "insufficient GPU share (need " + std::to_string(d.milli) + " milli)",
                  [&] { return std::string("best device has " + std::to_string(best_milli) + " free"); });
  }
  if (compute_ok < d.gpus) {
    return Reject(why, "gpu-free", "no free GPU (need " + std::to_string(d.gpus) + ")",
                  [&] { return std::string(std::to_string(in_use) + " of " + eligible_count + " in use"); });
  }
  return Reject(why, "gpu-free", "insufficient VRAM (need " + FormatGiB(d.vram) + ")",
                [&] { return std::string("best device has " + FormatGiB(best_vram) + " free"); });
}

}  // namespace

DeviceMask AllDevices(const NodeState& node) {
  const size_t n = node.devices.size();
  return n >= 64 ? ~DeviceMask{0} : (DeviceMask{1} << n) - 1;
}

DeviceMask FreeDevices(const NodeState& node, const Demand& d, DeviceMask eligible) {
  const capacity::DeviceClaim claim = d.device_claim();
  const auto& devices = node.ledger.devices();
  DeviceMask out = 0;
  for (size_t i = 0; i < node.devices.size(); ++i) {
    if (!HasBit(eligible, i)) continue;
    if (devices[i].Fits(claim)) out |= DeviceMask{1} << i;
  }
  return out;
}

const std::vector<FeasibilityStage>& FeasibilityStages() {
  static const std::vector<FeasibilityStage> kStages = {
      {"node", NodeUp, false},
      {"pinned", Pinned, false},
      {"runtime", RuntimeAvailable, false},
      {"enforcement", Enforcement, false},
      {"region", Region, false},
      {"trust", TrustTier, false},
      {"data-class", DataClass, false},
      {"owner-policy", OwnerPolicy, false},
      {"image-signature", ImageSigned, false},
      {"gpu-count", GpuCount, false},
      {"gpu-ready", GpuReady, false},
      {"gpu-model", GpuModel, false},
      {"compute-capability", ComputeCapability, false},
      {"cuda-driver", CudaDriver, false},
      {"gpu-trust", MeasuredGpus, false},
      {"pinned-device", PinnedDevice, false},
      {"max-price", MaxPrice, false},
      {"cpu", HostCpu, true},
      {"memory", HostMemory, true},
      {"disk", Disk, true},
      {"gpu-free", GpuFree, true},
  };
  return kStages;
}

namespace {

std::vector<FeasibilityCheck> ChecksWhere(bool dynamic) {
  std::vector<FeasibilityCheck> out;
  for (const auto& stage : FeasibilityStages()) {
    if (stage.dynamic == dynamic) out.push_back(stage.check);
  }
  return out;
}

}  // namespace

bool StaticFeasible(const NodeState& node, const Demand& d, DeviceMask* eligible, Rejection* why) {
  static const std::vector<FeasibilityCheck> kChecks = ChecksWhere(false);
  *eligible = AllDevices(node);
  for (FeasibilityCheck check : kChecks) {
    if (!check(node, d, eligible, why)) return false;
  }
  return true;
}

bool DynamicFeasible(const NodeState& node, const Demand& d, DeviceMask* eligible, Rejection* why) {
  static const std::vector<FeasibilityCheck> kChecks = ChecksWhere(true);
  for (FeasibilityCheck check : kChecks) {
    if (!check(node, d, eligible, why)) return false;
  }
  return true;
}

bool Excluded(const NodeState& node, const TaskView& task, Rejection* why) {
  if (task.excluded_nodes.empty()) return false;
  if (task.excluded_nodes.count(node.view->id)) {
    Reject(why, "excluded", "rejected or lost this task before");
    return true;
  }
  if (task.excluded_nodes.count(kProviderExclusion + node.view->provider)) {
    Reject(why, "excluded", "its provider already ran a replica of this task");
    return true;
  }
  // Entries sort by name: the "only-provider:" ones are together.
  const std::string only = kOnlyProvider;
  for (auto it = task.excluded_nodes.lower_bound(only); it != task.excluded_nodes.end() && it->rfind(only, 0) == 0;
       ++it) {
    if (*it != only + node.view->provider) {
      Reject(why, "excluded", "a known-answer check meant for another provider");
      return true;
    }
  }
  return false;
}

}  // namespace idlegrid::sched
