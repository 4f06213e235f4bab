#pragma once
// The accounts' terms the dispatcher plans under: fair-share weights and
// running-task limits, from the accounts table (an account's own limit, else
// the coordinator's default; weights overridden by --account-weight style
// options), re-read at most every kRefreshMs so a dispatch pass does not
// query the table. A failed read keeps the last known terms and is tried
// again on the next call. Thread-safe; owns its lock (a leaf).
#include <cstdint>
#include <map>
#include <string>

#include "common/clock.h"
#include "common/mutex.h"
#include "store/store.h"

namespace idlegrid::coordinator {

struct AccountTerms {
  std::map<std::string, double> weights;
  std::map<std::string, int64_t> running_limits;  // accounts with a limit only
};

class AccountTermsCache {
 public:
  static constexpr int64_t kRefreshMs = 2000;

  AccountTermsCache(store::Store* store, const Clock* clock, uint32_t default_max_running_tasks,
                    std::map<std::string, double> weight_overrides)
      : store_(store),
        clock_(clock),
        default_max_running_tasks_(default_max_running_tasks),
        weight_overrides_(std::move(weight_overrides)) {}

  // The terms now (a copy).
  AccountTerms Current() IG_EXCLUDES(mu_);

 private:
  store::Store* const store_;
  const Clock* const clock_;
  const uint32_t default_max_running_tasks_;
  const std::map<std::string, double> weight_overrides_;
  Mutex mu_;
  AccountTerms terms_ IG_GUARDED_BY(mu_);
  int64_t read_ms_ IG_GUARDED_BY(mu_) = 0;
};

}  // namespace idlegrid::coordinator
