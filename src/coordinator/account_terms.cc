#include "coordinator/account_terms.h"

#include <spdlog/spdlog.h>

namespace idlegrid::coordinator {

AccountTerms AccountTermsCache::Current() {
  const int64_t now = clock_->NowMs();
  MutexLock lock(&mu_);
  if (read_ms_ != 0 && now - read_ms_ < kRefreshMs) return terms_;
  auto accounts = store_->ListAccounts();
  if (!accounts.ok()) {
    spdlog::warn("account terms: {}", accounts.status().ToString());
    return terms_;  // the last known terms, tried again next time
  }
  AccountTerms fresh;
  for (const store::AccountRecord& a : *accounts) {
    fresh.weights[a.name] = a.weight;
    const uint32_t limit = a.max_running_tasks != 0 ? a.max_running_tasks : default_max_running_tasks_;
    if (limit != 0) fresh.running_limits[a.name] = limit;
  }
  for (const auto& [name, w] : weight_overrides_) fresh.weights[name] = w;
  terms_ = std::move(fresh);
  read_ms_ = now;
  return terms_;
}

}  // namespace idlegrid::coordinator
