#include "api/coordinator_server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>

#include <unistd.h>

#include "api/advertise.h"
#include "api/cert_renewer.h"
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

// Signals are taken synchronously by RunCoordinator's thread; block them
// before any other thread starts.
sigset_t BlockShutdownSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

// The data directory, created if missing and held for as long as the process runs.
Result<FileLock> LockDataDir(const std::string& dir) {
  IG_RETURN_IF_ERROR(MakeDirs(dir, 0700));
  auto lock = FileLock::Acquire(dir + "/coordinator.lock");
  if (!lock.ok()) return lock.status().WithContext("cannot start: " + dir);
  return std::move(lock).value();
}

// The shared directory's init lock: coordinators starting together create
// what they share once. Waits (30 s at most) while another holds it.
Result<FileLock> LockSharedInit(const std::string& shared) {
  IG_RETURN_IF_ERROR(MakeDirs(shared, 0700));
  for (int i = 0; i < 600; ++i) {
    auto l = FileLock::Acquire(shared + "/init.lock");
    if (l.ok()) return std::move(l).value();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // another coordinator is creating them
  }
  return Status::Unavailable("another coordinator holds " + shared + "/init.lock");
}

// What the coordinator runs on: TLS material, the store, the artifact store
// and the join and admin secrets (created on first start).
struct CoordinatorState {
  pki::CoordinatorPki pki;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<artifacts::ArtifactStore> artifacts;
  std::string join_token;
  std::string admin_token;
  bool admin_created = false;  // the first start: no operator token yet
};

Result<CoordinatorState> OpenState(const CoordinatorConfig& config, const std::string& shared) {
  CoordinatorState state;
  auto pki = pki::LoadOrCreate(shared + "/pki", config.tls_names, config.tls_lifetime);
  if (!pki.ok()) return pki.status().WithContext("TLS setup");
  state.pki = std::move(pki).value();
  IG_ASSIGN_OR_RETURN(state.store, store::OpenStore(config.db.empty() ? config.data_dir + "/state.db" : config.db));
  // The database remembers the CA its nodes pin: a coordinator with another
  // one (started without the --shared-dir its peers use, or on a data
  // directory that is not this database's) would strand every agent.
  IG_ASSIGN_OR_RETURN(std::string pinned, state.store->PinClusterCa(state.pki.ca_fingerprint, config.adopt_new_ca));
  if (pinned != state.pki.ca_fingerprint) {
    return Status::FailedPrecondition(
        "this database's nodes pin CA " + pinned + ", but " + shared + "/pki holds CA " + state.pki.ca_fingerprint +
        ": coordinators on one database must share one --shared-dir (docs/operations.md, PostgreSQL); if that CA "
        "is lost for good, --adopt-new-ca records this one (every agent must then join again)");
  }
  state.artifacts = std::make_unique<artifacts::ArtifactStore>(shared + "/artifacts");
  IG_RETURN_IF_ERROR(state.artifacts->Init());
  bool created = false;
  IG_ASSIGN_OR_RETURN(state.join_token, LoadOrCreateSecret(shared + "/join.token", "igj_", &created));
  IG_ASSIGN_OR_RETURN(state.admin_token, LoadOrCreateSecret(shared + "/admin.token", "igt_", &state.admin_created));
  return state;
}

// The keys the coordinator signs with, into `options`; `receipt_fingerprint`
// is the receipt key's, also written beside the PKI for users to pin.
Status LoadSigningKeys(const std::string& shared, coordinator::Options* options, std::string* receipt_fingerprint) {
  // The key the readiness benchmark images are signed with; its public half
  // is what an owner requiring signed images adds to trustedImageKeys.
  auto readiness_key = image::LoadOrCreateSigningKey(shared + "/pki/readiness-image.key",
                                                     shared + "/readiness-image.pub", "idlegrid-readiness");
  if (!readiness_key.ok()) return readiness_key.status().WithContext("readiness image key");
  options->readiness_image_key = std::move(*readiness_key);
  // Countersigns receipts (docs/receipts.md): shared, so that every
  // coordinator of one database signs with the key users pin.
  IG_ASSIGN_OR_RETURN(auto receipt_key,
                      advert::NodeKey::LoadOrCreateFile(shared + "/pki/receipt.key", "coordinator receipt key"));
  *receipt_fingerprint = advert::KeyFingerprint(receipt_key.public_key());
  options->receipt_key = std::move(receipt_key);
  return WriteFileAtomic(shared + "/receipt-key.fingerprint", *receipt_fingerprint + "\n", 0644);
}

// --policy-file: the scheduling policies and the data policy, into `options`.
Status LoadPolicyFile(const CoordinatorConfig& config, coordinator::Options* options) {
  if (config.policy_file.empty()) return Status::Ok();
  auto text = ReadFile(config.policy_file);
  if (!text.ok()) return text.status().WithContext("--policy-file");
  IG_ASSIGN_OR_RETURN(options->policies, sched::ParsePolicyConfig(*text, config.policy_file));
  IG_ASSIGN_OR_RETURN(options->data_policy, sched::ParseDataPolicy(*text, config.policy_file));
  return Status::Ok();
}

// The registry allow-list into `options`, and the skopeo client's settings
// (with the registries' CA files); logs each registry allowed.
Result<registry::SkopeoOptions> LoadRegistries(const CoordinatorConfig& config, coordinator::Options* options) {
  IG_ASSIGN_OR_RETURN(options->registries.allowed,
                      registry::ParseRegistryList(config.allow_registries, "--allow-registry"));
  registry::SkopeoOptions skopeo;
  skopeo.skopeo = config.skopeo;
  skopeo.work_dir = config.data_dir + "/registry";
  IG_ASSIGN_OR_RETURN(skopeo.ca_files, registry::ParseRegistryCaFlags(config.registry_cas));
  for (const auto& r : options->registries.allowed) {
    spdlog::info("registry {} allowed{}{}", r, options->registries.allow_tags ? " (tags resolved at submit)" : "",
                 skopeo.ca_files.count(r) ? ", CA " + skopeo.ca_files.at(r) : "");
  }
  return skopeo;
}

// What the Coordinator is built with beyond its state: the options from the
// flags and files, the registry client's settings, the receipt key's fingerprint.
struct CoordinatorSetup {
  coordinator::Options options;
  registry::SkopeoOptions skopeo;
  std::string receipt_fingerprint;
};

Result<CoordinatorSetup> BuildSetup(const CoordinatorConfig& config, const std::string& shared) {
  CoordinatorSetup setup;
  setup.options = config.options;
  IG_RETURN_IF_ERROR(LoadImageTrust(config, &setup.options));
  IG_RETURN_IF_ERROR(LoadSigningKeys(shared, &setup.options, &setup.receipt_fingerprint));
  IG_RETURN_IF_ERROR(LoadPolicyFile(config, &setup.options));
  IG_ASSIGN_OR_RETURN(setup.skopeo, LoadRegistries(config, &setup.options));
  return setup;
}

// The first start's operator credential (the operator account exists
// from the schema on; data from before accounts belongs to it).
Status AddFirstOperatorToken(coordinator::Coordinator& coord, const std::string& admin_token) {
  store::TokenRecord first;
  first.hash = Sha256Digest(admin_token);
  first.id = auth::TokenIdOf(first.hash);
  first.account = store::kOperatorAccount;
  first.name = "first operator token";
  first.scopes = auth::ScopesOfRole(auth::Role::kOperator);
  first.created_ms = SystemClock::Get()->NowMs();
  return coord.store()->AddApiToken(first);
}

// The readiness benchmarks, from the flags or beside this binary.
void PrepareBenchmarks(coordinator::Coordinator& coord, const CoordinatorConfig& config) {
  const std::string& dir = config.data_dir;
  std::string bench = config.bench_binary;
  if (bench.empty()) {
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    bench = (self.parent_path() / "idlegrid-bench").string();
  }
  // Without it no node can be measured, so none becomes schedulable: fail
  // closed but keep serving (the reason shows in `idlegrid nodes`).
  // Both log their failure and keep it as the reason `idlegrid nodes` shows.
  (void)coord.benchmarks().PrepareCpu(bench, dir + "/tmp");
  std::string gpu_bench = config.gpu_bench_binary;
  if (gpu_bench.empty()) gpu_bench = std::filesystem::path(bench).parent_path() / "idlegrid-gpu-bench";
  (void)coord.benchmarks().PrepareGpu(gpu_bench, dir + "/tmp");
}

// The gRPC listener and the services it serves (declared first: they outlive it).
struct GrpcListener {
  std::unique_ptr<v1::RequesterService::Service> requester;
  std::unique_ptr<v1::AgentService::Service> agent;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

// TLS from the file the PKI keeps (pki::kServerIdentityFile: chain and key,
// replaced by one rename), watched by gRPC: a certificate renewed while the
// coordinator runs (api/cert_renewer.h) is served from the next handshake on.
std::shared_ptr<grpc::ServerCredentials> WatchedTls(const std::string& pki_dir,
                                                    const pki::ServerCertLifetime& lifetime) {
  const auto refresh_s =
      static_cast<unsigned>(std::clamp<int64_t>(CertRenewer::CheckIntervalMs(lifetime) / 1000, 1, 60));
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      pki_dir + "/" + pki::kServerIdentityFile, pki_dir + "/" + pki::kServerIdentityFile, refresh_s);
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  return grpc::experimental::TlsServerCredentials(options);
}

Result<GrpcListener> StartGrpc(coordinator::Coordinator* coord, const std::string& listen, const std::string& pki_dir,
                               const pki::ServerCertLifetime& lifetime) {
  GrpcListener out;
  out.requester = NewRequesterService(coord);
  out.agent = NewAgentService(coord);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, WatchedTls(pki_dir, lifetime), &out.port);
  builder.RegisterService(out.requester.get());
  builder.RegisterService(out.agent.get());
  builder.SetMaxReceiveMessageSize(8 << 20);
  out.server = builder.BuildAndStart();
  if (!out.server || out.port == 0) return Status::Unavailable("cannot listen on " + listen);
  return out;
}

// In the data directory: client.yaml (the operator's admin credentials, for
// this machine), agent-join.txt (the command that joins an agent) and
// login.txt (the command a user runs with a token from `token create`).
Status WriteClientFiles(const CoordinatorConfig& config, const std::string& shared, const CoordinatorState& state,
                        const std::string& receipt_fingerprint, const Advertised& advertised,
                        const std::string& http_addr) {
  const std::string& dir = config.data_dir;
  std::string client_yaml =
      "# written by idlegrid coordinator; admin credentials, keep private\n"
      "address: " +
      advertised.local_address + "\nhttp_address: " + http_addr + "\nca_file: " + shared +
      "/pki/ca.crt\ntoken: " + state.admin_token + "\n" + "receipt_key_fingerprint: " + receipt_fingerprint + "\n";
  IG_RETURN_IF_ERROR(WriteFileAtomic(dir + "/client.yaml", client_yaml, 0600));
  IG_RETURN_IF_ERROR(WriteFileAtomic(dir + "/agent-join.txt",
                                     AgentJoinLine(advertised.url, state.join_token, state.pki.ca_fingerprint), 0600));
  return WriteFileAtomic(dir + "/login.txt",
                         "# give a user this line with a token of theirs (idlegrid token create --account NAME)\n" +
                             LoginLine(advertised.url, state.pki.ca_fingerprint),
                         0644);
}

// Where agents and clients are told to dial, said in the log when it is a guess.
Result<Advertised> Advertise(const CoordinatorConfig& config, int grpc_port) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  IG_ASSIGN_OR_RETURN(Advertised out, AdvertisedAddress({config.advertise_address,
                                                         SplitHostPort(config.grpc_listen).first, grpc_port, host}));
  if (out.guessed) {
    spdlog::warn(
        "--listen {} is a wildcard: agents and users are told {} (this machine's name); "
        "give --advertise-address HOST[:PORT] if they must dial another name or address",
        config.grpc_listen, out.url);
  }
  return out;
}

void AnnounceReady(const std::string& grpc_addr, const std::string& http_addr, const std::string& ca_fingerprint,
                   const std::string& receipt_fingerprint) {
  spdlog::info("coordinator listening: gRPC {} HTTPS {}; CA {}", grpc_addr, http_addr, ca_fingerprint);
  spdlog::info("receipts are countersigned with key {} (users pin it to verify them)", receipt_fingerprint);
  // Machine-readable readiness line: tests and scripts wait for it instead of sleeping.
  std::printf("ready grpc=%s http=%s ca=%s\n", grpc_addr.c_str(), http_addr.c_str(), ca_fingerprint.c_str());
  std::fflush(stdout);
}

// Until SIGINT or SIGTERM; then stops the coordinator and both listeners.
void ServeUntilSignal(const sigset_t& signals, coordinator::Coordinator& coord, HttpApi& http, grpc::Server& grpc) {
  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("signal {}: shutting down", sig);
  http.SetReady(false);
  coord.Stop();
  http.Stop();
  grpc.Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
}

}  // namespace

int RunCoordinator(const CoordinatorConfig& config) {
  const sigset_t signals = BlockShutdownSignals();
  const std::string& dir = config.data_dir;
  // A bad --advertise-address is refused before anything is opened.
  if (auto checked = AdvertisedAddress({config.advertise_address, "", 1, "localhost"}); !checked.ok()) {
    return Fail(checked.status());
  }
  auto lock = LockDataDir(dir);
  if (!lock.ok()) return Fail(lock.status());

  // What coordinators sharing one PostgreSQL database must share too: the CA
  // agents pin, the artifact store, the join and admin secrets.
  const std::string shared = config.shared_dir.empty() ? dir : config.shared_dir;
  auto shared_init = LockSharedInit(shared);
  if (!shared_init.ok()) return Fail(shared_init.status());
  // Coordinators starting together create these once; released once created.
  std::optional<FileLock> init_lock(std::move(shared_init).value());
  auto state = OpenState(config, shared);
  if (!state.ok()) return Fail(state.status());
  auto setup = BuildSetup(config, shared);
  if (!setup.ok()) return Fail(setup.status());
  coordinator::Coordinator coord(std::move(state->store), std::move(state->artifacts),
                                 sched::NewPipelineScheduler({setup->options.policies, 0}), state->join_token,
                                 setup->options, StepAbsorbingClock::Get(),
                                 registry::NewSkopeoClient(std::move(setup->skopeo)));
  if (state->admin_created) {
    if (Status st = AddFirstOperatorToken(coord, state->admin_token); !st.ok()) return Fail(st);
  }
  init_lock.reset();
  PrepareBenchmarks(coord, config);

  auto grpc = StartGrpc(&coord, config.grpc_listen, shared + "/pki", config.tls_lifetime);
  if (!grpc.ok()) return Fail(grpc.status());
  const std::string identity = shared + "/pki/" + pki::kServerIdentityFile;  // chain and key, one file
  HttpApi http(&coord, identity, identity);
  if (Status st = http.SetCertificate(state->pki.server_cert_pem + state->pki.ca_cert_pem, state->pki.server_key_pem);
      !st.ok()) {
    return Fail(st);
  }
  auto [http_host, http_port_wanted] = SplitHostPort(config.http_listen);
  auto http_port = http.Start(http_host, http_port_wanted);
  if (!http_port.ok()) return Fail(http_port.status());
  std::string grpc_addr = SplitHostPort(config.grpc_listen).first + ":" + std::to_string(grpc->port);
  std::string http_addr = http_host + ":" + std::to_string(*http_port);
  auto advertised = Advertise(config, grpc->port);
  if (!advertised.ok()) return Fail(advertised.status());
  if (Status st = WriteClientFiles(config, shared, *state, setup->receipt_fingerprint, *advertised, http_addr);
      !st.ok()) {
    return Fail(st);
  }

  coord.Start();
  CertRenewer renewer({shared, config.tls_names, config.tls_lifetime,
                       [&http](const pki::CoordinatorPki& renewed) {
                         Status st =
                             http.SetCertificate(renewed.server_cert_pem + renewed.ca_cert_pem, renewed.server_key_pem);
                         if (!st.ok()) spdlog::error("serving the renewed certificate over HTTPS: {}", st.message());
                       }},
                      state->pki.server_cert_pem);
  renewer.Start();
  http.SetReady(true);
  AnnounceReady(grpc_addr, http_addr, state->pki.ca_fingerprint, setup->receipt_fingerprint);
  ServeUntilSignal(signals, coord, http, *grpc->server);
  return 0;
}

}  // namespace idlegrid::api
