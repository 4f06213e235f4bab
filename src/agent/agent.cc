#include "agent/agent.h"

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "advert/node_key.h"
#include "agent/image_cache.h"
#include "agent/input_cache.h"
#include "agent/log_shipper.h"
#include "common/clock.h"
#include "common/coordinator_target.h"
#include "common/fs.h"
#include "common/grpc_status.h"
#include "common/version.h"
#include "discovery/host.h"
#include "discovery/simulated.h"
#include "image/signature_files.h"
#include "market/market.h"
#include "pki/pki.h"
#include "runtime/enforcement_probe.h"
#include "runtime/podman_runtime.h"
#include "runtime/routing_runtime.h"
#include "runtime/runc_runtime.h"

namespace idlegrid::agent {

namespace {

constexpr char kTargetName[] = "idlegrid-coordinator";
// On shutdown, killed attempts get this long to be reported handed back.
constexpr int64_t kStopReportMs = 3000;

// std::chrono::system_clock in ms: gRPC deadlines are its time points (the
// process clock, SystemClock, may be absorbing a step and differ from it).
int64_t SystemWallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Hostname() {
  char buf[256] = {0};
  ::gethostname(buf, sizeof(buf) - 1);
  return buf;
}

std::unique_ptr<runtime::ContainerRuntime> MakeRuntime(const AgentConfig& config) {
  if (config.driver == "podman") return runtime::NewPodmanRuntime(config.podman);
  runtime::RuncRuntimeOptions runc;
  runc.runc_binary = config.runc;
  runc.pilots = !config.no_pilots;
  runc.state_dir = config.data_dir + "/runc";
  runc.bundles_dir = config.data_dir + "/bundles";
  auto fast = runtime::NewRuncRuntime(runc);
  if (fast->Runtimes().empty()) spdlog::warn("runc driver unavailable; containers start through podman");
  if (config.driver == "runc") return fast;
  return runtime::NewRoutingRuntime(runtime::NewPodmanRuntime(config.podman), std::move(fast),
                                    config.data_dir + "/podman-loads");
}

// The owner's GPU asks that price nothing here (market::UnmatchedAsks), each
// warned with the names this node's GPUs really have, so a typo or a short
// name that does not apply is seen at start rather than as unpaid work.
void WarnAsksPricingNothing(const v1::Advertisement& ad) {
  market::Asks asks;
  for (const v1::PriceAsk& a : ad.asks()) asks.emplace(a.device_class(), a.per_hour());
  std::vector<std::string> names;
  std::string listed;
  for (const v1::GpuDevice& d : ad.inventory().gpus().devices()) {
    names.push_back(d.name());
    listed += (listed.empty() ? "" : ", ") + d.name();
  }
  for (const auto& unmatched : market::UnmatchedAsks(asks, names)) {
    spdlog::warn("policy.yaml asks: \"{}\" matches no GPU on this node (its GPUs: {}); it prices nothing",
                 unmatched.first, listed.empty() ? "none" : listed);
  }
}

// Reads the public-key files the policy at `policy_path` names under
// trustedImageKeys (relative ones from its directory) into `policy`.
Status LoadTrustedImageKeyFiles(const std::string& policy_path, OwnerPolicy* policy) {
  std::vector<image::ImagePublicKey> keys;
  const std::filesystem::path base = std::filesystem::path(policy_path).parent_path();
  for (const std::string& file : policy->trusted_image_key_files) {
    const std::string path = file[0] == '/' ? file : (base / file).string();
    auto key = image::LoadPublicKeyFile(path);
    if (!key.ok()) return key.status().WithContext(policy_path + ": trustedImageKeys");
    keys.push_back(std::move(*key));
  }
  AddTrustedImageKeys(policy, keys);
  return Status::Ok();
}

// Pulls run as the agent's user; its certificate copies and layer staging
// stay in its data directory.
registry::SkopeoOptions RegistryOptions(const AgentConfig& config) {
  registry::SkopeoOptions options;
  options.skopeo = config.skopeo;
  options.ca_files = config.registry_ca_files;
  options.work_dir = config.data_dir + "/registry";
  return options;
}

}  // namespace

Agent::Agent(AgentConfig config)
    : config_(std::move(config)),
      runtime_(MakeRuntime(config_)),
      registry_(registry::NewSkopeoClient(RegistryOptions(config_))),
      images_(std::make_unique<ImageCache>(config_.data_dir + "/images", runtime_.get(),
                                           static_cast<ArtifactTransfer*>(this), registry_.get(), config_.clock)),
      inputs_(std::make_unique<InputCache>(config_.data_dir + "/inputs", config_.input_cache_bytes,
                                           static_cast<ArtifactTransfer*>(this))) {}

Agent::~Agent() { Shutdown(); }

v1::NodeInfo Agent::Describe() const {
  v1::NodeInfo info;
  info.set_hostname(Hostname());
  long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  info.set_cpu_cores(config_.cpus > 0 ? static_cast<uint32_t>(config_.cpus) : static_cast<uint32_t>(cores));
  struct sysinfo si;
  uint64_t mem = ::sysinfo(&si) == 0 ? uint64_t{si.totalram} * si.mem_unit : 0;
  info.set_memory_bytes(config_.memory_bytes > 0 ? config_.memory_bytes : mem);
  for (const auto& r : runtime_->Runtimes()) info.add_runtimes(r);
  *info.mutable_enforcement() = runtime_->Enforcement();
  info.set_agent_version(AgentVersionString());
  info.set_region(config_.region);
  info.set_gpus(0);  // devices are described in the advertisement, not here
  return info;
}

std::vector<std::string> Agent::CachedImages() const {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(config_.data_dir + "/images", ec)) {
    std::string name = e.path().filename().string();
    if (name.size() == 64 && name.find('.') == std::string::npos) out.push_back("sha256:" + name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool Agent::ReloadPolicy() {
  std::string path = config_.policy_file.empty() ? config_.data_dir + "/policy.yaml" : config_.policy_file;
  struct stat st;
  int64_t mtime = ::stat(path.c_str(), &st) == 0 ? int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec : 0;
  {
    MutexLock lock(&mu_);
    if (mtime == policy_mtime_ns_) return false;
    policy_mtime_ns_ = mtime;
  }
  OwnerPolicy next = DefaultOwnerPolicy();
  if (mtime != 0) {
    auto text = ReadFile(path);
    auto parsed = text.ok() ? ParseOwnerPolicy(*text, path) : Result<OwnerPolicy>(text.status());
    if (!parsed.ok()) {
      // A typo in the owner's file must not take the node down: keep the last good policy.
      spdlog::error("policy not applied: {}", parsed.status().message());
      return false;
    }
    next = *parsed;
    if (Status keys = LoadTrustedImageKeyFiles(path, &next); !keys.ok()) {
      // Like a typo: the last good policy (and its trusted keys) stays.
      spdlog::error("policy not applied: {}", keys.message());
      return false;
    }
  }
  if (draining_) next.policy.set_accept_jobs(false);  // a draining agent stays closed to new work
  images_->SetBudget(next.image_cache_bytes > 0 ? next.image_cache_bytes : kDefaultImageCacheBytes);
  inputs_->SetBudget(next.input_cache_set ? next.input_cache_bytes : config_.input_cache_bytes);
  MutexLock lock(&mu_);
  const bool changed = AdvertisedPolicyDiffers(next, owner_);
  owner_ = next;
  if (changed) spdlog::info("owner policy {} applied", path);
  return changed;
}

void Agent::RequestReadvertise() {
  MutexLock lock(&mu_);
  readvertise_ = true;
  cv_.NotifyAll();
}

Result<v1::Advertisement> Agent::CurrentAdvertisement() {
  ReloadPolicy();
  AdvertiserInputs in;
  in.capacity = Describe();
  // Report the filesystem the data dir is (or will be) on.
  std::filesystem::path disk = std::filesystem::absolute(config_.data_dir);
  while (!disk.empty() && disk != disk.root_path() && !std::filesystem::exists(disk)) disk = disk.parent_path();
  in.inventory = discovery::DiscoverHost({disk.string()}, config_.nvml_library);
  if (!config_.simulate_gpus.empty()) {
    IG_ASSIGN_OR_RETURN(
        v1::GpuDiscovery simulated,
        discovery::SimulatedGpus(config_.simulate_gpus, static_cast<uint32_t>(in.inventory.gpus().devices_size())));
    for (auto& d : *simulated.mutable_devices()) *in.inventory.mutable_gpus()->add_devices() = std::move(d);
    in.inventory.mutable_gpus()->set_available(true);
  }
  in.cached_images = CachedImages();
  in.cached_inputs = inputs_->CachedDigests();
  in.region = config_.region;
  in.agent_version = AgentVersionString();
  MutexLock lock(&mu_);
  in.owner = owner_;
  in.owner_command = owner_command_;
  // While its owner needs it the node says it takes no work (pause_loop.cc).
  if (!owner_pause_reason_.empty()) in.owner.policy.set_accept_jobs(false);
  for (const auto& [id, h] : holds_) {
    in.running_attempts.push_back(id);
    in.holds.push_back(h.held);
  }
  return BuildAdvertisement(in);
}

NodeFacts Agent::Facts() {
  NodeFacts facts;
  facts.node_id = node_id_;
  facts.key_fingerprint = key_fingerprint_;
  if (auto kernel = discovery::ReadKernelRelease(); kernel.ok()) facts.kernel_release = *kernel;
  facts.agent_version = AgentVersionString();
  MutexLock lock(&mu_);
  facts.gpus = last_devices_;
  return facts;
}

Agent::ContextPtr Agent::Context(int deadline_ms) {
  ContextPtr ctx(new grpc::ClientContext, ContextRelease{this});
  ctx->AddMetadata("authorization", "Bearer " + token_);
  auto deadline = std::chrono::system_clock::time_point::max();
  if (deadline_ms > 0) deadline = std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms);
  // While shutting down, nothing may outlive the grace period.
  int64_t cap_ms = shutdown_deadline_ms_.load();
  if (cap_ms > 0) {
    deadline = std::min(deadline, std::chrono::system_clock::time_point(std::chrono::milliseconds(cap_ms)));
  }
  if (deadline != std::chrono::system_clock::time_point::max()) ctx->set_deadline(deadline);
  MutexLock lock(&rpc_mu_);
  in_flight_.insert(ctx.get());
  return ctx;
}

void Agent::ContextRelease::operator()(grpc::ClientContext* ctx) const {
  {
    MutexLock lock(&agent->rpc_mu_);
    agent->in_flight_.erase(ctx);
  }
  delete ctx;
}

Status Agent::Enroll() {
  const std::string dir = config_.data_dir;
  IG_RETURN_IF_ERROR(MakeDirs(dir, 0700));
  const std::string ca_path = dir + "/coordinator-ca.crt";
  const std::string cred_path = dir + "/credentials";
  if (!PathExists(ca_path)) {
    if (config_.ca_hash.empty()) {
      return Status::InvalidArgument("first start needs --ca-hash (printed by the coordinator) to pin its CA");
    }
    // kubeadm-style discovery: trust nothing but the pinned fingerprint,
    // from the first of the coordinators that answers.
    Result<std::string> ca = Status::InvalidArgument("no coordinator address given (--coordinator HOST:PORT)");
    for (const std::string& address : SplitCoordinators(config_.coordinator)) {
      ca = pki::FetchPinnedCa(address, config_.ca_hash);
      if (ca.ok() || ca.status().code() != Code::kUnavailable) break;
    }
    if (!ca.ok()) return ca.status();
    IG_RETURN_IF_ERROR(WriteFileAtomic(ca_path, *ca, 0600));
  }
  IG_ASSIGN_OR_RETURN(std::string ca_pem, ReadFile(ca_path));
  grpc::SslCredentialsOptions tls;
  tls.pem_root_certs = ca_pem;
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride(kTargetName);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // Bounded reconnect backoff: a restarted coordinator must hear from every
  // agent within about a second of serving again, well inside its timeout.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 500);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Several coordinators: one target listing them all (common/coordinator_target.h).
  IG_ASSIGN_OR_RETURN(const std::string target, ChannelTarget(config_.coordinator, ResolveWithSystem));
  channel_ = grpc::CreateCustomChannel(target, grpc::SslCredentials(tls), args);
  stub_ = v1::AgentService::NewStub(channel_);
  // A connection of its own for heartbeats (a local subchannel pool keeps
  // gRPC from sharing the one above).
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetString("idlegrid.connection", "heartbeat");
  // With several coordinators, heartbeats share the command stream's channel
  // instead: two pick_first channels could settle on different coordinators
  // (one reconnects to a restarted coordinator, the other stays), and the
  // one holding the session would hear no heartbeats and declare the node lost.
  heartbeat_channel_ = SplitCoordinators(config_.coordinator).size() > 1
                           ? channel_
                           : grpc::CreateCustomChannel(target, grpc::SslCredentials(tls), args);
  heartbeat_stub_ = v1::AgentService::NewStub(heartbeat_channel_);

  // The node's identity is its Ed25519 key; the node id derives from it.
  IG_ASSIGN_OR_RETURN(advert::NodeKey key, advert::NodeKey::LoadOrCreate(dir));
  advertiser_ = std::make_unique<Advertiser>(key, 180'000, dir + "/advertisement.sequence");
  key_fingerprint_ = advert::KeyFingerprint(key.public_key());
  IG_ASSIGN_OR_RETURN(v1::Advertisement ad, CurrentAdvertisement());
  WarnAsksPricingNothing(ad);
  {
    // Known from the start, not only after the maintenance loop's first pass.
    MutexLock lock(&mu_);
    last_devices_.assign(ad.inventory().gpus().devices().begin(), ad.inventory().gpus().devices().end());
  }
  if (PathExists(cred_path)) {
    IG_ASSIGN_OR_RETURN(std::string creds, ReadFile(cred_path));
    auto nl = creds.find('\n');
    node_id_ = creds.substr(0, nl);
    token_ = nl == std::string::npos ? "" : creds.substr(nl + 1);
    while (!token_.empty() && token_.back() == '\n') token_.pop_back();
    if (node_id_ == key.node_id() && !token_.empty()) return Status::Ok();
  }
  if (config_.join_token.empty()) return Status::InvalidArgument("first start needs --join-token");
  v1::RegisterRequest req;
  req.set_join_secret(config_.join_token);
  req.set_name(config_.name.empty() ? Hostname() : config_.name);
  *req.mutable_info() = Describe();
  *req.mutable_advertisement() = *advertiser_->Next(ad, config_.clock->NowMs(), true);
  v1::RegisterResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  ctx.set_wait_for_ready(true);
  IG_RETURN_IF_ERROR(FromGrpc(stub_->Register(&ctx, req, &resp)).WithContext("registration"));
  node_id_ = resp.node_id();
  token_ = resp.agent_token();
  return WriteFileAtomic(cred_path, node_id_ + "\n" + token_ + "\n", 0600);
}

Result<std::string> Agent::EnrollOnly() {
  IG_RETURN_IF_ERROR(Enroll());
  return node_id_;
}

int Agent::Run() {
  if (!config_.metrics_listen.empty()) {
    if (Status st = CheckLoopbackListen(config_.metrics_listen); !st.ok()) {
      std::fprintf(stderr, "idlegrid agent: %s\n", st.message().c_str());
      return 2;
    }
  }
  Status st = Enroll();
  if (!st.ok()) {
    std::fprintf(stderr, "idlegrid agent: %s\n", st.message().c_str());
    return st.code() == Code::kInvalidArgument ? 2 : 1;
  }
  spdlog::info("agent {} enrolled with {}", node_id_, config_.coordinator);
  RemoveOrphans();
  logs_ = std::make_unique<LogShipper>([this](const v1::AppendLogsRequest& req) {
    v1::AppendLogsResponse resp;
    auto ctx = Context(10000);
    ctx->set_wait_for_ready(true);
    grpc::Status s = stub_->AppendLogs(ctx.get(), req, &resp);
    // Only a transport failure is worth a retry; a refusal will not change,
    // and a shutting-down agent does not wait for a coordinator that is gone.
    return s.ok() || stopping_ ||
           (s.error_code() != grpc::StatusCode::UNAVAILABLE && s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED);
  });
  {
    MutexLock lock(&hb_mu_);
    hb_.info = Describe();
  }
  if (!config_.metrics_listen.empty()) {
    auto port = metrics_server_.Start(config_.metrics_listen, [this] { return metrics_.Render(Gauges()); });
    if (!port.ok()) {
      std::fprintf(stderr, "idlegrid agent: %s\n", port.status().message().c_str());
      return 2;
    }
    // Machine-readable, as the readiness line.
    const std::string host = config_.metrics_listen.substr(0, config_.metrics_listen.rfind(':'));
    std::printf("metrics listen=%s:%d\n", host.c_str(), *port);
    std::fflush(stdout);
  }
  std::thread heartbeats([this] { HeartbeatSendLoop(); });
  std::thread maintenance([this] { MaintenanceLoop(); });
  std::thread pauses([this] { PauseLoop(); });
  ConnectLoop();
  heartbeats.join();
  maintenance.join();
  pauses.join();
  std::vector<std::thread> runners;
  {
    MutexLock lock(&mu_);
    for (auto& [id, t] : attempts_) runners.push_back(std::move(t));
    attempts_.clear();
  }
  for (auto& t : runners) t.join();
  logs_.reset();
  metrics_server_.Stop();
  return 0;
}

AgentGauges Agent::Gauges() {
  AgentGauges g;
  g.draining = draining_.load();
  MutexLock lock(&mu_);
  g.running_attempts = attempts_.size() - std::min(attempts_.size(), finished_.size());
  g.paused = !owner_pause_reason_.empty();
  return g;
}

void Agent::Shutdown() {
  // A gRPC deadline (agent.cc's deadlines are system_clock time points): the system's clock.
  if (shutdown_deadline_ms_.load() == 0) shutdown_deadline_ms_ = SystemWallMs() + kStopReportMs;
  stopping_ = true;
  std::vector<std::string> running;
  {
    MutexLock lock(&mu_);
    if (connect_ctx_) connect_ctx_->TryCancel();
    for (const auto& [id, t] : attempts_) {
      cancelled_.insert(id);
      running.push_back(id);
    }
    cv_.NotifyAll();
  }
  {
    MutexLock lock(&hb_mu_);
    hb_cv_.NotifyAll();
  }
  // Transfers and reports in flight serve attempts that are being killed:
  // cancel them rather than wait for a coordinator that may be gone. What
  // comes after (the STOPPED reports) is bounded by the shutdown deadline.
  {
    MutexLock lock(&rpc_mu_);
    for (auto* ctx : in_flight_) ctx->TryCancel();
  }
  for (const auto& id : running) {
    Status st = runtime_->Kill(ContainerName(id));
    if (!st.ok()) spdlog::warn("kill {}: {}", id, st.message());
  }
}

void Agent::GracefulShutdown(std::chrono::seconds grace) {
  const int64_t start_ms = SystemWallMs();  // with shutdown_deadline_ms_: gRPC deadlines
  // Everything, reports to an unreachable coordinator included, ends within
  // the grace period: running work gets what is left after a reserve for
  // killing containers and reporting them handed back.
  const int64_t grace_ms = std::max<int64_t>(grace.count() * 1000, 1000);
  const int64_t reserve_ms = std::min<int64_t>(grace_ms / 2, kStopReportMs);
  shutdown_deadline_ms_ = start_ms + grace_ms;
  draining_ = true;
  {
    MutexLock lock(&mu_);
    owner_.policy.set_accept_jobs(false);  // advertised at once: no new work comes
    readvertise_ = true;
    cv_.NotifyAll();
  }
  spdlog::info("draining: waiting up to {} s for {} running attempt(s)", grace.count(), [&] {
    MutexLock lock(&mu_);
    return attempts_.size() - finished_.size();
  }());
  {
    MutexLock lock(&mu_);
    cv_.WaitFor(&mu_, std::chrono::milliseconds(grace_ms - reserve_ms),
                [&]() IG_REQUIRES(mu_) { return stopping_.load() || attempts_.size() == finished_.size(); });
  }
  Shutdown();
}

void Agent::ConnectLoop() {
  int backoff_ms = 200;
  bool announced = false;
  while (!stopping_) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer " + token_);
    ctx.set_wait_for_ready(true);
    {
      MutexLock lock(&mu_);
      if (stopping_) break;
      connect_ctx_ = &ctx;
    }
    v1::ConnectRequest req;
    *req.mutable_info() = Describe();
    auto reader = stub_->Connect(&ctx, req);
    reader->WaitForInitialMetadata();
    if (!announced) {
      // Machine-readable readiness line: tests and scripts wait for it.
      std::printf("ready node=%s\n", node_id_.c_str());
      std::fflush(stdout);
      announced = true;
    }
    // Only an accepted stream carries the marker (a refused one ends with its status).
    metrics_.SetConnected(ctx.GetServerInitialMetadata().count("idlegrid-session") > 0);
    v1::Command cmd;
    while (reader->Read(&cmd)) {
      backoff_ms = 200;
      if (cmd.has_assign()) HandleAssignment(cmd.assign());
      if (cmd.has_cancel()) HandleCancel(cmd.cancel());
    }
    grpc::Status s = reader->Finish();
    metrics_.SetConnected(false);
    {
      MutexLock lock(&mu_);
      connect_ctx_ = nullptr;
    }
    if (stopping_) break;
    spdlog::warn("command stream ended ({}); reconnecting in {} ms", s.error_message(), backoff_ms);
    MutexLock lock(&mu_);
    cv_.WaitFor(&mu_, std::chrono::milliseconds(backoff_ms), [&] { return stopping_.load(); });
    backoff_ms = std::min(backoff_ms * 2, 1000);
  }
}

void Agent::HandleAssignment(const v1::Assignment& a) {
  MutexLock lock(&mu_);
  if (attempts_.count(a.attempt_id()) || stopping_) return;  // a re-sent assignment we already run
  {
    MutexLock hb(&hb_mu_);
    hb_.running.insert(a.attempt_id());
  }
  epochs_[a.attempt_id()] = a.lease_epoch();
  attempts_[a.attempt_id()] = std::thread([this, a] {
    RunAttempt(a);
    {
      // Its container is gone and its end reported: heartbeats stop listing
      // it now, not when the thread is joined (else the coordinator, which
      // has ended it, keeps asking for a stop that has nothing to kill).
      MutexLock hb(&hb_mu_);
      hb_.running.erase(a.attempt_id());
    }
    MutexLock done(&mu_);
    finished_.insert(a.attempt_id());
    cv_.NotifyAll();
  });
}

void Agent::HandleCancel(const v1::CancelAttempt& c) {
  // Marked at once (a runner checks before it starts the container); the
  // podman kill itself runs on the maintenance loop, never on the thread
  // that reads commands or sends heartbeats. Only a runner still at work has
  // a container to kill: a stop for an attempt that already ended here (its
  // report crossed the request) or that this process never ran (the orphan
  // sweep's business) costs nothing.
  MutexLock lock(&mu_);
  cancelled_.insert(c.attempt_id());
  // The hold lasts from admission until the container is gone.
  if (!attempts_.count(c.attempt_id()) || finished_.count(c.attempt_id()) || !holds_.count(c.attempt_id())) return;
  spdlog::info("cancel attempt {}: {}", c.attempt_id(), c.reason());
  stop_requests_.push_back(c.attempt_id());
  cv_.NotifyAll();
}

bool Agent::IsCancelled(const std::string& attempt_id) {
  MutexLock lock(&mu_);
  return cancelled_.count(attempt_id) > 0;
}

namespace {

// "STARTED" -> "started": a Prometheus label value.
std::string AttemptEventLabel(v1::AttemptEvent event) {
  std::string name = v1::AttemptEvent_Name(event);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

}  // namespace

Status Agent::Report(const v1::ReportAttemptRequest& report) {
  // Everything reported about an attempt carries its lease epoch (fencing).
  v1::ReportAttemptRequest req = report;
  {
    MutexLock lock(&mu_);
    auto it = epochs_.find(req.attempt_id());
    if (it != epochs_.end() && req.lease_epoch() == 0) req.set_lease_epoch(it->second);
    // A hand back says why (the owner's pause), not just that it stopped.
    auto why = stop_messages_.find(req.attempt_id());
    if (why != stop_messages_.end() && req.event() == v1::STOPPED && req.message().empty())
      req.set_message(why->second);
  }
  // Reports must not be lost to a passing network blip; refusals are final.
  int backoff_ms = 200;
  for (int i = 0; i < 12; ++i) {
    v1::ReportAttemptResponse resp;
    auto ctx = Context(10000);
    ctx->set_wait_for_ready(true);
    Status st = FromGrpc(stub_->ReportAttempt(ctx.get(), req, &resp));
    if (st.ok()) metrics_.CountReport(AttemptEventLabel(req.event()));
    if (st.code() != Code::kUnavailable) return st;
    if (stopping_) return st;  // shutting down: the coordinator fails it once heartbeats stop
    MutexLock lock(&mu_);
    cv_.WaitFor(&mu_, std::chrono::milliseconds(backoff_ms), [&] { return stopping_.load(); });
    backoff_ms = std::min(backoff_ms * 2, 2000);
  }
  return Status::Unavailable("coordinator unreachable; report of attempt " + req.attempt_id() + " not delivered");
}

}  // namespace idlegrid::agent
