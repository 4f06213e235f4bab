#include "coordinator/agent_session.h"

#include <chrono>

namespace idlegrid::coordinator {

std::optional<v1::Command> AgentSession::Next(int timeout_ms) {
  MutexLock lock(&mu_);
  cv_.WaitFor(&mu_, std::chrono::milliseconds(timeout_ms),
              [&]() IG_REQUIRES(mu_) { return closed_ || !queue_.empty(); });
  if (closed_ || queue_.empty()) return std::nullopt;
  v1::Command c = std::move(queue_.front());
  queue_.pop_front();
  return c;
}

void AgentSession::Push(v1::Command command) {
  MutexLock lock(&mu_);
  if (closed_) return;
  queue_.push_back(std::move(command));
  cv_.NotifyAll();
}

void AgentSession::Close() {
  MutexLock lock(&mu_);
  closed_ = true;
  cv_.NotifyAll();
}

bool AgentSession::closed() {
  MutexLock lock(&mu_);
  return closed_;
}

std::shared_ptr<AgentSession> AgentSessions::Open(const std::string& node_id) {
  auto session = std::make_shared<AgentSession>();
  MutexLock lock(&mu_);
  std::shared_ptr<AgentSession>& slot = by_node_[node_id];
  if (slot) slot->Close();  // a reconnect replaces the old stream
  slot = session;
  return session;
}

bool AgentSessions::Close(const std::string& node_id, const std::shared_ptr<AgentSession>& session) {
  session->Close();
  MutexLock lock(&mu_);
  auto it = by_node_.find(node_id);
  if (it == by_node_.end() || it->second != session) return false;
  by_node_.erase(it);
  return true;
}

void AgentSessions::Drop(const std::string& node_id) {
  MutexLock lock(&mu_);
  auto it = by_node_.find(node_id);
  if (it == by_node_.end()) return;
  it->second->Close();
  by_node_.erase(it);
}

void AgentSessions::CloseAll() {
  MutexLock lock(&mu_);
  for (auto& [id, session] : by_node_) session->Close();
}

bool AgentSessions::Connected(const std::string& node_id) const {
  MutexLock lock(&mu_);
  return by_node_.count(node_id) > 0;
}

bool AgentSessions::Push(const std::string& node_id, v1::Command command) {
  MutexLock lock(&mu_);
  auto it = by_node_.find(node_id);
  if (it == by_node_.end()) return false;
  it->second->Push(std::move(command));
  return true;
}

}  // namespace idlegrid::coordinator
