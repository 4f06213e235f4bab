// The agent's two liveness loops. The coordinator judges a node by the
// messages it receives, so the heartbeat sender must keep its rhythm exactly
// when the host is busiest (the jobs we put there load it): it only copies a
// precomputed state under a short lock and sends it on its own connection.
// Everything slow — podman calls, discovery, the policy file, joining runner
// threads — happens on the maintenance loop, which hands its results over.
#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>

#include "agent/agent.h"
#include "common/clock.h"

namespace idlegrid::agent {

namespace {

// After a failed heartbeat, try again this soon (a restarted coordinator
// must hear from every agent within its grace period, not one interval later).
constexpr int kHeartbeatRetryMs = 200;
// The orphan sweep calls podman: not more often than this.
constexpr int64_t kOrphanSweepMs = 30'000;

}  // namespace

void Agent::HeartbeatSendLoop() {
  // The physical-work handshake (docs/scheduling.md, Reliability): every
  // send carries the next sequence number, failed ones included, so the
  // coordinator can count what was lost on the way; and the round trip of
  // the last call that arrived.
  uint64_t sequence = 0;
  uint32_t last_rtt_us = 0;
  while (!stopping_) {
    v1::HeartbeatRequest req;
    req.set_sequence(++sequence);
    req.set_last_rtt_us(last_rtt_us);
    int interval_ms = 0;
    uint64_t ad_generation = 0;
    {
      MutexLock lock(&hb_mu_);
      *req.mutable_info() = hb_.info;
      for (const auto& id : hb_.running) req.add_running_attempts(id);
      if (hb_.pending_ad) {
        *req.mutable_advertisement() = *hb_.pending_ad;
        ad_generation = hb_.ad_generation;
      }
      interval_ms = hb_.interval_ms;
      if (hb_.pause.pauses() > 0) *req.mutable_pause() = hb_.pause;
    }
    const int64_t sent_ms = config_.clock->NowMs();
    v1::HeartbeatResponse resp;
    // Waits for the connection (a restarting coordinator) for at most one
    // interval: the next heartbeat carries fresher state anyway.
    auto ctx = Context(std::max(interval_ms, 1000));
    ctx->set_wait_for_ready(true);
    const auto call_start = std::chrono::steady_clock::now();
    grpc::Status s = heartbeat_stub_->Heartbeat(ctx.get(), req, &resp);
    ctx.reset();
    bool delivered = s.ok();
    metrics_.CountHeartbeat(delivered);
    if (delivered) {
      const auto us =
          std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - call_start).count();
      last_rtt_us = static_cast<uint32_t>(std::clamp<int64_t>(us, 1, UINT32_MAX));
    }
    {
      MutexLock lock(&hb_mu_);
      if (delivered && resp.interval_ms() > 0) hb_.interval_ms = static_cast<int>(resp.interval_ms());
      interval_ms = hb_.interval_ms;
      if (hb_.pending_ad && hb_.ad_generation == ad_generation && ad_generation != 0) {
        if (delivered) {
          hb_.pending_ad.reset();
        } else if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
                   s.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
          // Refused, not lost: a new one must be signed (maintenance loop).
          hb_.pending_ad.reset();
          hb_.ad_refused = true;
        }
      }
    }
    for (const auto& id : resp.stop_attempts()) {
      v1::CancelAttempt cancel;  // queued for the maintenance loop: podman never runs here
      cancel.set_attempt_id(id);
      cancel.set_reason("the coordinator ended this attempt while this node was cut off");
      HandleCancel(cancel);
    }
    if (!delivered && !stopping_) spdlog::warn("heartbeat failed: {}", s.error_message());
    // Next one an interval after this one was sent (not after it returned),
    // sooner after a failure or when a new advertisement is waiting.
    int64_t due = sent_ms + (delivered ? interval_ms : std::min(interval_ms, kHeartbeatRetryMs));
    MutexLock lock(&hb_mu_);
    while (!stopping_) {
      int64_t now = config_.clock->NowMs();
      if (now >= due) break;
      if (hb_.pending_ad && hb_.ad_generation != ad_generation && delivered) break;
      hb_cv_.WaitFor(&hb_mu_, std::chrono::milliseconds(due - now));
    }
  }
}

void Agent::ReapFinishedRunners() {
  std::vector<std::thread> done;
  std::vector<std::string> ids;
  {
    MutexLock lock(&mu_);
    for (const auto& id : finished_) {
      auto it = attempts_.find(id);
      if (it == attempts_.end()) continue;
      done.push_back(std::move(it->second));
      attempts_.erase(it);
      epochs_.erase(id);
      ids.push_back(id);
    }
    finished_.clear();
  }
  // Joined outside every lock: a runner's last steps must never hold up
  // heartbeats or new assignments.
  for (auto& t : done) t.join();
  if (ids.empty()) return;
  MutexLock lock(&hb_mu_);
  for (const auto& id : ids) hb_.running.erase(id);
}

void Agent::MaintenanceLoop() {
  int64_t last_sweep_ms = config_.clock->NowMs();
  while (!stopping_) {
    ReapFinishedRunners();
    std::vector<std::string> stops;
    {
      MutexLock lock(&mu_);
      stops.swap(stop_requests_);
      readvertise_ = false;
    }
    std::sort(stops.begin(), stops.end());
    stops.erase(std::unique(stops.begin(), stops.end()), stops.end());
    for (const auto& id : stops) {
      if (stopping_) break;  // Shutdown kills whatever still runs
      {
        MutexLock lock(&mu_);
        if (finished_.count(id) || !attempts_.count(id)) continue;  // ended meanwhile
      }
      Status st = runtime_->Kill(ContainerName(id));
      if (!st.ok()) spdlog::warn("stopping attempt {}: {}", id, st.message());
    }
    if (config_.clock->NowMs() - last_sweep_ms > kOrphanSweepMs) {
      RemoveOrphans();
      last_sweep_ms = config_.clock->NowMs();
    }
    v1::NodeInfo info = Describe();
    bool refused = false;
    {
      MutexLock lock(&hb_mu_);
      hb_.info = info;
      refused = hb_.ad_refused;
      hb_.ad_refused = false;
    }
    if (refused) advertiser_->Reset();
    bool policy_changed = ReloadPolicy();
    auto ad = CurrentAdvertisement();
    if (ad.ok()) {
      {
        MutexLock lock(&mu_);
        last_devices_.assign(ad->inventory().gpus().devices().begin(), ad->inventory().gpus().devices().end());
      }
      auto signed_ad = advertiser_->Next(*ad, config_.clock->NowMs(), policy_changed || refused);
      if (signed_ad) {
        MutexLock lock(&hb_mu_);
        hb_.pending_ad = std::move(*signed_ad);
        ++hb_.ad_generation;
        hb_cv_.NotifyAll();  // capacity changed: tell the coordinator now
      }
    } else {
      spdlog::warn("advertisement not built: {}", ad.status().message());
    }
    int interval_ms = 0;
    {
      MutexLock lock(&hb_mu_);
      interval_ms = hb_.interval_ms;
    }
    MutexLock lock(&mu_);
    cv_.WaitFor(&mu_, std::chrono::milliseconds(interval_ms), [&]() IG_REQUIRES(mu_) {
      return stopping_.load() || readvertise_ || !stop_requests_.empty() || !finished_.empty();
    });
  }
}

void Agent::RemoveOrphans() {
  // Containers of this node that no runner owns were left by a previous run
  // (a crash, kill -9): their attempts can no longer be reported on, so stop
  // them. The coordinator fails those attempts once heartbeats stop listing
  // them. A `podman run` orphaned mid-start may create its container after
  // the first sweep, hence the periodic ones.
  auto containers = runtime_->ListContainers();
  if (!containers.ok()) {
    spdlog::warn("orphan sweep: {}", containers.status().message());
    return;
  }
  const std::string prefix = ContainerName("");
  for (const auto& name : *containers) {
    if (name.rfind(prefix, 0) != 0) continue;  // another agent's
    {
      MutexLock lock(&mu_);
      if (attempts_.count(name.substr(prefix.size()))) continue;
    }
    spdlog::warn("removing container {} left by a previous run", name);
    if (Status st = runtime_->Kill(name); !st.ok()) spdlog::warn("removing {}: {}", name, st.message());
  }
}

}  // namespace idlegrid::agent
