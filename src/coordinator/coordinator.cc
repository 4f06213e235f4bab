#include "coordinator/coordinator.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <set>

#include "advert/advertisement.h"
#include "advert/node_key.h"
#include "coordinator/node_views.h"
#include "common/digest.h"
#include "common/random.h"
#include "sched/data_class.h"
#include "image/oci_archive.h"
#include "jobs/lease.h"
#include "jobs/task_state.h"
#include "manifest/manifest.h"
#include "manifest/items.h"

namespace idlegrid::coordinator {

namespace {

ImageCatalog::Options CatalogOptions(const Options& o) {
  return {o.require_signed_images, o.trusted_image_keys, o.readiness_image_key, o.registries};
}

// The reliability score's parts (the physical-work handshake), for listings.
v1::ReliabilityComponents ComponentsOf(const sched::ReliabilityInputs& in, const jobs::NodeLiveness& liveness) {
  v1::ReliabilityComponents c;
  c.set_heartbeat_jitter_ms(liveness.jitter_ms());
  c.set_heartbeat_lateness(liveness.lateness());
  c.set_rtt_ms(liveness.rtt_ms());
  c.set_heartbeat_loss(liveness.loss());
  c.set_throttle_reports(in.throttle_reports);
  c.set_owner_pauses(in.owner_pauses);
  c.set_owner_paused_ms(in.owner_paused_ms);
  c.set_succeeded(in.succeeded);
  c.set_node_lost(in.node_lost);
  c.set_node_failed(in.node_failed);
  c.set_provider_verification(in.provider_verification);
  c.set_provider_caught(in.provider_caught);
  c.set_stalls(in.stalls);
  return c;
}

std::string BearerToken(const std::string& header) {
  const std::string prefix = "Bearer ";
  return header.rfind(prefix, 0) == 0 ? header.substr(prefix.size()) : "";
}

}  // namespace

// --- Coordinator ------------------------------------------------------------

Coordinator::Coordinator(std::unique_ptr<store::Store> store, std::unique_ptr<artifacts::ArtifactStore> artifacts,
                         std::unique_ptr<sched::Scheduler> scheduler, std::string join_secret, Options options,
                         Clock* clock, std::unique_ptr<registry::RegistryClient> registry)
    : store_(std::move(store)),
      artifacts_(std::move(artifacts)),
      scheduler_(std::move(scheduler)),
      join_secret_hash_(Sha256Digest(join_secret)),
      options_(options),
      clock_(clock),
      registry_(std::move(registry)),
      tenancy_(store_.get(), clock, options.default_quota),
      rate_limits_(options.rate_limits),
      images_(store_.get(), artifacts_.get(), registry_.get(), clock, CatalogOptions(options),
              [this] { changes_.Notify(); }),
      artifact_rights_(store_.get(), &images_, clock, join_secret),
      ledger_(options.ledger.enabled ? std::make_unique<LedgerShell>(store_.get(), options.ledger.policy) : nullptr),
      ledger_requests_(store_.get(), ledger_.get(), clock),
      settler_(store_.get(), ledger_.get(), clock),
      receipts_(store_.get(), options.receipt_key),
      data_policy_(std::make_shared<const sched::DataPolicy>(options.data_policy)),
      account_terms_(store_.get(), clock_, options_.default_quota.max_running_tasks, options_.account_weights),
      standing_(store_.get(), options_.verification),
      retention_(store_.get(), artifacts_.get(), clock) {
  VerificationService::Hooks hooks;
  hooks.provider_of = [this](const std::string& node_id) { return ProviderOf(node_id); };
  hooks.verdict_written = [this](const std::string& job_id) { settler_.SettleJob(job_id); };
  hooks.changed = [this] { changes_.Notify(); };
  const int64_t backtrack_window_ms =
      ledger_ ? options_.ledger.policy.dispute_window_ms : VerificationService::kDefaultBacktrackWindowMs;
  verification_ = std::make_unique<VerificationService>(store_.get(), artifacts_.get(), ledger_.get(), clock_,
                                                        options_.verification, backtrack_window_ms, std::move(hooks));
  JobRequests::Hooks job_hooks;
  job_hooks.data_policy = [this] { return CurrentDataPolicy(); };
  job_hooks.fill_waiting = [this](v1::Job* job) { FillWaiting(job); };
  job_hooks.stop_attempts = [this](const std::vector<store::ActiveAttempt>& stopped) { StopCancelled(stopped); };
  job_hooks.settle_ledger = [this](const std::string& job_id) { settler_.SettleJob(job_id); };
  job_hooks.changed = [this] { changes_.Notify(); };
  job_hooks.version = [this] { return changes_.version(); };
  job_hooks.wait_for_change = [this](uint64_t known, int wait_ms) { return changes_.WaitForChange(known, wait_ms); };
  jobs_ = std::make_unique<JobRequests>(
      store_.get(), artifacts_.get(), &images_, &tenancy_, verification_.get(), ledger_.get(), &retention_, clock_,
      JobRequests::Settings{options_.default_retention_seconds, options_.policies}, std::move(job_hooks));
  AttemptReports::Hooks report_hooks;
  report_hooks.public_key_of = [this](const std::string& node_id) {
    MutexLock lock(&mu_);
    auto it = nodes_.find(node_id);
    return it == nodes_.end() ? std::string() : it->second.public_key;
  };
  report_hooks.judge_readiness = [this](const v1::Job& job) { readiness_->Judge(job); };
  report_hooks.settle_ledger = [this](const v1::Job& job) { settler_.SettleJob(job); };
  report_hooks.changed = [this] { changes_.Notify(); };
  attempts_ = std::make_unique<AttemptReports>(store_.get(), &receipts_, &counters_, verification_.get(), clock_,
                                               options_.log_cap, std::move(report_hooks));
  workflows_ = std::make_unique<WorkflowService>(store_.get(), clock_, jobs_.get(), options_.default_retention_seconds);
  FleetReports::Sources sources;
  sources.jobs = [this] { return jobs_->List(""); };
  sources.nodes = [this] { return ListNodes(); };
  sources.market = [this] { return Market(); };
  sources.heartbeat_gaps = [this] {
    std::map<std::string, int64_t> gaps;
    MutexLock lock(&mu_);
    for (const auto& [id, live] : nodes_) gaps[id] = live.liveness.max_gap_ms();
    return gaps;
  };
  sources.recent_prices = [this](int64_t now_ms) {
    MutexLock lock(&mu_);
    return recent_prices_.All(now_ms);
  };
  reports_ = std::make_unique<FleetReports>(store_.get(), &counters_, ledger_ ? &ledger_requests_ : nullptr, clock_,
                                            std::move(sources));
  readiness_ = std::make_unique<ReadinessBenchmarks>(
      store_.get(), artifacts_.get(), &images_, clock_,
      ReadinessBenchmarks::Options{options_.bench_iterations, options_.min_cpu_score, options_.gpu_bench_rounds,
                                   options_.bench_retry_ms},
      ReadinessHooks());
}

void Coordinator::StopCancelled(const std::vector<store::ActiveAttempt>& stopped) {
  for (const auto& a : stopped) {
    v1::Command cmd;
    cmd.mutable_cancel()->set_attempt_id(a.attempt_id);
    cmd.mutable_cancel()->set_reason("cancelled by user");
    sessions_.Push(a.node_id, std::move(cmd));  // not connected: it learns at its next heartbeat
  }
}

void Coordinator::FillWaiting(v1::Job* job) {
  MutexLock lock(&mu_);
  for (auto& task : *job->mutable_tasks()) {
    if (task.state() != v1::QUEUED) continue;
    auto it = waiting_.find(sched::TaskKey(job->id(), task.index()));
    if (it != waiting_.end()) task.set_message(it->second);
  }
}

std::string Coordinator::ProviderOf(const std::string& node_id) {
  {
    MutexLock lock(&mu_);
    auto it = nodes_.find(node_id);
    if (it != nodes_.end() && !it->second.provider.empty()) return it->second.provider;
  }
  auto rec = store_->GetNode(node_id);
  return rec.ok() && *rec ? (*rec)->provider : std::string(store::kOperatorAccount);
}

Coordinator::~Coordinator() { Stop(); }

void Coordinator::Start() {
  started_ms_ = clock_->NowMs();
  // A restarted coordinator gives every known node a fresh grace period
  // instead of declaring the fleet dead: nodes count from now.
  auto nodes = store_->ListNodes();
  if (nodes.ok()) {
    MutexLock lock(&mu_);
    for (const auto& n : *nodes) {
      NodeLive& live = nodes_[n.id];
      live.info = n.info;
      live.liveness.Restart(clock_->NowMs());
      live.public_key = n.public_key;
      live.provider = n.provider;
      live.last_sequence = n.last_sequence;
      live.ad = n.advertisement;
      live.measurement = n.measurement;
      live.draining = n.draining;
      live.drain_deadline_ms = n.drain_deadline_ms;
    }
  }
  loop_ = std::thread([this] { Loop(); });
}

void Coordinator::Stop() {
  if (!changes_.Stop()) return;
  sessions_.CloseAll();
  if (loop_.joinable()) loop_.join();
}

// --- authentication -----------------------------------------------------------

Result<std::string> Coordinator::AuthenticateAgent(const std::string& bearer) {
  std::string token = BearerToken(bearer);
  if (token.empty()) return Status::Unauthenticated("missing agent token");
  std::string hash = Sha256Digest(token);
  if (std::optional<std::string> node_id = agent_tokens_.NodeOf(hash)) {
    // Every authenticated message renews the node's liveness: an agent
    // visibly reporting is not dead, whatever its heartbeats are doing.
    MutexLock lock(&mu_);
    auto live = nodes_.find(*node_id);
    if (live != nodes_.end()) live->second.liveness.HeardFrom(clock_->NowMs());
    return *node_id;
  }
  IG_ASSIGN_OR_RETURN(auto node, store_->NodeByTokenHash(hash));
  if (!node) return Status::Unauthenticated("unknown agent token; re-register the agent with a join token");
  agent_tokens_.Remember(hash, node->id);
  return node->id;
}

// --- requester operations ---------------------------------------------------

Result<v1::ListNodesResponse> Coordinator::ListNodes() {
  IG_ASSIGN_OR_RETURN(auto records, store_->ListNodes());
  IG_ASSIGN_OR_RETURN(auto active, store_->ActiveAttempts());
  const auto by_node = GroupByNode(active);
  static const std::vector<store::ActiveAttempt> kNone;
  v1::ListNodesResponse out;
  MutexLock lock(&mu_);
  for (const auto& r : records) {
    auto held = by_node.find(r.id);
    const auto& mine = held == by_node.end() ? kNone : held->second;
    v1::Node* n = out.add_nodes();
    n->set_id(r.id);
    n->set_name(r.name);
    n->set_provider(r.provider);
    auto it = nodes_.find(r.id);
    bool online = it != nodes_.end() && it->second.online;
    *n->mutable_info() = it != nodes_.end() && it->second.info.cpu_cores() ? it->second.info : r.info;
    // late: a heartbeat is overdue; suspect: past its timeout, no new work,
    // not yet confirmed offline (jobs/liveness.h).
    const char* state = "offline";
    if (online) {
      auto verdict = it->second.liveness.Peek(LivenessParamsOf(), clock_->NowMs());
      state = verdict.state == jobs::Liveness::kOffline ? "suspect" : jobs::LivenessName(verdict.state);
    }
    n->set_state(state);
    n->set_last_heartbeat_ms(it != nodes_.end() ? it->second.liveness.last_heartbeat_ms() : r.last_heartbeat_ms);
    if (it != nodes_.end()) {
      const NodeLive& live = it->second;
      n->set_peer(live.peer);
      *n->mutable_advertisement() = live.ad;
      *n->mutable_measurement() = live.measurement;
      std::string why = online ? UnschedulableReasonLocked(live) : "offline";
      n->set_schedulable(why.empty());
      n->set_unschedulable_reason(why);
      for (auto& d : AccountedGpusLocked(live, HeldCapacity(live, mine))) *n->add_gpus() = std::move(d);
      if (online && live.pause.pauses() > 0) *n->mutable_pause() = live.pause;
      n->set_reliability(live.reliability.score);
      n->set_reliability_detail(live.reliability.detail);
      *n->mutable_reliability_components() = ComponentsOf(live.reliability_inputs, live.liveness);
      n->set_trust_tier(static_cast<uint32_t>(sched::TrustTierOf(*data_policy_, r.id, live.measurement, live.ad)));
    }
    for (const auto& a : mine) {
      n->set_cpu_allocated(n->cpu_allocated() + a.cpu);
      n->set_memory_allocated(n->memory_allocated() + a.memory);
      n->set_running_attempts(n->running_attempts() + 1);
    }
  }
  return out;
}

void Coordinator::SetDataPolicy(sched::DataPolicy policy) {
  auto replacement = std::make_shared<const sched::DataPolicy>(std::move(policy));
  {
    MutexLock lock(&mu_);
    data_policy_ = std::move(replacement);
  }
  changes_.Notify();  // tasks waiting on a node's tier may fit now
}

std::shared_ptr<const sched::DataPolicy> Coordinator::CurrentDataPolicy() {
  MutexLock lock(&mu_);
  return data_policy_;
}

// --- agent operations ---------------------------------------------------------

Result<v1::RegisterResponse> Coordinator::RegisterNode(const v1::RegisterRequest& request, const std::string& peer) {
  // The coordinator's own join secret enrolls nodes for the operator;
  // `idlegrid join-token create` mints one per provider account.
  std::string provider = store::kOperatorAccount;
  if (!auth::SameHash(Sha256Digest(request.join_secret()), join_secret_hash_)) {
    auto owner = tenancy_.ProviderOfJoinToken(request.join_secret());
    if (!owner.ok()) {
      spdlog::warn("registration from {} refused: {}", peer, owner.status().message());
      return owner.status();
    }
    provider = *owner;
  }
  if (request.name().empty() || request.name().size() > 128) {
    return Status::InvalidArgument("node name must be 1-128 characters");
  }
  // The node proves its key with a signed advertisement; its id derives from that key.
  advert::AdvertError error = advert::AdvertError::kNone;
  auto verified = advert::VerifyAdvertisement(request.advertisement(), "", 0, &error);
  Status st = verified.ok() ? CheckSimulated(verified->ad) : verified.status();
  if (!st.ok()) {
    spdlog::warn("registration from {} refused: {}", peer, st.message());
    return st;
  }
  const v1::Advertisement& ad = verified->ad;
  IG_ASSIGN_OR_RETURN(auto existing, store_->GetNode(ad.node_id()));
  if (existing && ad.sequence() <= existing->last_sequence) {
    spdlog::warn("registration of {} from {} refused: stale advertisement sequence", ad.node_id(), peer);
    return Status::FailedPrecondition("stale sequence: advertisement " + std::to_string(ad.sequence()) +
                                      " is not newer than " + std::to_string(existing->last_sequence));
  }
  v1::RegisterResponse out;
  out.set_node_id(ad.node_id());
  out.set_agent_token("iga_" + RandomHex(24));
  store::NodeRecord rec;
  rec.id = out.node_id();
  rec.name = request.name();
  rec.info = request.info();
  rec.registered_ms = rec.last_heartbeat_ms = clock_->NowMs();
  rec.public_key = request.advertisement().public_key();
  rec.last_sequence = ad.sequence();
  rec.advertisement = ad;
  rec.provider = provider;
  IG_RETURN_IF_ERROR(store_->UpsertNode(rec, Sha256Digest(out.agent_token())));
  {
    MutexLock lock(&mu_);
    NodeLive& live = nodes_[out.node_id()];
    live.public_key = rec.public_key;
    live.provider = rec.provider;
    live.last_sequence = ad.sequence();
    live.ad = ad;
    if (existing) live.measurement = existing->measurement;
  }
  agent_tokens_.ForgetNode(out.node_id());  // a re-registered node's old token stops working
  spdlog::info("node {} ({}) registered from {} for provider {}", out.node_id(), request.name(), peer, provider);
  return out;
}

std::shared_ptr<AgentSession> Coordinator::OpenSession(const std::string& node_id, const v1::NodeInfo& info,
                                                       const std::string& peer) {
  std::shared_ptr<AgentSession> session;
  {
    // The session opens under mu_: the liveness check never sees it beside
    // the node's stale heard-from time.
    MutexLock lock(&mu_);
    session = sessions_.Open(node_id);  // a reconnect replaces (closes) the old stream
    NodeLive& live = nodes_[node_id];
    live.info = info;
    live.peer = peer;
    live.online = true;
    live.liveness.Restart(clock_->NowMs());
  }
  if (Status st = store_->RecordHeartbeat(node_id, info, clock_->NowMs()); !st.ok()) {
    // Not fatal: the in-memory time governs here, the next batch stores it.
    spdlog::warn("node {} connected, but its heartbeat was not stored: {}", node_id, st.ToString());
  }
  // Re-send assignments the agent may not have received before a disconnect;
  // agents ignore attempt ids they already know.
  auto assigned = store_->AssignedAttempts(node_id);
  if (assigned.ok()) {
    for (const auto& a : *assigned) {
      Status sent = SendAssignment({a.attempt_id, a.job_id, a.index, a.node_id, 0, a.device_uuids, a.lease_epoch, {}});
      // Unsent, the attempt ends by the acknowledgement timeout and is placed again.
      if (!sent.ok()) spdlog::warn("re-sending attempt {} to node {}: {}", a.attempt_id, node_id, sent.message());
    }
  }
  spdlog::info("node {} connected from {}", node_id, peer);
  changes_.Notify();
  return session;
}

void Coordinator::CloseSession(const std::string& node_id, const std::shared_ptr<AgentSession>& session) {
  MutexLock lock(&mu_);
  // The node stays online until its heartbeats stop; without a stream it
  // cannot receive work, so it is out of placement (NodeViewsLocked).
  if (sessions_.Close(node_id, session)) spdlog::info("node {} disconnected", node_id);
}

Result<v1::Node> Coordinator::DrainNode(const v1::DrainNodeRequest& request) {
  int64_t deadline = request.undo() || request.deadline_seconds() == 0
                         ? 0
                         : clock_->NowMs() + int64_t{request.deadline_seconds()} * 1000;
  IG_RETURN_IF_ERROR(store_->SetDrain(request.node_id(), !request.undo(), deadline));
  {
    MutexLock lock(&mu_);
    NodeLive& live = nodes_[request.node_id()];
    live.draining = !request.undo();
    live.drain_deadline_ms = deadline;
    live.drain_handed_back = false;
  }
  spdlog::info("node {} {}", request.node_id(),
               request.undo()
                   ? "takes work again"
                   : "draining" + (deadline ? " (deadline in " + std::to_string(request.deadline_seconds()) + " s)"
                                            : std::string()));
  changes_.Notify();
  IG_ASSIGN_OR_RETURN(auto nodes, ListNodes());
  for (const auto& n : nodes.nodes()) {
    if (n.id() == request.node_id()) return n;
  }
  return Status::NotFound("node " + request.node_id() + " does not exist");
}

void Coordinator::EnforceDrainDeadlines() {
  int64_t now = clock_->NowMs();
  std::vector<std::string> due;
  {
    MutexLock lock(&mu_);
    for (auto& [id, n] : nodes_) {
      if (n.draining && n.drain_deadline_ms > 0 && now >= n.drain_deadline_ms && !n.drain_handed_back) {
        n.drain_handed_back = true;
        due.push_back(id);
      }
    }
  }
  if (due.empty()) return;
  auto active = store_->ActiveAttempts();
  if (!active.ok()) return;
  for (const auto& id : due) {
    for (const auto& a : *active) {
      if (a.node_id != id) continue;
      // The agent stops it and reports STOPPED: the task goes back to the
      // queue (handed back) only once the container is gone.
      v1::Command cmd;
      cmd.mutable_cancel()->set_attempt_id(a.attempt_id);
      cmd.mutable_cancel()->set_reason("drain deadline reached; handing back");
      if (sessions_.Push(id, std::move(cmd))) {
        spdlog::info("node {} drain deadline: handing back attempt {}", id, a.attempt_id);
      }
    }
  }
}

// --- dispatch -----------------------------------------------------------------

Status Coordinator::SendAssignment(const store::NewAttempt& attempt, const v1::Job* loaded) {
  v1::Job fetched;
  if (loaded == nullptr) {
    IG_ASSIGN_OR_RETURN(fetched, store_->GetJob(attempt.job_id));
    loaded = &fetched;
  }
  const v1::Job& job = *loaded;
  // A registry image is pulled by the agent, by the digest in its spec; a
  // pushed one is downloaded from here.
  std::string archive_digest, config_digest = job.spec().registry_image().config_digest();
  std::vector<v1::ArtifactRef> image_blobs;  // a layered image's, fetched blob by blob
  if (!job.spec().has_registry_image()) {
    IG_ASSIGN_OR_RETURN(auto image, store_->GetImage(manifest::ImageDigestOf(job.spec().image())));
    if (!image) return Status::NotFound("image of job " + attempt.job_id + " vanished");
    IG_ASSIGN_OR_RETURN(image_blobs, images_.BlobsOf(*image));
    if (image_blobs.empty()) archive_digest = image->archive_digest;
    config_digest = image->config_digest;
  }
  v1::Command cmd;
  if (attempt.index < static_cast<uint32_t>(job.tasks_size()) &&
      job.tasks(static_cast<int>(attempt.index)).state() == v1::CANCELLED) {
    // Cancelled while the agent was away: tell it to stop instead.
    cmd.mutable_cancel()->set_attempt_id(attempt.attempt_id);
    cmd.mutable_cancel()->set_reason("cancelled by user");
    if (!sessions_.Push(attempt.node_id, std::move(cmd))) return Status::Unavailable("node not connected");
    return Status::Ok();
  }
  v1::Assignment* a = cmd.mutable_assign();
  a->set_attempt_id(attempt.attempt_id);
  a->set_job_id(attempt.job_id);
  a->set_task_index(attempt.index);
  // An item array's task gets its own item's values, and no one else's.
  *a->mutable_spec() = manifest::SpecForTask(job.spec(), attempt.index);
  a->set_image_archive_digest(archive_digest);
  a->set_image_config_digest(config_digest);
  for (v1::ArtifactRef& b : image_blobs) *a->add_image_blobs() = std::move(b);
  a->set_untrusted_tenant(!job.account().empty() && job.account() != store::kOperatorAccount);
  for (v1::ImageSignature& s : images_.SignaturesOf(manifest::ImageDigestOf(job.spec().image()))) {
    *a->add_image_signatures() = std::move(s);
  }
  for (const auto& d : attempt.device_uuids) a->add_device_uuids(d);
  if (attempt.index < static_cast<uint32_t>(job.tasks_size())) {
    const v1::Task& task = job.tasks(static_cast<int>(attempt.index));
    for (const auto& prior : task.attempts()) {
      if (prior.id() != attempt.attempt_id) continue;
      // The commit returned the epoch; a re-send (NewAttempt without one) takes the stored one.
      const uint64_t epoch = attempt.lease_epoch != 0 ? attempt.lease_epoch : prior.lease_epoch();
      a->set_lease_epoch(epoch);
      a->set_artifact_token(artifact_rights_.TokenFor(attempt.attempt_id, attempt.node_id, epoch));
      // Resume from the checkpoint this attempt was committed with.
      if (!prior.restored_from_attempt().empty() && task.checkpoint().attempt_id() == prior.restored_from_attempt()) {
        *a->mutable_restore() = task.checkpoint();
      }
    }
  }
  if (!sessions_.Push(attempt.node_id, std::move(cmd))) {
    return Status::Unavailable("node " + attempt.node_id + " is not connected");
  }
  return Status::Ok();
}

void Coordinator::Loop() {
  while (changes_.WaitForPass(options_.dispatch_period_ms)) Tick();
}

void Coordinator::Tick() {
  CheckHeartbeats();
  PersistHeartbeats();
  ExpireUnconnectedLeases();
  RefreshReliability();
  EnforceDrainDeadlines();
  readiness_->Ensure();
  retention_.Sweep();
  settler_.Sweep();
  verification_->Sweep();  // verdicts a crash or a failed write left undone
  DispatchOnce();
  workflows_->Sweep();  // steps whose jobs ended since the last pass
  reports_->SampleLoad();
}

}  // namespace idlegrid::coordinator
