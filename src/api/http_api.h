#pragma once
// HTTPS/JSON API: the requester operations, with request and response bodies
// in protobuf's JSON mapping of the same messages the gRPC API uses. Each
// route names the gRPC method it serves, and the same Gate decides it.
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "common/status.h"
#include "api/gate.h"
#include "api/tls_identity.h"
#include "coordinator/coordinator.h"

namespace httplib {
class SSLServer;
struct Request;
struct Response;
}  // namespace httplib

namespace idlegrid::api {

class HttpApi {
 public:
  HttpApi(coordinator::Coordinator* c, const std::string& cert_file, const std::string& key_file);
  ~HttpApi();
  // Binds host:port (0 = any free port) and serves on a background thread.
  // Returns the bound port.
  Result<int> Start(const std::string& host, int port);
  void Stop();
  // What /readyz answers beyond its store probe: false until the coordinator
  // has started its loops, and again once it is shutting down.
  void SetReady(bool ready) { ready_.store(ready); }
  // The certificate chain (leaf first) and key new connections are served
  // with, from now on (a renewed certificate: api/cert_renewer.h).
  Status SetCertificate(const std::string& chain_pem, const std::string& key_pem);

 private:
  // Registers every route, group by group (httplib tries a method's routes in
  // the order they were registered).
  void Routes();
  void JobRoutes();
  void NodeRoutes();
  void JobDetailRoutes();
  void WorkflowRoutes();
  void HistoryRoutes();
  void MetricsRoutes();
  void HealthRoutes();
  void MarketAndAccountRoutes();
  void LedgerRoutes();
  void ArtifactRoutes();
  // The caller, or the refusal already written to `res`.
  std::optional<auth::Caller> Admit(const httplib::Request& req, httplib::Response& res, std::string_view method,
                                    const TargetOf& target);

  coordinator::Coordinator* c_;
  Gate gate_;
  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;
  std::atomic<bool> ready_{false};
  TlsIdentity identity_;
};

}  // namespace idlegrid::api
