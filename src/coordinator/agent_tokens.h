#pragma once
// Agent tokens this coordinator has checked, by hash, and whose node each
// is: a cache of the store's record (Store::NodeByTokenHash), so each
// authenticated agent call does not read the store.
#include <map>
#include <optional>
#include <string>

#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace idlegrid::coordinator {

// Thread-safe. Its mutex is a leaf: taken with no other lock held by it.
class AgentTokenCache {
 public:
  // The node the token hash belongs to, if it was remembered.
  std::optional<std::string> NodeOf(const std::string& token_hash) const IG_EXCLUDES(mu_);
  void Remember(const std::string& token_hash, const std::string& node_id) IG_EXCLUDES(mu_);
  // The node re-registered with a new token: every hash remembered for it is
  // forgotten (the store no longer knows them either).
  void ForgetNode(const std::string& node_id) IG_EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  std::map<std::string, std::string> node_by_hash_ IG_GUARDED_BY(mu_);
};

}  // namespace idlegrid::coordinator
