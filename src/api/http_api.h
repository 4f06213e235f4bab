#pragma once
// HTTPS/JSON API: the requester operations, with request and response bodies
// in protobuf's JSON mapping of the same messages the gRPC API uses. Each
// route names the gRPC method it serves, and the same Gate decides it.
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"
#include "api/gate.h"
#include "coordinator/coordinator.h"

namespace httplib {
class SSLServer;
}

namespace idlegrid::api {

class HttpApi {
 public:
  HttpApi(coordinator::Coordinator* c, const std::string& cert_file, const std::string& key_file);
  ~HttpApi();
  // Binds host:port (0 = any free port) and serves on a background thread.
  // Returns the bound port.
  Result<int> Start(const std::string& host, int port);
  void Stop();

 private:
  void Routes();
  coordinator::Coordinator* c_;
  Gate gate_;
  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;
};

}  // namespace idlegrid::api
