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

// What the watcher keeps from one poll to the next.
struct PauseWatch {
  PauseState state;
  std::set<std::string> frozen;          // attempts whose containers this loop froze
  std::set<std::string> unknown_logged;  // sources already said to be unreadable
  std::string last_reason, last_command, command_error;
};

// What one poll saw and decided.
struct PausePoll {
  PausePolicy policy;
  std::set<std::string> held;  // UUIDs of the GPUs the attempts hold
  std::map<std::string, HeldByAttempt> holds;
  std::vector<v1::GpuDevice> devices;
  std::vector<std::string> active;
  std::vector<std::string> containers;  // the active attempts' container names
  std::optional<OwnerCommand> command;
  int64_t now = 0;
  PauseDecision decision;
  std::map<std::string, std::string> targets;  // attempt id -> why it must stop now
};

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

// The owner's `agent pause` file, or nullopt: none, unreadable (said once),
// or expired (removed, so a restart does not pause again).
std::optional<OwnerCommand> ReadOwnerCommand(const std::string& data_dir, int64_t now_ms, std::string* last_error) {
  const std::string path = OwnerCommandPath(data_dir);
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

// Why the whole node is the owner's now, or nullopt: the owner's command,
// else what the policy asks about, observed.
std::optional<PauseCondition> ObservePauseCondition(const PausePoll& p, const std::string& nvml_library,
                                                    runtime::ContainerRuntime* runtime, PauseWatch* w) {
  if (p.command && p.command->gpus.empty()) {
    // The owner's own word comes first: it needs nothing observed.
    return PauseCondition{kOwnerCommandCause, DescribeOwnerCommand(*p.command), 0};
  }
  if (!p.policy.Enabled()) return std::nullopt;
  ObserveInputs in;
  in.nvml_library = nvml_library;
  in.held_gpu_uuids = p.held;
  in.now_ms = p.now;
  in.own_pids = [runtime, &containers = p.containers] {
    std::set<int> pids;
    for (const auto& name : containers) {
      for (int pid : runtime->HostPids(name)) pids.insert(pid);
    }
    return pids;
  };
  std::vector<std::string> unknown;
  const PauseObservation seen = ObserveHost(p.policy, in, &unknown);
  for (const auto& u : unknown) {
    // An unknown never pauses; said once, not every poll.
    if (w->unknown_logged.insert(u).second) spdlog::warn("pause watcher cannot observe {}; it does not pause", u);
  }
  return FindPauseCondition(p.policy, seen);
}

// What must stop now and why: everything while the node is paused, and
// the attempts on a GPU the owner paused by hand.
std::map<std::string, std::string> PauseTargets(const PausePoll& p) {
  std::map<std::string, std::string> targets;
  std::set<std::string> paused_gpu_uuids;
  if (p.command && !p.command->gpus.empty()) {
    for (const auto& g : p.devices) {
      if (GpuSelected(p.command->gpus, g)) paused_gpu_uuids.insert(g.uuid());
    }
  }
  for (const auto& id : p.active) {
    if (p.decision.next.paused) {
      targets[id] = p.decision.next.condition.reason;
      continue;
    }
    auto h = p.holds.find(id);
    if (h == p.holds.end()) continue;
    for (const auto& uuid : h->second.held.devices) {
      if (paused_gpu_uuids.count(uuid)) targets[id] = DescribeOwnerCommand(*p.command);
    }
  }
  return targets;
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

void Agent::PauseLoop() {
  PauseWatch w;
  while (!stopping_) {
    PausePoll p;
    {
      MutexLock lock(&mu_);
      p.policy = owner_.pause;
      p.holds = holds_;
      p.devices = last_devices_;
      for (const auto& [id, h] : holds_) p.held.insert(h.held.devices.begin(), h.held.devices.end());
    }
    p.active = ActiveAttempts();
    for (const auto& id : p.active) p.containers.push_back(ContainerName(id));
    p.now = config_.clock->NowMs();
    p.command = ReadOwnerCommand(config_.data_dir, p.now, &w.command_error);
    FollowOwnerCommand(p, &w);
    const std::optional<PauseCondition> condition = ObservePauseCondition(p, config_.nvml_library, runtime_.get(), &w);
    p.now = config_.clock->NowMs();
    p.decision = DecidePause(p.policy, w.state, condition, p.now);
    p.targets = PauseTargets(p);
    StopTargets(p, &w);
    ReleaseFrozen(p, &w);
    ReportPause(p, &w);
    w.state = p.decision.next;
    MutexLock lock(&mu_);
    cv_.WaitFor(&mu_, std::chrono::milliseconds(std::max(config_.pause_poll_ms, 50)), [&] { return stopping_.load(); });
  }
}

// A new or withdrawn `agent pause`: kept for the advertisement.
void Agent::FollowOwnerCommand(const PausePoll& p, PauseWatch* w) {
  const std::string text = p.command ? FormatOwnerCommand(*p.command) : "";
  if (text == w->last_command) return;
  if (p.command) spdlog::info("paused by its owner: {}", DescribeOwnerCommand(*p.command));
  {
    MutexLock lock(&mu_);
    owner_command_ = p.command;
  }
  w->last_command = text;
  RequestReadvertise();  // a per-GPU pause holds devices back
}

// Freezes the targets not frozen yet, or hands them back at once where the
// policy says so; hands back every target once the pause outlasted handBackAfter.
void Agent::StopTargets(const PausePoll& p, PauseWatch* w) {
  std::set<std::string> handed;
  for (const auto& [id, why] : p.targets) {
    if (w->frozen.count(id)) continue;
    auto h = p.holds.find(id);
    const bool holds_gpu = h != p.holds.end() && !h->second.held.devices.empty();
    const bool checkpoint = h != p.holds.end() && h->second.checkpoint;
    if (ActionForAttempt(p.policy, holds_gpu, checkpoint) == PauseAction::kHandBack) {
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
      w->frozen.insert(id);
      spdlog::info("attempt {} frozen: {}", id, why);
    } else if (st.code() != Code::kNotFound) {
      spdlog::warn("attempt {} not frozen: {}", id, st.message());
    }
  }
  if (!p.decision.hand_back) return;
  // The node's pause outlasted handBackAfter: all its attempts go, frozen
  // or not yet (a container that did not exist at the last poll).
  for (const auto& [id, why] : p.targets) {
    if (handed.count(id)) continue;
    spdlog::info("attempt {} handed back: paused by its owner for {} s", id, (p.now - p.decision.next.since_ms) / 1000);
    HandBack(id, "paused by its owner: " + why);
  }
}

// Thaws the frozen attempts that are no longer targets and forgets the ended ones.
void Agent::ReleaseFrozen(const PausePoll& p, PauseWatch* w) {
  for (auto it = w->frozen.begin(); it != w->frozen.end();) {
    if (p.targets.count(*it)) {
      ++it;
      continue;
    }
    Status st = runtime_->Thaw(ContainerName(*it));
    if (st.ok())
      spdlog::info("attempt {} resumed", *it);
    else if (st.code() != Code::kNotFound)
      spdlog::warn("attempt {} not thawed: {}", *it, st.message());
    it = w->frozen.erase(it);
  }
  // Ended attempts are no longer frozen (or waiting for their stop message).
  std::set<std::string> live(p.active.begin(), p.active.end());
  for (auto it = w->frozen.begin(); it != w->frozen.end();) it = live.count(*it) ? std::next(it) : w->frozen.erase(it);
  MutexLock lock(&mu_);
  for (auto it = stop_messages_.begin(); it != stop_messages_.end();) {
    it = attempts_.count(it->first) ? std::next(it) : stop_messages_.erase(it);
  }
}

// Tells the coordinator: the advertisement's accept_jobs follows the pause,
// the heartbeat carries its NodePause.
void Agent::ReportPause(const PausePoll& p, PauseWatch* w) {
  const PauseState& next = p.decision.next;
  const std::string reason = next.paused ? next.condition.reason : "";
  if (reason != w->last_reason) {
    if (next.paused && !w->state.paused) spdlog::info("paused by its owner: {}", reason);
    if (!next.paused) spdlog::info("owner's pause over; taking work again");
    {
      MutexLock lock(&mu_);
      owner_pause_reason_ = reason;
    }
    w->last_reason = reason;
    RequestReadvertise();  // accept_jobs follows the pause; the heartbeat carrying both goes at once
  }
  MutexLock lock(&hb_mu_);
  hb_.pause = DescribePause(next, w->frozen, p.now);
  if (next.paused && next.condition.cause == kOwnerCommandCause && p.command) {
    hb_.pause.set_until_ms(p.command->until_ms);
  }
}

}  // namespace idlegrid::agent
