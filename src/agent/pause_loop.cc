// The owner-first pause watcher (docs/provider.md, "When the owner needs the
// machine"): a thread of its own that polls what the owner's policy asks
// about (pause_observe.h), asks the pure core what that means
// (pause_policy.h), and carries it out: freezes the running attempts' containers,
// thaws them once the condition has been clear long enough, hands them back
// when the pause outlasts the owner's grace period, and tells the coordinator
// (the heartbeat's NodePause; the advertisement takes no new work).
#include <spdlog/spdlog.h>

#include <filesystem>
#include <map>
#include <set>

#include "agent/agent.h"
#include "agent/pause_observe.h"
#include "agent/owner_command.h"
#include "common/clock.h"
#include "common/fs.h"

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
  MutexLock lock(&mu_);
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
  MutexLock lock(&mu_);
  if (!attempts_.count(attempt_id) || finished_.count(attempt_id)) return;
  stop_messages_[attempt_id] = why;
  cancelled_.insert(attempt_id);
  stop_requests_.push_back(attempt_id);
  cv_.NotifyAll();
}

// The owner's `agent pause` file, or nullopt: none, unreadable (said once),
// or expired (removed, so a restart does not pause again).
std::optional<OwnerCommand> Agent::ReadOwnerCommand(int64_t now_ms, std::string* last_error) {
  const std::string path = OwnerCommandPath(config_.data_dir);
  if (!std::filesystem::exists(path)) return std::nullopt;
  Result<std::string> text = ReadFile(path);
  Result<OwnerCommand> c = text.ok() ? ParseOwnerCommand(*text) : Result<OwnerCommand>(text.status());
  if (!c.ok()) {
    if (c.status().message() != *last_error) spdlog::warn("{} ignored: {}", path, c.status().message());
    *last_error = c.status().message();
    return std::nullopt;
  }
  last_error->clear();
  if (OwnerCommandExpired(*c, now_ms)) {
    std::error_code ec;
    std::filesystem::remove(path, ec);
    spdlog::info("owner's pause ({}) expired", DescribeOwnerCommand(*c));
    return std::nullopt;
  }
  return *c;
}

void Agent::PauseLoop() {
  PauseState state;
  std::set<std::string> frozen;          // attempts whose containers this loop froze
  std::set<std::string> unknown_logged;  // sources already said to be unreadable
  std::string last_reason, last_command, command_error;
  while (!stopping_) {
    PausePolicy policy;
    std::set<std::string> held;
    std::map<std::string, AttemptHold> holds;
    std::vector<v1::GpuDevice> devices;
    {
      MutexLock lock(&mu_);
      policy = owner_.pause;
      holds = holds_;
      devices = last_devices_;
      for (const auto& [id, h] : holds_) held.insert(h.held.devices.begin(), h.held.devices.end());
    }
    const std::vector<std::string> active = ActiveAttempts();
    int64_t now = config_.clock->NowMs();
    const std::optional<OwnerCommand> command = ReadOwnerCommand(now, &command_error);
    if (const std::string text = command ? FormatOwnerCommand(*command) : ""; text != last_command) {
      if (command) spdlog::info("paused by its owner: {}", DescribeOwnerCommand(*command));
      {
        MutexLock lock(&mu_);
        owner_command_ = command;
      }
      last_command = text;
      RequestReadvertise();  // a per-GPU pause holds devices back
    }
    std::optional<PauseCondition> condition;
    if (command && command->gpus.empty()) {
      // The owner's own word comes first: it needs nothing observed.
      condition = PauseCondition{kOwnerCommandCause, DescribeOwnerCommand(*command), 0};
    } else if (policy.Enabled()) {
      ObserveInputs in;
      in.nvml_library = config_.nvml_library;
      in.held_gpu_uuids = held;
      in.now_ms = now;
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
    now = config_.clock->NowMs();
    const PauseDecision d = DecidePause(policy, state, condition, now);
    // What must stop now and why: everything while the node is paused, and
    // the attempts on a GPU the owner paused by hand.
    std::map<std::string, std::string> targets;
    std::set<std::string> paused_gpu_uuids;
    if (command && !command->gpus.empty()) {
      for (const auto& g : devices) {
        if (GpuSelected(command->gpus, g)) paused_gpu_uuids.insert(g.uuid());
      }
    }
    for (const auto& id : active) {
      if (d.next.paused) {
        targets[id] = d.next.condition.reason;
        continue;
      }
      auto h = holds.find(id);
      if (h == holds.end()) continue;
      for (const auto& uuid : h->second.held.devices) {
        if (paused_gpu_uuids.count(uuid)) targets[id] = DescribeOwnerCommand(*command);
      }
    }
    std::set<std::string> handed;
    for (const auto& [id, why] : targets) {
      if (frozen.count(id)) continue;
      auto h = holds.find(id);
      const bool holds_gpu = h != holds.end() && !h->second.held.devices.empty();
      const bool checkpoint = h != holds.end() && h->second.checkpoint;
      if (ActionForAttempt(policy, holds_gpu, checkpoint) == PauseAction::kHandBack) {
        // A GPU job with a checkpoint: its last checkpoint saved, it goes
        // elsewhere and its VRAM is the owner's again.
        spdlog::info("attempt {} handed back at once: paused by its owner: {}", id, why);
        HandBack(id, "paused by its owner: " + why);
        handed.insert(id);
        continue;
      }
      // Attempts that start during the pause are frozen too; one whose
      // container does not exist yet is tried again next poll.
      Status st = runtime_->Freeze(ContainerName(id));
      if (st.ok()) {
        frozen.insert(id);
        spdlog::info("attempt {} frozen: {}", id, why);
      } else if (st.code() != Code::kNotFound) {
        spdlog::warn("attempt {} not frozen: {}", id, st.message());
      }
    }
    if (d.hand_back) {
      // The node's pause outlasted handBackAfter: all its attempts go, frozen
      // or not yet (a container that did not exist at the last poll).
      for (const auto& [id, why] : targets) {
        if (handed.count(id)) continue;
        spdlog::info("attempt {} handed back: paused by its owner for {} s", id, (now - d.next.since_ms) / 1000);
        HandBack(id, "paused by its owner: " + why);
      }
    }
    for (auto it = frozen.begin(); it != frozen.end();) {
      if (targets.count(*it)) {
        ++it;
        continue;
      }
      Status st = runtime_->Thaw(ContainerName(*it));
      if (st.ok())
        spdlog::info("attempt {} resumed", *it);
      else if (st.code() != Code::kNotFound)
        spdlog::warn("attempt {} not thawed: {}", *it, st.message());
      it = frozen.erase(it);
    }
    // Ended attempts are no longer frozen (or waiting for their stop message).
    {
      std::set<std::string> live(active.begin(), active.end());
      for (auto it = frozen.begin(); it != frozen.end();) it = live.count(*it) ? std::next(it) : frozen.erase(it);
      MutexLock lock(&mu_);
      for (auto it = stop_messages_.begin(); it != stop_messages_.end();) {
        it = attempts_.count(it->first) ? std::next(it) : stop_messages_.erase(it);
      }
    }
    const std::string reason = d.next.paused ? d.next.condition.reason : "";
    if (reason != last_reason) {
      if (d.next.paused && !state.paused) spdlog::info("paused by its owner: {}", reason);
      if (!d.next.paused) spdlog::info("owner's pause over; taking work again");
      {
        MutexLock lock(&mu_);
        owner_pause_reason_ = reason;
      }
      last_reason = reason;
      RequestReadvertise();  // accept_jobs follows the pause; the heartbeat carrying both goes at once
    }
    {
      MutexLock lock(&hb_mu_);
      hb_.pause = DescribePause(d.next, frozen, now);
      if (d.next.paused && d.next.condition.cause == kOwnerCommandCause && command) {
        hb_.pause.set_until_ms(command->until_ms);
      }
    }
    state = d.next;
    MutexLock lock(&mu_);
    cv_.WaitFor(&mu_, std::chrono::milliseconds(std::max(config_.pause_poll_ms, 50)), [&] { return stopping_.load(); });
  }
}

}  // namespace idlegrid::agent
