#pragma once
// Renews the coordinator's server certificate while it runs
// (docs/operations.md, "Certificates"): every check interval it asks the PKI
// to re-issue the leaf if it is within its renewal window (pki::LoadOrCreate
// does nothing otherwise), then hands a changed one to the HTTPS API. gRPC
// reads the same files through its file watcher (api/coordinator_server.cc).
// Coordinators sharing a directory renew under its init lock: one issues, the
// others load what it wrote.
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "pki/pki.h"

namespace idlegrid::api {

class CertRenewer {
 public:
  struct Config {
    std::string shared_dir;  // holds pki/ and init.lock
    std::vector<std::string> tls_names;
    pki::ServerCertLifetime lifetime;
    // Called (on the renewer's thread) with the material after it changed.
    std::function<void(const pki::CoordinatorPki&)> on_renewed;
  };
  CertRenewer(Config config, std::string current_cert_pem);
  ~CertRenewer();
  void Start();
  void Stop();

  // How often to look: a quarter of the renewal window, between 1 s and 1 h.
  static int64_t CheckIntervalMs(const pki::ServerCertLifetime& lifetime);

 private:
  void Loop();
  void CheckOnce();

  const Config config_;
  std::string current_cert_pem_;  // the renewer thread's alone
  Mutex mu_;
  CondVar cv_;
  bool stop_ IG_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace idlegrid::api
