#include "api/coordinator_server.h"

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>

#include "api/grpc_services.h"
#include "advert/node_key.h"
#include "api/http_api.h"
#include "auth/credentials.h"
#include "sched/data_policy.h"
#include "sched/pipeline.h"
#include "common/digest.h"
#include "common/fs.h"
#include "common/random.h"
#include "image/signature_files.h"
#include "pki/pki.h"
#include "registry/allow_list.h"
#include "registry/registry_client.h"

namespace idlegrid::api {

namespace {

std::pair<std::string, int> SplitHostPort(const std::string& addr) {
  auto colon = addr.rfind(':');
  if (colon == std::string::npos) return {addr, 0};
  return {addr.substr(0, colon), std::atoi(addr.c_str() + colon + 1)};
}

// Reads a secret file, creating it with a fresh secret on first start.
Result<std::string> LoadOrCreateSecret(const std::string& path, const std::string& prefix, bool* created) {
  *created = false;
  if (PathExists(path)) {
    IG_ASSIGN_OR_RETURN(std::string s, ReadFile(path));
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }
  std::string secret = prefix + RandomHex(24);
  IG_RETURN_IF_ERROR(WriteFileAtomic(path, secret + "\n", 0600));
  *created = true;
  return secret;
}

int Fail(const Status& st) {
  std::cerr << "idlegrid coordinator: " << st.message() << "\n";
  return 1;
}

// The operator's image-signature rule from the flags: both or neither, so
// that a key given without the rule (or the rule without a key) is not
// silently a no-op.
Status LoadImageTrust(const CoordinatorConfig& config, coordinator::Options* options) {
  if (options->require_signed_images && config.trusted_image_key_files.empty()) {
    return Status::InvalidArgument("--require-signed-images needs at least one --trusted-image-key FILE.pub");
  }
  if (!options->require_signed_images && !config.trusted_image_key_files.empty()) {
    return Status::InvalidArgument("--trusted-image-key has no effect without --require-signed-images");
  }
  for (const std::string& file : config.trusted_image_key_files) {
    auto key = image::LoadPublicKeyFile(file);
    if (!key.ok()) return key.status().WithContext("--trusted-image-key");
    options->trusted_image_keys.push_back(std::move(*key));
  }
  return Status::Ok();
}

}  // namespace

int RunCoordinator(const CoordinatorConfig& config) {
  // Signals are taken synchronously by this thread; block them before any other thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const std::string& dir = config.data_dir;
  if (Status st = MakeDirs(dir, 0700); !st.ok()) return Fail(st);
  auto lock = FileLock::Acquire(dir + "/coordinator.lock");
  if (!lock.ok()) return Fail(lock.status().WithContext("cannot start: " + dir));

  // What coordinators sharing one PostgreSQL database must share too: the CA
  // agents pin, the artifact store, the join and admin secrets.
  const std::string shared = config.shared_dir.empty() ? dir : config.shared_dir;
  if (Status st = MakeDirs(shared, 0700); !st.ok()) return Fail(st);
  std::optional<FileLock> init_lock;  // coordinators starting together create these once
  for (int i = 0; i < 600 && !init_lock; ++i) {
    auto l = FileLock::Acquire(shared + "/init.lock");
    if (l.ok()) {
      init_lock.emplace(std::move(*l));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // another coordinator is creating them
    }
  }
  if (!init_lock) return Fail(Status::Unavailable("another coordinator holds " + shared + "/init.lock"));
  auto pki = pki::LoadOrCreate(shared + "/pki", config.tls_names);
  if (!pki.ok()) return Fail(pki.status().WithContext("TLS setup"));
  auto store = store::OpenStore(config.db.empty() ? dir + "/state.db" : config.db);
  if (!store.ok()) return Fail(store.status());
  auto artifacts = std::make_unique<artifacts::ArtifactStore>(shared + "/artifacts");
  if (Status st = artifacts->Init(); !st.ok()) return Fail(st);

  bool created = false;
  auto join = LoadOrCreateSecret(shared + "/join.token", "igj_", &created);
  if (!join.ok()) return Fail(join.status());
  bool admin_created = false;
  auto admin = LoadOrCreateSecret(shared + "/admin.token", "igt_", &admin_created);
  if (!admin.ok()) return Fail(admin.status());

  coordinator::Options options = config.options;
  if (Status st = LoadImageTrust(config, &options); !st.ok()) return Fail(st);
  // The key the readiness benchmark images are signed with; its public half
  // is what an owner requiring signed images adds to trustedImageKeys.
  auto readiness_key = image::LoadOrCreateSigningKey(shared + "/pki/readiness-image.key",
                                                     shared + "/readiness-image.pub", "idlegrid-readiness");
  if (!readiness_key.ok()) return Fail(readiness_key.status().WithContext("readiness image key"));
  options.readiness_image_key = std::move(*readiness_key);
  // Countersigns receipts (docs/receipts.md): shared, so that every
  // coordinator of one database signs with the key users pin.
  auto receipt_key = advert::NodeKey::LoadOrCreateFile(shared + "/pki/receipt.key", "coordinator receipt key");
  if (!receipt_key.ok()) return Fail(receipt_key.status());
  const std::string receipt_fingerprint = advert::KeyFingerprint(receipt_key->public_key());
  options.receipt_key = std::move(*receipt_key);
  if (Status st = WriteFileAtomic(shared + "/receipt-key.fingerprint", receipt_fingerprint + "\n", 0644); !st.ok()) {
    return Fail(st);
  }
  if (!config.policy_file.empty()) {
    auto text = ReadFile(config.policy_file);
    if (!text.ok()) return Fail(text.status().WithContext("--policy-file"));
    auto policies = sched::ParsePolicyConfig(*text, config.policy_file);
    if (!policies.ok()) return Fail(policies.status());
    options.policies = std::move(*policies);
    auto data_policy = sched::ParseDataPolicy(*text, config.policy_file);
    if (!data_policy.ok()) return Fail(data_policy.status());
    options.data_policy = std::move(*data_policy);
  }
  auto allowed = registry::ParseRegistryList(config.allow_registries, "--allow-registry");
  if (!allowed.ok()) return Fail(allowed.status());
  options.registries.allowed = std::move(*allowed);
  registry::SkopeoOptions skopeo;
  skopeo.skopeo = config.skopeo;
  skopeo.work_dir = dir + "/registry";
  auto cas = registry::ParseRegistryCaFlags(config.registry_cas);
  if (!cas.ok()) return Fail(cas.status());
  skopeo.ca_files = std::move(*cas);
  for (const auto& r : options.registries.allowed) {
    spdlog::info("registry {} allowed{}{}", r, options.registries.allow_tags ? " (tags resolved at submit)" : "",
                 skopeo.ca_files.count(r) ? ", CA " + skopeo.ca_files.at(r) : "");
  }
  coordinator::Coordinator coord(std::move(store).value(), std::move(artifacts),
                                 sched::NewPipelineScheduler({options.policies, 0}), *join, options, SystemClock::Get(),
                                 registry::NewSkopeoClient(std::move(skopeo)));
  if (admin_created) {
    // The first start's operator credential (the operator account exists
    // from the schema on; data from before accounts belongs to it).
    store::TokenRecord first;
    first.hash = Sha256Digest(*admin);
    first.id = auth::TokenIdOf(first.hash);
    first.account = store::kOperatorAccount;
    first.name = "first operator token";
    first.scopes = auth::ScopesOfRole(auth::Role::kOperator);
    first.created_ms = SystemClock::Get()->NowMs();
    if (Status st = coord.store()->AddApiToken(first); !st.ok()) return Fail(st);
  }
  init_lock.reset();

  std::string bench = config.bench_binary;
  if (bench.empty()) {
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    bench = (self.parent_path() / "idlegrid-bench").string();
  }
  // Without it no node can be measured, so none becomes schedulable: fail
  // closed but keep serving (the reason shows in `idlegrid nodes`).
  // Both log their failure and keep it as the reason `idlegrid nodes` shows.
  (void)coord.PrepareBenchmark(bench, dir + "/tmp");
  std::string gpu_bench = config.gpu_bench_binary;
  if (gpu_bench.empty()) gpu_bench = std::filesystem::path(bench).parent_path() / "idlegrid-gpu-bench";
  (void)coord.PrepareGpuBenchmark(gpu_bench, dir + "/tmp");

  auto requester = NewRequesterService(&coord);
  auto agent = NewAgentService(&coord);
  grpc::SslServerCredentialsOptions tls;
  tls.pem_key_cert_pairs.push_back({pki->server_key_pem, pki->server_cert_pem + pki->ca_cert_pem});
  int grpc_port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(config.grpc_listen, grpc::SslServerCredentials(tls), &grpc_port);
  builder.RegisterService(requester.get());
  builder.RegisterService(agent.get());
  builder.SetMaxReceiveMessageSize(8 << 20);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || grpc_port == 0) return Fail(Status::Unavailable("cannot listen on " + config.grpc_listen));

  HttpApi http(&coord, shared + "/pki/server.crt", shared + "/pki/server.key");
  auto [http_host, http_port_wanted] = SplitHostPort(config.http_listen);
  auto http_port = http.Start(http_host, http_port_wanted);
  if (!http_port.ok()) return Fail(http_port.status());

  std::string grpc_addr = SplitHostPort(config.grpc_listen).first + ":" + std::to_string(grpc_port);
  std::string http_addr = http_host + ":" + std::to_string(*http_port);
  std::string client_yaml =
      "# written by idlegrid coordinator; admin credentials, keep private\n"
      "address: " +
      grpc_addr + "\nhttp_address: " + http_addr + "\nca_file: " + shared + "/pki/ca.crt\ntoken: " + *admin + "\n" +
      "receipt_key_fingerprint: " + receipt_fingerprint + "\n";
  if (Status st = WriteFileAtomic(dir + "/client.yaml", client_yaml, 0600); !st.ok()) return Fail(st);
  std::string join_line = "idlegrid agent --coordinator " + grpc_addr + " --join-token " + *join + " --ca-hash " +
                          pki->ca_fingerprint + "\n";
  if (Status st = WriteFileAtomic(dir + "/agent-join.txt", join_line, 0600); !st.ok()) return Fail(st);

  coord.Start();
  spdlog::info("coordinator listening: gRPC {} HTTPS {}; CA {}", grpc_addr, http_addr, pki->ca_fingerprint);
  spdlog::info("receipts are countersigned with key {} (users pin it to verify them)", receipt_fingerprint);
  // Machine-readable readiness line: tests and scripts wait for it instead of sleeping.
  std::printf("ready grpc=%s http=%s ca=%s\n", grpc_addr.c_str(), http_addr.c_str(), pki->ca_fingerprint.c_str());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("signal {}: shutting down", sig);
  coord.Stop();
  http.Stop();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  return 0;
}

}  // namespace idlegrid::api
