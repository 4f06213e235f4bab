// Provider earnings and recent clearing prices (docs/provider.md, Earnings):
// the coordinator reads attempts and offers, market/earnings.h sums them.
#include <spdlog/spdlog.h>

#include "coordinator/coordinator.h"
#include "market/earnings.h"

namespace idlegrid::coordinator {

namespace {

// Earnings count every accepted attempt a provider's nodes ran, up to this
// many (newest first): a provider's whole history in any grid this serves.
constexpr size_t kEarningsAttempts = 200'000;

market::NodeOffering OfferingOf(const v1::Node& n) {
  market::NodeOffering o;
  o.node_id = n.id();
  o.name = n.name();
  const v1::Advertisement& ad = n.advertisement();
  for (const auto& d : ad.inventory().gpus().devices()) o.gpu_classes.push_back(d.name());
  o.cpu_cores = ad.capacity().cpu_cores() > 0 ? ad.capacity().cpu_cores() : n.info().cpu_cores();
  for (const auto& a : ad.asks()) o.asks[a.device_class()] = a.per_hour();
  return o;
}

}  // namespace

Result<v1::ProviderEarningsResponse> Coordinator::ProviderEarnings(const std::string& provider) {
  if (provider.empty()) {
    return Status::InvalidArgument("name a provider account (--provider NAME): this token's account has no nodes");
  }
  market::EarningsInputs in;
  in.provider = provider;
  in.now_ms = clock_->NowMs();
  IG_ASSIGN_OR_RETURN(in.attempts, store_->ProviderAttempts(provider, 0, kEarningsAttempts));
  IG_ASSIGN_OR_RETURN(v1::ListNodesResponse nodes, ListNodes());
  for (const v1::Node& n : nodes.nodes()) {
    if (n.provider() == provider) in.nodes.push_back(OfferingOf(n));
  }
  {
    MutexLock lock(&mu_);
    in.recent = recent_prices_.All(in.now_ms);
  }
  v1::ProviderEarningsResponse out = market::SummarizeEarnings(in);
  if (ledger_ != nullptr) {
    IG_ASSIGN_OR_RETURN(v1::LedgerBalanceResponse b, ledger_requests_.Balance(provider));
    out.set_ledger(true);
    out.set_pending_micros(b.pending_micros());
    out.set_available_micros(b.available_micros());
    out.set_stake_micros(b.stake_micros());
  }
  return out;
}

void Coordinator::RecordClearingPrices(const std::vector<store::NewAttempt>& placed, int64_t now_ms) {
  MutexLock lock(&mu_);
  for (const store::NewAttempt& a : placed) {
    auto it = nodes_.find(a.node_id);
    if (it == nodes_.end()) continue;
    const v1::Advertisement& ad = it->second.ad;
    if (!a.device_uuids.empty()) {
      // Pay-as-ask: the unit price is the device's ask (the placement keeps the highest of its devices').
      for (const auto& d : ad.inventory().gpus().devices()) {
        if (d.uuid() == a.device_uuids.front()) {
          recent_prices_.Record(d.name(), a.placement.ask_per_gpu_hour(), now_ms);
          break;
        }
      }
      continue;
    }
    double ask = 0;
    for (const auto& p : ad.asks()) {
      if (p.device_class() == market::kCpuCoreClass) ask = p.per_hour();
    }
    recent_prices_.Record(market::kCpuCoreClass, ask, now_ms);
  }
}

}  // namespace idlegrid::coordinator
