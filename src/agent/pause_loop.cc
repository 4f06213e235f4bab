// The owner-first pause watcher (docs/provider.md, "When the owner needs the
// machine"): a thread of its own that polls what the owner's policy asks
// about (pause_observe.h), asks the pure core what that means
// (pause_policy.h), and carries it out: freezes the running attempts' containers,
// thaws them once the condition has been clear long enough, hands them back
// when the pause outlasts the owner's grace period, and tells the coordinator
// (the heartbeat's NodePause; the advertisement takes no new work).
#include <spdlog/spdlog.h>

#include <map>
#include <set>

#include "agent/agent.h"
#include "agent/pause_observe.h"
#include "common/clock.h"

namespace idlegrid::agent {

namespace {

v1::NodePause DescribePause(const PauseState& s, const std::set<std::string>& frozen, int64_t now_ms) {
  v1::NodePause p;
  p.set_paused(s.paused);
  p.set_pauses(s.pauses);
  p.set_paused_ms_total(s.paused_ms_total + (s.paused ? now_ms - s.since_ms : 0));
  if (!s.paused) return p;
  p.set_cause(s.condition.cause);
  p.set_reason(s.condition.reason);
  p.set_since_ms(s.since_ms);
  p.set_throttle_reasons(s.condition.throttle_reasons);
  for (const auto& id : frozen) p.add_frozen_attempts(id);
  return p;
}

}  // namespace

std::vector<std::string> Agent::ActiveAttempts() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [id, thread] : attempts_) {
    if (!finished_.count(id) && !cancelled_.count(id)) out.push_back(id);
  }
  return out;
}

void Agent::HandBack(const std::string& attempt_id, const std::string& why) {
  // As a cancel on the node's own account: the runner reports STOPPED (after
  // a last checkpoint), which the coordinator records as handed back — no
  // retry used, the node not excluded, its reliability untouched.
  std::lock_guard<std::mutex> lock(mu_);
  if (!attempts_.count(attempt_id) || finished_.count(attempt_id)) return;
  stop_messages_[attempt_id] = why;
  cancelled_.insert(attempt_id);
  stop_requests_.push_back(attempt_id);
  cv_.notify_all();
}

void Agent::PauseLoop() {
  PauseState state;
  std::set<std::string> frozen;            // attempts whose containers this loop froze
  std::set<std::string> unknown_logged;    // sources already said to be unreadable
  std::string last_reason;
  while (!stopping_) {
    PausePolicy policy;
    std::set<std::string> held;
    {
      std::lock_guard<std::mutex> lock(mu_);
      policy = owner_.pause;
      for (const auto& [id, h] : holds_) held.insert(h.devices.begin(), h.devices.end());
    }
    const std::vector<std::string> active = ActiveAttempts();
    std::optional<PauseCondition> condition;
    if (policy.Enabled()) {
      ObserveInputs in;
      in.nvml_library = config_.nvml_library;
      in.held_gpu_uuids = held;
      in.own_pids = [this, &active] {
        std::set<int> pids;
        for (const auto& id : active) {
          for (int pid : runtime_->HostPids(ContainerName(id))) pids.insert(pid);
        }
        return pids;
      };
      std::vector<std::string> unknown;
      const PauseObservation seen = ObserveHost(policy, in, &unknown);
      for (const auto& u : unknown) {
        // An unknown never pauses; said once, not every poll.
        if (unknown_logged.insert(u).second) spdlog::warn("pause watcher cannot observe {}; it does not pause", u);
      }
      condition = FindPauseCondition(policy, seen);
    }
    const int64_t now = SystemClock::Get()->NowMs();
    const PauseDecision d = DecidePause(policy, state, condition, now);
    if (d.next.paused) {
      // Attempts that started during the pause are frozen too; one whose
      // container does not exist yet is tried again next poll.
      for (const auto& id : active) {
        if (frozen.count(id)) continue;
        Status st = runtime_->Freeze(ContainerName(id));
        if (st.ok()) {
          frozen.insert(id);
          spdlog::info("attempt {} frozen: {}", id, d.next.condition.reason);
        } else if (st.code() != Code::kNotFound) {
          spdlog::warn("attempt {} not frozen: {}", id, st.message());
        }
      }
      if (d.hand_back) {
        for (const auto& id : active) {
          spdlog::info("attempt {} handed back: paused by its owner for {} s", id, (now - d.next.since_ms) / 1000);
          HandBack(id, "paused by its owner: " + d.next.condition.reason);
        }
      }
    }
    if (d.thaw) {
      for (const auto& id : frozen) {
        Status st = runtime_->Thaw(ContainerName(id));
        if (st.ok()) spdlog::info("attempt {} resumed after {} ms", id, now - state.since_ms);
        else if (st.code() != Code::kNotFound) spdlog::warn("attempt {} not thawed: {}", id, st.message());
      }
      frozen.clear();
    }
    // Ended attempts are no longer frozen (or waiting for their stop message).
    {
      std::set<std::string> live(active.begin(), active.end());
      for (auto it = frozen.begin(); it != frozen.end();) it = live.count(*it) ? std::next(it) : frozen.erase(it);
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = stop_messages_.begin(); it != stop_messages_.end();) {
        it = attempts_.count(it->first) ? std::next(it) : stop_messages_.erase(it);
      }
    }
    const std::string reason = d.next.paused ? d.next.condition.reason : "";
    if (reason != last_reason) {
      if (d.next.paused && !state.paused) spdlog::info("paused by its owner: {}", reason);
      if (!d.next.paused) spdlog::info("owner's pause over; taking work again");
      {
        std::lock_guard<std::mutex> lock(mu_);
        owner_pause_reason_ = reason;
      }
      last_reason = reason;
      RequestReadvertise();  // accept_jobs follows the pause; the heartbeat carrying both goes at once
    }
    {
      std::lock_guard<std::mutex> lock(hb_mu_);
      hb_.pause = DescribePause(d.next, frozen, now);
    }
    state = d.next;
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(std::max(config_.pause_poll_ms, 50)),
                 [&] { return stopping_.load(); });
  }
}

}  // namespace idlegrid::agent
