#include "coordinator/agent_tokens.h"

namespace idlegrid::coordinator {

std::optional<std::string> AgentTokenCache::NodeOf(const std::string& token_hash) const {
  MutexLock lock(&mu_);
  auto it = node_by_hash_.find(token_hash);
  if (it == node_by_hash_.end()) return std::nullopt;
  return it->second;
}

void AgentTokenCache::Remember(const std::string& token_hash, const std::string& node_id) {
  MutexLock lock(&mu_);
  node_by_hash_[token_hash] = node_id;
}

void AgentTokenCache::ForgetNode(const std::string& node_id) {
  MutexLock lock(&mu_);
  for (auto it = node_by_hash_.begin(); it != node_by_hash_.end();) {
    it = it->second == node_id ? node_by_hash_.erase(it) : std::next(it);
  }
}

}  // namespace idlegrid::coordinator
