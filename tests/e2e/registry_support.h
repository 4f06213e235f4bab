#pragma once
// A real OCI registry for tests: Debian's docker-registry serving
// HTTPS on 127.0.0.1 with a self-signed certificate that openssl makes in
// the registry's own directory. It binds a port of the kernel's choosing and
// is ready once its log says where it listens (and one request over TLS,
// trusting only that certificate, answers); no sleeps.
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "runtime/subprocess.h"

namespace idlegrid::testing {

// Why registry tests must skip here ("" when docker-registry, skopeo,
// openssl and curl are all installed): scripts/install-deps.sh installs them.
std::string RegistryToolsMissing();

class TestRegistry {
 public:
  // Starts a registry with its files under `parent_dir` (which must exist),
  // readable by every user so that agents running as other users can read
  // its CA file. Deleting manifests is enabled. Errors say which step failed
  // and quote the registry's log.
  static Result<std::unique_ptr<TestRegistry>> Start(const std::string& parent_dir);
  // Stops the registry (SIGTERM, then waits for it).
  ~TestRegistry();

  const std::string& host() const { return host_; }          // "127.0.0.1:PORT"
  const std::string& ca_file() const { return ca_file_; }    // its certificate, PEM, mode 0644
  const std::string& cert_dir() const { return cert_dir_; }  // a skopeo --cert-dir holding ca.crt

  // Copies an OCI archive into the registry as `repo_tag` ("igtest/prog:v1")
  // and returns its manifest digest, which the copy keeps.
  Result<std::string> Push(const std::string& archive, const std::string& repo_tag);
  // Removes the manifest `digest` of `repo` from the registry.
  Status Delete(const std::string& repo, const std::string& digest);
  // The registry's log so far, for failure messages.
  std::string Log();

 private:
  TestRegistry() = default;
  // Reads the registry's output until it exits; wakes waiters on each chunk.
  void PumpOutput(runtime::Subprocess child);
  // The address after "listening on " in the log, waiting up to `timeout_ms`;
  // "" if the registry exited or the time ran out first.
  std::string WaitForListenAddress(int timeout_ms);

  std::string dir_, host_, ca_file_, cert_dir_;
  pid_t pid_ = -1;
  std::thread pump_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string log_;      // guarded by mu_
  bool exited_ = false;  // guarded by mu_
};

}  // namespace idlegrid::testing
