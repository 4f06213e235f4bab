#pragma once
// A recent index of the active attempts per node, so heartbeats (thousands a
// second) reconcile against memory instead of querying the store each time.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "store/store.h"

namespace idlegrid::coordinator {

struct NodeAttempts {
  std::vector<std::string> running;  // RUNNING: what the agent must list
  std::vector<std::string> active;   // ASSIGNED or RUNNING: not ended, no need to ask the store
};
using RunningIndex = std::map<std::string, NodeAttempts>;  // node id -> its active attempts

// Thread-safe. Its mutex is a leaf, and is never held across the store read.
class RunningIndexCache {
 public:
  // An index at most `max_age_ms` old at `now_ms`. When it is older, one
  // caller reads the store and refreshes it; callers meanwhile keep the
  // previous index instead of queueing behind the store. An error only when
  // the store read fails and there is no index yet (or it was that caller's
  // refresh).
  Result<std::shared_ptr<const RunningIndex>> Get(store::Store& store, int64_t now_ms, int64_t max_age_ms)
      IG_EXCLUDES(mu_);

  // The index of `active` (pure; what Get builds).
  static RunningIndex Build(const std::vector<store::ActiveAttempt>& active);

 private:
  Mutex mu_;
  std::shared_ptr<const RunningIndex> index_ IG_GUARDED_BY(mu_);
  int64_t built_ms_ IG_GUARDED_BY(mu_) = -1;
  bool refreshing_ IG_GUARDED_BY(mu_) = false;  // one caller is reading the store
};

}  // namespace idlegrid::coordinator
