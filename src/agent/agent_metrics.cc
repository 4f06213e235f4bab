#include "agent/agent_metrics.h"

#include <httplib.h>

#include <chrono>
#include <vector>

#include "common/version.h"
#include "metrics/exposition.h"

namespace idlegrid::agent {

namespace {

metrics::Family Family(std::string name, std::string help, metrics::Type type) {
  metrics::Family f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

metrics::Family Gauge(std::string name, std::string help, double value) {
  metrics::Family f = Family(std::move(name), std::move(help), metrics::Type::kGauge);
  f.samples.push_back({{}, value});
  return f;
}

}  // namespace

void AgentMetrics::CountReport(const std::string& event) {
  MutexLock lock(&mu_);
  ++reports_[event];
}

void AgentMetrics::CountHeartbeat(bool delivered) {
  MutexLock lock(&mu_);
  ++(delivered ? heartbeats_ok_ : heartbeats_failed_);
}

void AgentMetrics::SetConnected(bool connected) {
  MutexLock lock(&mu_);
  connected_ = connected;
}

std::string AgentMetrics::Render(const AgentGauges& g) const {
  std::vector<metrics::Family> out;
  metrics::Family build =
      Family("idlegrid_agent_build_info", "The agent's version, in a label; always 1.", metrics::Type::kGauge);
  build.samples.push_back({{{"version", BuildVersion()}}, 1.0});
  out.push_back(std::move(build));
  out.push_back(Gauge("idlegrid_agent_running_attempts", "Attempts this agent runs now.",
                      static_cast<double>(g.running_attempts)));
  out.push_back(Gauge("idlegrid_agent_paused", "1 while the owner has paused the machine.", g.paused ? 1 : 0));
  out.push_back(
      Gauge("idlegrid_agent_draining", "1 while shutting down (finishing, taking nothing new).", g.draining ? 1 : 0));
  MutexLock lock(&mu_);
  out.push_back(
      Gauge("idlegrid_agent_connected", "1 while the command stream to a coordinator is open.", connected_ ? 1 : 0));
  metrics::Family reports = Family("idlegrid_agent_reports_total", "Attempt reports the coordinator took, by event.",
                                   metrics::Type::kCounter);
  for (const auto& [event, n] : reports_) reports.samples.push_back({{{"event", event}}, static_cast<double>(n)});
  out.push_back(std::move(reports));
  metrics::Family beats = Family("idlegrid_agent_heartbeats_total", "Heartbeats sent, by whether one was delivered.",
                                 metrics::Type::kCounter);
  beats.samples.push_back({{{"result", "delivered"}}, static_cast<double>(heartbeats_ok_)});
  beats.samples.push_back({{{"result", "failed"}}, static_cast<double>(heartbeats_failed_)});
  out.push_back(std::move(beats));
  return metrics::Render(out);
}

Status CheckLoopbackListen(const std::string& listen) {
  auto colon = listen.rfind(':');
  const std::string host = colon == std::string::npos ? "" : listen.substr(0, colon);
  const std::string port = colon == std::string::npos ? "" : listen.substr(colon + 1);
  const bool loopback = host == "127.0.0.1" || host == "[::1]" || host == "localhost";
  const bool numeric = !port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos;
  if (!loopback || !numeric) {
    return Status::InvalidArgument("--metrics-listen " + listen +
                                   ": give 127.0.0.1:PORT, [::1]:PORT or localhost:PORT (the agent listens on "
                                   "loopback only)");
  }
  return Status::Ok();
}

MetricsServer::MetricsServer() = default;
MetricsServer::~MetricsServer() { Stop(); }

Result<int> MetricsServer::Start(const std::string& listen, std::function<std::string()> render) {
  IG_RETURN_IF_ERROR(CheckLoopbackListen(listen));
  const auto colon = listen.rfind(':');
  std::string host = listen.substr(0, colon);
  if (host == "[::1]") host = "::1";
  const int wanted = std::stoi(listen.substr(colon + 1));
  server_ = std::make_unique<httplib::Server>();
  server_->Get("/metrics", [render = std::move(render)](const httplib::Request&, httplib::Response& res) {
    res.set_content(render(), "text/plain; version=0.0.4");
  });
  const int port = wanted == 0 ? server_->bind_to_any_port(host) : (server_->bind_to_port(host, wanted) ? wanted : -1);
  if (port <= 0) return Status::Unavailable("--metrics-listen " + listen + ": cannot listen there");
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // httplib's stop() does nothing before the loop runs: wait for it, so a
  // Stop right after Start cannot hang in join.
  for (int i = 0; i < 5000 && !server_->is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return port;
}

void MetricsServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace idlegrid::agent
