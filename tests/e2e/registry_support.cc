#include "e2e/registry_support.h"

#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <vector>

#include "common/fs.h"

namespace idlegrid::testing {
namespace {

constexpr std::chrono::seconds kToolTimeout(120);
constexpr int kStartTimeoutMs = 30000;

Result<runtime::CommandOutput> Run(const std::vector<std::string>& argv) {
  Result<runtime::CommandOutput> out = runtime::RunCommand(argv, kToolTimeout);
  if (!out.ok()) return out.status().WithContext(argv[0]);
  if (out->exit_code != 0) {
    return Status::Internal(argv[0] + " " + argv[1] + " exited " + std::to_string(out->exit_code) + ": " +
                            runtime::Trimmed(runtime::Tail(out->stderr_text, 2000)));
  }
  return out;
}

}  // namespace

std::string RegistryToolsMissing() {
  for (const char* tool : {"docker-registry", "skopeo", "openssl", "curl"}) {
    Result<runtime::CommandOutput> probe =
        runtime::RunCommand({"sh", "-c", std::string("command -v ") + tool}, std::chrono::seconds(10));
    if (!probe.ok() || probe->exit_code != 0) {
      return std::string(tool) + " is not installed (scripts/install-deps.sh installs it)";
    }
  }
  return "";
}

Result<std::unique_ptr<TestRegistry>> TestRegistry::Start(const std::string& parent_dir) {
  std::unique_ptr<TestRegistry> r(new TestRegistry());
  std::string tmpl = parent_dir + "/registry-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) return Status::Internal("mkdtemp under " + parent_dir + " failed");
  r->dir_ = tmpl;
  ::chmod(r->dir_.c_str(), 0755);
  // A self-signed certificate for 127.0.0.1 is its own CA.
  const std::string key = r->dir_ + "/key.pem";
  r->ca_file_ = r->dir_ + "/cert.pem";
  IG_RETURN_IF_ERROR(
      Run({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
           key, "-out", r->ca_file_, "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"})
          .status());
  ::chmod(r->ca_file_.c_str(), 0644);
  r->cert_dir_ = r->dir_ + "/certs";
  IG_RETURN_IF_ERROR(MakeDirs(r->cert_dir_, 0755));
  IG_ASSIGN_OR_RETURN(std::string pem, ReadFile(r->ca_file_));
  IG_RETURN_IF_ERROR(WriteFileAtomic(r->cert_dir_ + "/ca.crt", pem, 0644));
  const std::string config = r->dir_ + "/config.yml";
  IG_RETURN_IF_ERROR(WriteFileAtomic(config,
                                     "version: 0.1\n"
                                     "log:\n  level: info\n"
                                     "storage:\n  filesystem:\n    rootdirectory: " +
                                         r->dir_ +
                                         "/data\n"
                                         "  delete:\n    enabled: true\n"
                                         "http:\n  addr: 127.0.0.1:0\n  secret: igtest\n"
                                         "  tls:\n    certificate: " +
                                         r->ca_file_ + "\n    key: " + key + "\n"));
  IG_ASSIGN_OR_RETURN(runtime::Subprocess child, runtime::Subprocess::Spawn({"docker-registry", "serve", config}));
  r->pid_ = child.pid();
  r->pump_ = std::thread(&TestRegistry::PumpOutput, r.get(), std::move(child));
  // Port 0: the kernel picks a free port, and the registry logs it once bound.
  r->host_ = r->WaitForListenAddress(kStartTimeoutMs);
  if (r->host_.empty()) return Status::Internal("docker-registry did not start listening: " + r->Log());
  Result<runtime::CommandOutput> answer =
      Run({"curl", "-sS", "--fail", "--cacert", r->ca_file_, "https://" + r->host_ + "/v2/"});
  if (!answer.ok()) return answer.status().WithContext("registry at " + r->host_ + " does not answer over TLS");
  return r;
}

TestRegistry::~TestRegistry() {
  if (pid_ > 0) ::kill(pid_, SIGTERM);
  if (pump_.joinable()) pump_.join();
  if (!dir_.empty() && std::getenv("IDLEGRID_KEEP_TEST_DIRS") == nullptr) (void)RemoveTree(dir_);
}

void TestRegistry::PumpOutput(runtime::Subprocess child) {
  auto sink = [this](const std::string&, std::string_view data) {
    std::lock_guard<std::mutex> lock(mu_);
    log_.append(data);
    cv_.notify_all();
  };
  while (!child.Pump(std::chrono::milliseconds(1000), -1, sink)) {
  }
  std::lock_guard<std::mutex> lock(mu_);
  exited_ = true;
  cv_.notify_all();
}

std::string TestRegistry::WaitForListenAddress(int timeout_ms) {
  const std::string marker = "listening on ";
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
               [&] { return exited_ || log_.find(marker) != std::string::npos; });
  const size_t at = log_.find(marker);
  if (at == std::string::npos) return "";
  const size_t start = at + marker.size();
  const size_t end = log_.find_first_of(",\" \n", start);
  return log_.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

std::string TestRegistry::Log() {
  std::lock_guard<std::mutex> lock(mu_);
  return runtime::Tail(log_, 4000);
}

Result<std::string> TestRegistry::Push(const std::string& archive, const std::string& repo_tag) {
  const std::string digest_file = dir_ + "/pushed.digest";
  IG_RETURN_IF_ERROR(
      Run({"skopeo", "copy", "--quiet", "--preserve-digests", "--dest-tls-verify=true", "--dest-cert-dir", cert_dir_,
           "--digestfile", digest_file, "oci-archive:" + archive, "docker://" + host_ + "/" + repo_tag})
          .status());
  IG_ASSIGN_OR_RETURN(std::string digest, ReadFile(digest_file));
  return runtime::Trimmed(digest);
}

Status TestRegistry::Delete(const std::string& repo, const std::string& digest) {
  return Run({"skopeo", "delete", "--tls-verify=true", "--cert-dir", cert_dir_,
              "docker://" + host_ + "/" + repo + "@" + digest})
      .status();
}

}  // namespace idlegrid::testing
