#include "api/cert_renewer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "common/fs.h"

namespace idlegrid::api {

CertRenewer::CertRenewer(Config config, std::string current_cert_pem)
    : config_(std::move(config)), current_cert_pem_(std::move(current_cert_pem)) {}

CertRenewer::~CertRenewer() { Stop(); }

int64_t CertRenewer::CheckIntervalMs(const pki::ServerCertLifetime& lifetime) {
  return std::clamp<int64_t>(lifetime.renew_before_seconds * 1000 / 4, 1000, 3600 * 1000);
}

void CertRenewer::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void CertRenewer::Stop() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

void CertRenewer::Loop() {
  const auto interval = std::chrono::milliseconds(CheckIntervalMs(config_.lifetime));
  for (;;) {
    {
      MutexLock lock(&mu_);
      if (cv_.WaitFor(&mu_, interval, [&]() IG_REQUIRES(mu_) { return stop_; })) return;
    }
    CheckOnce();
  }
}

void CertRenewer::CheckOnce() {
  // Another coordinator of this directory is starting or renewing: the next
  // pass loads what it wrote.
  auto lock = FileLock::Acquire(config_.shared_dir + "/init.lock");
  if (!lock.ok()) return;
  auto pki = pki::LoadOrCreate(config_.shared_dir + "/pki", config_.tls_names, config_.lifetime);
  if (!pki.ok()) {
    spdlog::error("renewing the server certificate: {}", pki.status().message());
    return;
  }
  if (pki->server_cert_pem == current_cert_pem_) return;
  current_cert_pem_ = pki->server_cert_pem;
  spdlog::info("server certificate renewed; valid until {} (Unix seconds)", pki->server_not_after_s);
  if (config_.on_renewed) config_.on_renewed(*pki);
  // Machine-readable, as the readiness line: tests and scripts await it.
  std::printf("tls-renewed not_after=%lld\n", static_cast<long long>(pki->server_not_after_s));
  std::fflush(stdout);
}

}  // namespace idlegrid::api
