#pragma once
// The coordinator's half of each agent's Connect stream: commands waiting to
// be pushed down it (AgentSession), and which session is current for each
// node (AgentSessions). Neither calls back into the coordinator.
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::coordinator {

// Commands waiting to be pushed down one agent's Connect stream. Thread-safe;
// its mutex is a leaf (nothing else is locked while it is held).
class AgentSession {
 public:
  // Blocks until a command is queued, the session closes, or `timeout_ms`
  // passes. nullopt on timeout or close (queued commands are then dropped:
  // the agent gets its assignments again when it reconnects).
  std::optional<v1::Command> Next(int timeout_ms) IG_EXCLUDES(mu_);
  // Queues `command`; a closed session drops it.
  void Push(v1::Command command) IG_EXCLUDES(mu_);
  // Wakes Next; later Pushes are dropped. Idempotent.
  void Close() IG_EXCLUDES(mu_);
  bool closed() IG_EXCLUDES(mu_);

 private:
  Mutex mu_;
  CondVar cv_;
  std::deque<v1::Command> queue_ IG_GUARDED_BY(mu_);
  bool closed_ IG_GUARDED_BY(mu_) = false;
};

// The current session of each connected node. Thread-safe; its mutex is taken
// after the coordinator's (NodeTable::mu_ may be held when calling in) and
// before an AgentSession's.
class AgentSessions {
 public:
  // A new session for `node_id`; the one it replaces (a reconnect) is closed.
  std::shared_ptr<AgentSession> Open(const std::string& node_id) IG_EXCLUDES(mu_);
  // Closes `session`, and forgets it when it is still the node's current one
  // (true then; false when a reconnect already replaced it).
  bool Close(const std::string& node_id, const std::shared_ptr<AgentSession>& session) IG_EXCLUDES(mu_);
  // Closes and forgets the node's session (it was found offline).
  void Drop(const std::string& node_id) IG_EXCLUDES(mu_);
  // Closes every session (shutdown); later Opens still work.
  void CloseAll() IG_EXCLUDES(mu_);
  // Whether the node has a session: only then can it be sent work.
  bool Connected(const std::string& node_id) const IG_EXCLUDES(mu_);
  // Queues `command` for the node. false (nothing queued) when it has no session.
  bool Push(const std::string& node_id, v1::Command command) IG_EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<AgentSession>> by_node_ IG_GUARDED_BY(mu_);
};

}  // namespace idlegrid::coordinator
