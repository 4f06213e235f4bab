// The node table's view of capacity (node_table.h): verified advertisements,
// whether a node and each of its devices may take work (readiness_benchmarks.h
// measures them), what each device can still take, and the snapshot the
// dispatcher places on.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "advert/advertisement.h"
#include "capacity/disk_floor.h"
#include "coordinator/node_table.h"
#include "coordinator/node_views.h"
#include "sched/data_class.h"

namespace idlegrid::coordinator {
namespace {

// A node's claim to hold inputs only ranks it (the cache scorer); an agent
// advertises at most 512 (agent/input_cache.h), and no more than this many
// are read, so a node cannot make each dispatch pass build a huge set.
constexpr int kMaxCachedInputsRead = 1024;

}  // namespace

Status NodeTable::CheckSimulated(const v1::Advertisement& ad) const {
  if (options_.allow_simulated_gpus) return Status::Ok();
  for (const auto& d : ad.inventory().gpus().devices()) {
    if (d.simulated()) {
      return Status::PermissionDenied("advertisement lists simulated GPU '" + d.name() +
                                      "'; this coordinator accepts simulated devices only when started with "
                                      "--allow-simulated-gpus");
    }
  }
  return Status::Ok();
}

Status NodeTable::AcceptAdvertisement(const std::string& node_id, const v1::SignedAdvertisement& signed_ad) {
  std::string public_key;
  uint64_t last_sequence = 0;
  {
    MutexLock lock(&mu_);
    auto it = nodes_.find(node_id);
    if (it != nodes_.end() && !it->second.public_key.empty()) {
      public_key = it->second.public_key;
      last_sequence = it->second.last_sequence;
    }
  }
  if (public_key.empty()) {
    IG_ASSIGN_OR_RETURN(auto rec, store_->GetNode(node_id));
    if (!rec) return Status::NotFound("node " + node_id + " is not registered");
    public_key = rec->public_key;
    last_sequence = rec->last_sequence;
  }
  advert::AdvertError error = advert::AdvertError::kNone;
  auto verified = advert::VerifyAdvertisement(signed_ad, public_key, last_sequence, &error);
  Status st = verified.ok() ? Status::Ok() : verified.status();
  if (st.ok() && verified->ad.node_id() != node_id) {
    st = Status::PermissionDenied("advertisement is for node " + verified->ad.node_id() + ", sent with the token of " +
                                  node_id);
  }
  if (st.ok()) st = CheckSimulated(verified->ad);
  if (!st.ok()) {
    spdlog::warn("advertisement from node {} rejected: {}", node_id, st.message());
    return st;
  }
  const v1::Advertisement& ad = verified->ad;
  IG_RETURN_IF_ERROR(store_->RecordAdvertisement(node_id, ad.sequence(), ad));
  {
    MutexLock lock(&mu_);
    NodeLive& live = nodes_[node_id];
    live.public_key = public_key;
    // Two heartbeats may race past the store; the memory copy only moves forward too.
    if (ad.sequence() > live.last_sequence) {
      live.last_sequence = ad.sequence();
      live.ad = ad;
      for (const auto& d : ad.inventory().gpus().devices()) {
        if (d.throttle_reasons() & sched::kThermalOrPowerThrottle) {
          ++live.throttle_reports;  // feeds reliability: a throttled GPU runs slower than measured
          break;
        }
      }
    }
  }
  spdlog::debug("advertisement {} of node {} accepted", ad.sequence(), node_id);
  hooks_.changed();
  return Status::Ok();
}

std::string NodeTable::UnschedulableReasonLocked(const NodeLive& node) const {
  if (node.draining) return "draining";
  if (node.pause.paused()) return "paused by its owner: " + node.pause.reason();
  if (node.ad.sequence() == 0) return "no advertisement yet";
  if (!node.ad.policy().accept_jobs()) return "paused by its owner";
  // The agent's first disk is the one its scratch is on (agent.cc).
  if (node.ad.inventory().disks_size() > 0) {
    const v1::DiskInfo& d = node.ad.inventory().disks(0);
    if (std::string full = capacity::DiskFullReason(d.free_bytes(), d.total_bytes(), d.path()); !full.empty()) {
      return full + "; it takes work again once its owner frees space there";
    }
  }
  const v1::Measurement& m = node.measurement;
  bool current = m.agent_version() == StackOf(node.ad);
  if (m.measured_at_ms() == 0 || !current) {
    if (std::string no_bench = hooks_.cpu_bench_error(); !no_bench.empty()) return no_bench;
    if (std::string untrusted = hooks_.readiness_key_untrusted(node.ad); !untrusted.empty()) {
      return "readiness benchmark pending: " + untrusted;
    }
    return m.measured_at_ms() == 0 ? "readiness benchmark pending" : "re-measuring after an agent or driver change";
  }
  if (!m.passed()) return "readiness benchmark failed: " + m.reason();
  // A GPU not yet measured (or failed) holds back only itself: see
  // GpuUnavailableReasonLocked.
  return "";
}

std::string NodeTable::GpuUnavailableReasonLocked(const NodeLive& node, const v1::GpuDevice& d) const {
  if (!d.owner_hold().empty()) return "held back by its owner: " + d.owner_hold();
  if (d.simulated()) return "";  // never measured; admitted by --allow-simulated-gpus alone
  const v1::Measurement& m = node.measurement;
  const bool current = m.measured_at_ms() > 0 && m.agent_version() == StackOf(node.ad);
  if (!current || !m.passed()) return "readiness benchmark pending: the node's CPU benchmark comes first";
  for (const auto& g : m.gpus()) {
    if (g.uuid() != d.uuid()) continue;
    if (g.passed()) return "";
    return "failed its readiness benchmark: " + g.reason();
  }
  if (std::string no_bench = hooks_.gpu_bench_error(); !no_bench.empty()) return no_bench;
  return "readiness benchmark pending";
}

capacity::NodeCapacity NodeTable::HeldCapacity(const NodeLive& node, const std::vector<store::ActiveAttempt>& mine) {
  capacity::NodeCapacity held = capacity::NodeCapacity::Offered(node.info, node.ad);
  for (const auto& a : mine) held.Hold({a.cpu, a.memory, a.gpu_memory_bytes, a.gpu_milli, a.device_uuids});
  return held;
}

std::vector<v1::GpuDevice> NodeTable::AccountedGpusLocked(const NodeLive& node,
                                                          const capacity::NodeCapacity& held) const {
  std::vector<v1::GpuDevice> devices(node.ad.inventory().gpus().devices().begin(),
                                     node.ad.inventory().gpus().devices().end());
  const uint64_t reserve = node.ad.policy().reserved_gpu_memory_bytes();
  // Only the coordinator's own benchmark makes a device measured; a simulated one never is.
  bool current = node.measurement.agent_version() == StackOf(node.ad);
  for (size_t i = 0; i < devices.size(); ++i) {
    v1::GpuDevice& d = devices[i];
    held.Describe(i, reserve, &d);  // the ledger lists the advertised devices first, in this order
    bool measured = false;
    for (const auto& g : node.measurement.gpus()) {
      if (g.uuid() == d.uuid() && g.passed() && current && !d.simulated()) measured = true;
    }
    d.set_measured(measured);
    d.set_unavailable_reason(GpuUnavailableReasonLocked(node, d));
  }
  return devices;
}

sched::NodeView NodeTable::ViewLocked(const std::string& id, const NodeLive& n,
                                      const std::vector<store::ActiveAttempt>& mine) const {
  sched::NodeView v;
  v.id = id;
  v.provider = n.provider;
  v.online = n.online && sessions_->Connected(id) && !n.liveness.suspect();  // a suspect node gets no new work
  // What is left after the node's active attempts, by the rule the store's
  // commit guard applies (capacity/ledger.h), so a fresh plan passes it.
  const capacity::NodeCapacity capacity_left = HeldCapacity(n, mine);
  const capacity::NodeLedger& ledger = capacity_left.ledger();
  v.cpu_total = ledger.cpu_capacity();
  v.cpu_free = ledger.FreeCpu();
  v.memory_free = ledger.FreeMemory();
  v.memory_total = ledger.memory_capacity();
  v.gpus = AccountedGpusLocked(n, capacity_left);
  v.runtimes.assign(n.info.runtimes().begin(), n.info.runtimes().end());
  if (n.ad.policy().allowed_runtimes_size() > 0) {
    v.runtimes.assign(n.ad.policy().allowed_runtimes().begin(), n.ad.policy().allowed_runtimes().end());
  }
  v.job_classes.assign(n.ad.policy().allowed_job_classes().begin(), n.ad.policy().allowed_job_classes().end());
  v.enforcement = n.info.enforcement();
  v.unschedulable_reason = UnschedulableReasonLocked(n);
  v.region = n.ad.region();
  v.trust_tier = sched::TrustTierOf(*data_policy_, id, n.measurement, n.ad);
  v.reliability = n.reliability.score;
  v.cached_images.insert(n.ad.cached_images().begin(), n.ad.cached_images().end());
  v.cached_inputs.insert(n.ad.cached_inputs().begin(),
                         n.ad.cached_inputs().begin() + std::min(n.ad.cached_inputs_size(), kMaxCachedInputsRead));
  for (const auto& ask : n.ad.asks()) v.asks[ask.device_class()] = ask.per_hour();
  v.allows_sharing = n.ad.policy().allow_gpu_sharing();
  v.max_run_seconds = n.ad.policy().max_run_seconds();
  v.trusted_image_keys.insert(n.ad.policy().trusted_image_key_ids().begin(),
                              n.ad.policy().trusted_image_key_ids().end());
  v.allowed_registries.insert(n.ad.policy().allowed_registries().begin(), n.ad.policy().allowed_registries().end());
  v.tenant_gpu_jobs_refused = n.ad.policy().tenant_gpu_jobs_refused();
  v.gpu_free_milli.resize(v.gpus.size());
  for (size_t i = 0; i < v.gpus.size(); ++i) v.gpu_free_milli[i] = ledger.devices()[i].FreeMilli();
  return v;
}

NodeTable::Snapshot NodeTable::Views(const std::vector<store::ActiveAttempt>& active) {
  const auto by_node = GroupByNode(active);
  static const std::vector<store::ActiveAttempt> kNone;
  Snapshot out;
  MutexLock lock(&mu_);
  for (const auto& [id, n] : nodes_) {
    auto held = by_node.find(id);
    out.views.push_back(ViewLocked(id, n, held == by_node.end() ? kNone : held->second));
  }
  out.data = data_policy_;
  return out;
}

ReadinessBenchmarks::Hooks NodeTable::ReadinessHooks() {
  ReadinessBenchmarks::Hooks hooks;
  hooks.candidates = [this] {
    std::vector<ReadinessBenchmarks::Candidate> out;
    MutexLock lock(&mu_);
    for (const auto& [id, n] : nodes_) {
      if (!n.online || !sessions_->Connected(id) || n.draining || n.ad.sequence() == 0) continue;
      out.push_back({id, n.ad, n.measurement});
    }
    return out;
  };
  hooks.advertisement = [this](const std::string& node_id) -> std::optional<v1::Advertisement> {
    MutexLock lock(&mu_);
    auto it = nodes_.find(node_id);
    if (it == nodes_.end()) return std::nullopt;
    return it->second.ad;
  };
  hooks.update_measurement = [this](const std::string& node_id,
                                    const std::function<void(v1::Measurement&, const v1::Advertisement&)>& edit) {
    MutexLock lock(&mu_);
    auto it = nodes_.find(node_id);
    if (it == nodes_.end()) return false;
    edit(it->second.measurement, it->second.ad);
    // Kept in memory either way; a lost row only means the node is measured
    // again after a coordinator restart.
    if (Status st = store_->RecordMeasurement(node_id, it->second.measurement); !st.ok()) {
      spdlog::warn("node {}: measurement not stored: {}", node_id, st.message());
    }
    return true;
  };
  hooks.changed = hooks_.changed;
  return hooks;
}

}  // namespace idlegrid::coordinator
