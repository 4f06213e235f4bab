#pragma once
// What an agent counts about itself, as Prometheus text (docs/metrics.md,
// "Agent metrics"), and the loopback-only HTTP server that answers
// `GET /metrics` with it (`idlegrid agent --metrics-listen 127.0.0.1:9464`).
// The agent never listens beyond loopback: a provider's Prometheus or
// node_exporter's textfile collector on the same host scrapes it.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "common/mutex.h"
#include "common/status.h"

namespace httplib {
class Server;
}

namespace idlegrid::agent {

// Read at scrape time from the agent's own state.
struct AgentGauges {
  uint64_t running_attempts = 0;
  bool paused = false;    // by the owner (pause policy or `agent pause`)
  bool draining = false;  // SIGTERM: finishing, taking nothing new
};

class AgentMetrics {
 public:
  // A report the coordinator took, by event ("started", "succeeded", ...).
  void CountReport(const std::string& event);
  void CountHeartbeat(bool delivered);
  void SetConnected(bool connected);
  std::string Render(const AgentGauges& gauges) const;

 private:
  mutable Mutex mu_;
  std::map<std::string, uint64_t> reports_ IG_GUARDED_BY(mu_);
  uint64_t heartbeats_ok_ IG_GUARDED_BY(mu_) = 0;
  uint64_t heartbeats_failed_ IG_GUARDED_BY(mu_) = 0;
  bool connected_ IG_GUARDED_BY(mu_) = false;
};

// InvalidArgument unless `listen` is HOST:PORT with a loopback host
// (127.0.0.1, ::1 as [::1], localhost).
Status CheckLoopbackListen(const std::string& listen);

class MetricsServer {
 public:
  MetricsServer();  // out of line: httplib::Server is complete only in the .cc
  ~MetricsServer();
  // Binds `listen` (port 0: any) and serves `render()` at /metrics on a
  // thread of its own; returns the bound port.
  Result<int> Start(const std::string& listen, std::function<std::string()> render);
  void Stop();

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace idlegrid::agent
