// Recent clearing prices (docs/provider.md, Earnings): each placement's
// unit price as its node asked it, for the market and earnings views.
#include "coordinator/coordinator.h"
#include "market/earnings.h"

namespace idlegrid::coordinator {

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
