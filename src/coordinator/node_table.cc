// NodeTable (node_table.h): registration, sessions, listing, drain, and the
// small views other services read. Advertisements and views are in
// advertisements.cc; heartbeats and timeouts in liveness.cc.
#include "coordinator/node_table.h"

#include <spdlog/spdlog.h>

#include "advert/advertisement.h"
#include "auth/credentials.h"
#include "common/digest.h"
#include "common/random.h"
#include "common/version.h"
#include "coordinator/node_views.h"
#include "jobs/lease.h"
#include "jobs/node_history.h"
#include "market/market.h"
#include "sched/data_class.h"

namespace idlegrid::coordinator {
namespace {

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

NodeTable::NodeTable(store::Store* store, Clock* clock, const Options& options, std::string join_secret_hash,
                     Tenancy* tenancy, AgentSessions* sessions, EventCounters* counters, Hooks hooks)
    : store_(store),
      clock_(clock),
      options_(options),
      join_secret_hash_(std::move(join_secret_hash)),
      tenancy_(tenancy),
      sessions_(sessions),
      counters_(counters),
      hooks_(std::move(hooks)),
      data_policy_(std::make_shared<const sched::DataPolicy>(options.data_policy)) {}

void NodeTable::Load(int64_t started_ms) {
  started_ms_ = started_ms;
  auto nodes = store_->ListNodes();
  if (!nodes.ok()) return;
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

void NodeTable::Sweep() {
  CheckHeartbeats();
  PersistHeartbeats();
  ExpireUnconnectedLeases();
  RefreshReliability();
  EnforceDrainDeadlines();
}

Result<std::string> NodeTable::Authenticate(const std::string& bearer) {
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

Result<v1::RegisterResponse> NodeTable::Register(const v1::RegisterRequest& request, const std::string& peer) {
  // The coordinator's own join secret enrolls nodes for the operator;
  // `idlegrid join-token create` mints one per provider account.
  std::string provider = store::kOperatorAccount;
  if (!auth::SameHash(Sha256Digest(request.join_secret()), join_secret_hash_)) {
    auto owner = tenancy_->ProviderOfJoinToken(request.join_secret());
    if (!owner.ok()) {
      spdlog::warn("registration from {} refused: {}", peer, owner.status().message());
      return owner.status();
    }
    provider = *owner;
  }
  if (Status skew = CheckAgentSkew(request.info().agent_version(), BuildVersionParts()); !skew.ok()) {
    spdlog::warn("registration from {} refused: {}", peer, skew.message());
    return skew;
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

std::shared_ptr<AgentSession> NodeTable::OpenSession(const std::string& node_id, const v1::NodeInfo& info,
                                                     const std::string& peer) {
  std::shared_ptr<AgentSession> session;
  {
    // The session opens under mu_: the liveness check never sees it beside
    // the node's stale heard-from time.
    MutexLock lock(&mu_);
    session = sessions_->Open(node_id);  // a reconnect replaces (closes) the old stream
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
      Status sent = hooks_.resend({a.attempt_id, a.job_id, a.index, a.node_id, 0, a.device_uuids, a.lease_epoch, {}});
      // Unsent, the attempt ends by the acknowledgement timeout and is placed again.
      if (!sent.ok()) spdlog::warn("re-sending attempt {} to node {}: {}", a.attempt_id, node_id, sent.message());
    }
  }
  spdlog::info("node {} connected from {}", node_id, peer);
  hooks_.changed();
  return session;
}

void NodeTable::CloseSession(const std::string& node_id, const std::shared_ptr<AgentSession>& session) {
  MutexLock lock(&mu_);
  // The node stays online until its heartbeats stop; without a stream it
  // cannot receive work, so it is out of placement (ViewLocked).
  if (sessions_->Close(node_id, session)) spdlog::info("node {} disconnected", node_id);
}

Result<v1::ListNodesResponse> NodeTable::List() {
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

Result<v1::Node> NodeTable::Drain(const v1::DrainNodeRequest& request) {
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
  hooks_.changed();
  IG_ASSIGN_OR_RETURN(auto nodes, List());
  for (const auto& n : nodes.nodes()) {
    if (n.id() == request.node_id()) return n;
  }
  return Status::NotFound("node " + request.node_id() + " does not exist");
}

Result<v1::ListNodeAttemptsResponse> NodeTable::Attempts(const v1::ListNodeAttemptsRequest& request) {
  IG_ASSIGN_OR_RETURN(uint32_t limit, jobs::NodeAttemptsLimit(request.limit()));
  IG_ASSIGN_OR_RETURN(std::optional<jobs::AttemptCursor> before, jobs::ParseAttemptCursor(request.page_token()));
  IG_ASSIGN_OR_RETURN(std::optional<store::NodeRecord> node, store_->GetNode(request.node_id()));
  if (!node) return Status::NotFound("node " + request.node_id() + " does not exist");
  IG_ASSIGN_OR_RETURN(std::vector<store::NodeAttemptRow> rows, store_->NodeAttempts(request.node_id(), before, limit));
  const int64_t now = clock_->NowMs();
  v1::ListNodeAttemptsResponse out;
  for (auto& row : rows) {
    v1::NodeAttempt* a = out.add_attempts();
    a->set_job_id(row.job_id);
    a->set_task_index(row.task_index);
    row.attempt.set_cost(jobs::AttemptCost(row.attempt, now));
    *a->mutable_attempt() = std::move(row.attempt);
  }
  // A full page may have older ones behind it; the next page says.
  if (rows.size() == limit) out.set_next_page_token(jobs::FormatAttemptCursor(rows.back().cursor));
  return out;
}

void NodeTable::SetDataPolicy(sched::DataPolicy policy) {
  auto replacement = std::make_shared<const sched::DataPolicy>(std::move(policy));
  {
    MutexLock lock(&mu_);
    data_policy_ = std::move(replacement);
  }
  hooks_.changed();  // tasks waiting on a node's tier may fit now
}

std::shared_ptr<const sched::DataPolicy> NodeTable::DataPolicy() {
  MutexLock lock(&mu_);
  return data_policy_;
}

StandingReader::Fleet NodeTable::StandingFleet() {
  StandingReader::Fleet fleet;
  MutexLock lock(&mu_);
  for (const auto& [id, n] : nodes_) {
    fleet.provider_of[id] = n.provider;
    fleet.providers.insert(n.provider);
    if (n.online && sessions_->Connected(id)) fleet.taking.insert(n.provider);
  }
  return fleet;
}

std::vector<NodeTable::ClearingAsk> NodeTable::ClearingAsks(const std::vector<store::NewAttempt>& placed) {
  std::vector<ClearingAsk> out;
  MutexLock lock(&mu_);
  for (const store::NewAttempt& a : placed) {
    auto it = nodes_.find(a.node_id);
    if (it == nodes_.end()) continue;
    const v1::Advertisement& ad = it->second.ad;
    if (!a.device_uuids.empty()) {
      // Pay-as-ask: the unit price is the device's ask (the placement keeps the highest of its devices').
      for (const auto& d : ad.inventory().gpus().devices()) {
        if (d.uuid() == a.device_uuids.front()) {
          out.push_back({d.name(), a.placement.ask_per_gpu_hour()});
          break;
        }
      }
      continue;
    }
    double ask = 0;
    for (const auto& p : ad.asks()) {
      if (p.device_class() == market::kCpuCoreClass) ask = p.per_hour();
    }
    out.push_back({market::kCpuCoreClass, ask});
  }
  return out;
}

std::string NodeTable::ProviderOf(const std::string& node_id) {
  {
    MutexLock lock(&mu_);
    auto it = nodes_.find(node_id);
    if (it != nodes_.end() && !it->second.provider.empty()) return it->second.provider;
  }
  auto rec = store_->GetNode(node_id);
  return rec.ok() && *rec ? (*rec)->provider : std::string(store::kOperatorAccount);
}

std::set<std::string> NodeTable::ProviderAccounts() {
  MutexLock lock(&mu_);
  std::set<std::string> out;
  for (const auto& [id, node] : nodes_) out.insert(node.provider.empty() ? store::kOperatorAccount : node.provider);
  return out;
}

std::string NodeTable::PublicKeyOf(const std::string& node_id) {
  MutexLock lock(&mu_);
  auto it = nodes_.find(node_id);
  return it == nodes_.end() ? std::string() : it->second.public_key;
}

std::map<std::string, int64_t> NodeTable::HeartbeatGaps() {
  std::map<std::string, int64_t> gaps;
  MutexLock lock(&mu_);
  for (const auto& [id, live] : nodes_) gaps[id] = live.liveness.max_gap_ms();
  return gaps;
}

}  // namespace idlegrid::coordinator
