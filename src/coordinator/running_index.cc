#include "coordinator/running_index.h"

namespace idlegrid::coordinator {

RunningIndex RunningIndexCache::Build(const std::vector<store::ActiveAttempt>& active) {
  RunningIndex index;
  for (const auto& a : active) {
    NodeAttempts& node = index[a.node_id];
    node.active.push_back(a.attempt_id);
    if (a.state == v1::RUNNING) node.running.push_back(a.attempt_id);
  }
  return index;
}

Result<std::shared_ptr<const RunningIndex>> RunningIndexCache::Get(store::Store& store, int64_t now_ms,
                                                                   int64_t max_age_ms) {
  {
    MutexLock lock(&mu_);
    bool fresh = index_ && now_ms - built_ms_ <= max_age_ms;
    if (fresh || (index_ && refreshing_)) return index_;
    refreshing_ = true;
  }
  auto active = store.ActiveAttempts();
  MutexLock lock(&mu_);
  refreshing_ = false;
  if (!active.ok()) return active.status();
  index_ = std::make_shared<const RunningIndex>(Build(*active));
  built_ms_ = now_ms;
  return index_;
}

}  // namespace idlegrid::coordinator
