// The node table's liveness (node_table.h): heartbeats (in memory, persisted in batches), lease expiry judged
// on this coordinator's clock (for nodes connected here and, from the stored
// heartbeats, for nodes connected elsewhere), reconciliation of what agents
// say they run, and node reliability.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>

#include "coordinator/node_table.h"
#include "jobs/task_state.h"

namespace idlegrid::coordinator {

Result<v1::HeartbeatResponse> NodeTable::Heartbeat(const std::string& node_id, const v1::HeartbeatRequest& request) {
  if (request.has_advertisement()) IG_RETURN_IF_ERROR(AcceptAdvertisement(node_id, request.advertisement()));
  ReconcileRunning(node_id, request);
  bool came_back = false;
  bool paused_changed = false;
  counters_->HeartbeatReceived();
  {
    MutexLock lock(&mu_);
    NodeLive& live = nodes_[node_id];
    const bool connected = sessions_->Connected(node_id);
    came_back = !live.online && connected;
    live.liveness.OnHeartbeat(clock_->NowMs(), live.online, options_.heartbeat_interval_ms);
    live.liveness.OnHandshake(request.sequence(), request.last_rtt_us());
    if (request.info().cpu_cores()) live.info = request.info();
    if (request.has_pause()) {
      live.owner_pauses = request.pause().pauses();
      live.owner_paused_ms = request.pause().paused_ms_total();
    }
    if (connected) live.online = true;
    if (live.pause.paused() != request.pause().paused()) {
      spdlog::info(
          "node {} {}", node_id,
          request.pause().paused() ? "paused by its owner: " + request.pause().reason() : "resumed by its owner");
      paused_changed = true;
    }
    live.pause = request.pause();
  }
  if (came_back || paused_changed) hooks_.changed();
  v1::HeartbeatResponse out;
  // Fencing, agent side: whatever it runs under an attempt that has ended is stale.
  auto running = RecentRunningAttempts();
  const std::vector<std::string>* known = nullptr;
  if (running.ok()) {
    auto it = (*running)->find(node_id);
    if (it != (*running)->end()) known = &it->second.active;
  }
  for (const auto& id : request.running_attempts()) {
    // Active here a moment ago (assigned or running): no need to ask the
    // store each heartbeat; only unknown ids cost a lookup.
    if (known && std::find(known->begin(), known->end(), id) != known->end()) continue;
    auto owner = store_->GetAttemptOwner(id);
    if (owner.ok() && owner->node_id == node_id && jobs::IsTerminal(owner->state)) {
      out.add_stop_attempts(id);
      spdlog::warn("node {} still runs ended attempt {}: told to stop it", node_id, id);
    }
  }
  out.set_server_time_ms(clock_->NowMs());
  out.set_interval_ms(static_cast<uint32_t>(options_.heartbeat_interval_ms));
  return out;
}

Result<std::shared_ptr<const RunningIndex>> NodeTable::RecentRunningAttempts() {
  return running_index_.Get(*store_, clock_->NowMs(), kActiveCacheMs);
}

void NodeTable::RefreshReliability() {
  int64_t now = clock_->NowMs();
  if (reliability_refreshed_ms_ != 0 && now - reliability_refreshed_ms_ < kReliabilityRefreshMs) return;
  reliability_refreshed_ms_ = now;
  auto outcomes = store_->RecentNodeOutcomes(now - kReliabilityWindowMs);
  if (!outcomes.ok()) {
    spdlog::warn("reliability: {}", outcomes.status().ToString());
    return;
  }
  // Each provider's verification record (docs/verification.md), read outside the lock.
  std::set<std::string> providers;
  {
    MutexLock lock(&mu_);
    for (const auto& [id, live] : nodes_) providers.insert(live.provider);
  }
  std::map<std::string, store::TrustRecord> records;
  for (const std::string& p : providers) {
    auto trust = store_->TrustOf(p);
    if (!trust.ok()) continue;
    for (const auto& r : *trust) {
      if (r.image.empty()) records[p] = r;
    }
  }
  MutexLock lock(&mu_);
  for (auto& [id, live] : nodes_) {
    sched::ReliabilityInputs in;
    if (auto rec = records.find(live.provider); rec != records.end()) {
      in.provider_verification = rec->second.reliability;
      in.provider_caught = rec->second.caught;
    }
    auto it = outcomes->find(id);
    if (it != outcomes->end()) {
      in.succeeded = it->second.succeeded;
      in.node_lost = it->second.node_lost;
      in.node_failed = it->second.node_failed;
    }
    in.heartbeat_lateness = live.liveness.lateness();
    in.throttle_reports = live.throttle_reports;
    const double interval = std::max(options_.heartbeat_interval_ms, 1);
    in.heartbeat_jitter = live.liveness.jitter_ms() / interval;
    in.heartbeat_loss = live.liveness.loss();
    in.rtt_ms = live.liveness.rtt_ms();
    in.stalls = live.liveness.stalls();
    in.owner_pauses = live.owner_pauses;
    in.owner_paused_ms = live.owner_paused_ms;
    live.reliability = sched::ScoreReliability(in);
    live.reliability_inputs = in;
  }
}

void NodeTable::ReconcileRunning(const std::string& node_id, const v1::HeartbeatRequest& request) {
  auto running = RecentRunningAttempts();
  if (!running.ok()) return;
  auto on_node = (*running)->find(node_id);
  std::vector<std::string> lost;
  {
    MutexLock lock(&mu_);
    NodeLive& live = nodes_[node_id];
    if ((on_node == (*running)->end() || on_node->second.running.empty()) && live.unlisted.empty()) {
      return;  // the common case: nothing to reconcile
    }
    std::set<std::string> listed(request.running_attempts().begin(), request.running_attempts().end());
    std::map<std::string, int> still;
    if (on_node != (*running)->end()) {
      for (const auto& id : on_node->second.running) {
        if (listed.count(id)) continue;
        int misses = live.unlisted[id] + 1;
        if (misses >= 2) {
          lost.push_back(id);
        } else {
          still[id] = misses;
        }
      }
    }
    live.unlisted = std::move(still);
  }
  for (const auto& id : lost) {
    v1::ReportAttemptRequest report;
    report.set_attempt_id(id);
    report.set_event(v1::ERRORED);
    report.set_failure_reason(v1::NODE_LOST);
    report.set_message("the agent no longer runs this attempt (it restarted); its container was removed");
    spdlog::warn("attempt {} on node {} is gone from the agent: failing it", id, node_id);
    // Refused when it ended meanwhile; otherwise the lease expiry ends it.
    if (Status st = hooks_.report_attempt(node_id, report); !st.ok()) spdlog::info("attempt {}: {}", id, st.message());
  }
}

void NodeTable::PersistHeartbeats() {
  // Heartbeats live in memory; the store gets them in one batch at most every
  // few seconds, never one write per heartbeat.
  int64_t now = clock_->NowMs();
  std::map<std::string, int64_t> batch;
  {
    MutexLock lock(&mu_);
    if (now - heartbeats_persisted_ms_ < PersistPeriodMs()) return;
    heartbeats_persisted_ms_ = now;
    for (const auto& [id, n] : nodes_) {
      if (n.online) batch[id] = std::max(n.liveness.last_heartbeat_ms(), n.liveness.last_heard_ms());
    }
  }
  if (batch.empty()) return;
  // Other coordinators on the same database expire this one's nodes from
  // these times: a failed write must be seen (it is retried next period).
  if (Status st = store_->RecordHeartbeats(batch); !st.ok()) {
    spdlog::error("heartbeats of {} node(s) not stored: {}", batch.size(), st.ToString());
    MutexLock lock(&mu_);
    heartbeats_persisted_ms_ = 0;
  }
}

void NodeTable::ExpireUnconnectedLeases() {
  // Leases of nodes with no session here: connected to another coordinator
  // on the same database (whose heartbeats reach the store every persist
  // period), or never back after this coordinator restarted. Judged on the
  // stored heartbeat, but never before this process has given them a full
  // grace period of its own.
  int64_t now = clock_->NowMs();
  if (now - unconnected_checked_ms_ < options_.heartbeat_interval_ms) return;
  unconnected_checked_ms_ = now;
  auto active = store_->ActiveAttempts();
  if (!active.ok() || active->empty()) return;
  // Only nodes holding attempts and not connected here (those are
  // CheckHeartbeats' job) need their stored heartbeat read.
  std::set<std::string> unconnected;
  {
    MutexLock lock(&mu_);
    for (const auto& a : *active) {
      auto it = nodes_.find(a.node_id);
      if (it == nodes_.end() || !(it->second.online || sessions_->Connected(a.node_id))) unconnected.insert(a.node_id);
    }
  }
  int64_t timeout = int64_t{options_.heartbeat_interval_ms} * options_.heartbeat_margin;
  int64_t allowance = timeout + PersistPeriodMs() + options_.dispatch_period_ms;
  for (const auto& id : unconnected) {
    auto record = store_->GetNode(id);
    if (!record.ok() || !*record) continue;
    int64_t last = std::max((*record)->last_heartbeat_ms, started_ms_);
    if (now - last <= allowance) continue;
    size_t failed = FailLostNode(id, now);
    if (failed > 0) {
      spdlog::warn("node {} (not connected here): last heartbeat {} ms ago; {} attempt(s) failed as node_lost", id,
                   now - last, failed);
    }
  }
}

size_t NodeTable::FailLostNode(const std::string& node_id, int64_t now) {
  auto failed = store_->FailNodeAttempts(node_id, now);
  if (!failed.ok()) {
    spdlog::error("node {} lost, but its attempts could not be failed: {}", node_id, failed.status().ToString());
    return 0;
  }
  for (const auto& f : *failed) {
    counters_->CountOutcome(f.outcome);
    counters_->TrackRun(f.job_id, f.index, f.outcome, now);
    hooks_.judge_readiness(f.job_id);
  }
  if (!failed->empty()) hooks_.changed();
  return failed->size();
}

void NodeTable::CheckHeartbeats() {
  int64_t now = clock_->NowMs();
  // A check that runs late because this process stalled (a loaded host) is
  // no evidence against the nodes: the liveness rules discount it.
  int64_t lag = heartbeats_checked_ms_ == 0 ? 0 : now - heartbeats_checked_ms_ - options_.dispatch_period_ms;
  heartbeats_checked_ms_ = now;
  std::vector<std::pair<std::string, int64_t>> lost;  // node, silence
  bool newly_suspect = false;
  {
    MutexLock lock(&mu_);
    for (auto& [id, n] : nodes_) {
      if (!(n.online || sessions_->Connected(id))) continue;
      const bool was_suspect = n.liveness.suspect();
      auto verdict = n.liveness.Check(LivenessParamsOf(), now, lag);
      if (verdict.state == jobs::Liveness::kSuspect && !was_suspect) {
        spdlog::warn("node {} suspect: silent for {} ms (timeout {} ms); no new work until it is heard from", id,
                     now - n.liveness.last_heard_ms(), verdict.timeout_ms);
        newly_suspect = true;
        counters_->NodeSuspected();
      }
      if (verdict.state != jobs::Liveness::kOffline) continue;
      n.online = false;
      counters_->NodeLost();
      sessions_->Drop(id);
      lost.emplace_back(id, now - n.liveness.last_heard_ms());
    }
  }
  if (newly_suspect) hooks_.changed();
  for (const auto& [id, silence] : lost) {
    size_t failed = FailLostNode(id, now);
    hooks_.forget_readiness(id);
    spdlog::warn("node {} offline: nothing heard for {} ms; {} attempt(s) failed as node_lost", id, silence, failed);
  }
  ExpireUnacknowledged(now);
  if (!lost.empty()) hooks_.changed();
}

void NodeTable::ExpireUnacknowledged(int64_t now) {
  // An assignment the agent never acknowledged goes elsewhere, quickly.
  auto unacked = store_->UnacknowledgedAttempts(now - options_.ack_timeout_ms);
  if (unacked.ok()) {
    for (const auto& a : *unacked) {
      v1::ReportAttemptRequest report;
      report.set_attempt_id(a.attempt_id);
      report.set_event(v1::ERRORED);
      report.set_failure_reason(v1::ACK_TIMEOUT);
      report.set_message("node did not acknowledge the assignment within " + std::to_string(options_.ack_timeout_ms) +
                         " ms");
      spdlog::warn("attempt {} on node {}: {}", a.attempt_id, a.node_id, report.message());
      if (Status st = hooks_.report_attempt(a.node_id, report); !st.ok()) {
        spdlog::info("attempt {}: ack timeout not recorded: {}", a.attempt_id, st.message());
      }
      v1::Command cancel;  // should the assignment still arrive, the agent drops it
      cancel.mutable_cancel()->set_attempt_id(a.attempt_id);
      cancel.mutable_cancel()->set_reason("not acknowledged in time");
      sessions_->Push(a.node_id, std::move(cancel));
    }
  }
}

void NodeTable::EnforceDrainDeadlines() {
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
      if (sessions_->Push(id, std::move(cmd))) {
        spdlog::info("node {} drain deadline: handing back attempt {}", id, a.attempt_id);
      }
    }
  }
}

int64_t NodeTable::PersistPeriodMs() const {
  return std::min<int64_t>(kHeartbeatPersistMs, options_.heartbeat_interval_ms);
}

}  // namespace idlegrid::coordinator
