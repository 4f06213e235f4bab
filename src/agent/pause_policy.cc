#include "agent/pause_policy.h"

#include <algorithm>
#include <cstdio>

namespace idlegrid::agent {

namespace {

std::string Gpu(uint32_t index) { return "GPU " + std::to_string(index); }

std::optional<PauseCondition> Thermal(const PausePolicy& policy, const PauseObservation& seen) {
  for (const auto& g : seen.gpus) {
    if (policy.max_gpu_temp_c > 0 && g.live_known && g.temperature_c > policy.max_gpu_temp_c) {
      std::string reason = Gpu(g.index) + " at " + std::to_string(g.temperature_c) + " C, maxGpuTemp " +
                           std::to_string(policy.max_gpu_temp_c);
      if (g.throttle_reasons != 0) reason += "; throttled: " + DescribeThrottleReasons(g.throttle_reasons);
      return PauseCondition{"thermal", reason, g.throttle_reasons};
    }
  }
  return std::nullopt;
}

std::optional<PauseCondition> Power(const PausePolicy& policy, const PauseObservation& seen) {
  for (const auto& g : seen.gpus) {
    if (policy.max_gpu_power_w > 0 && g.live_known && g.power_draw_mw > uint64_t{policy.max_gpu_power_w} * 1000) {
      std::string reason = Gpu(g.index) + " draws " + std::to_string(g.power_draw_mw / 1000) + " W, maxGpuPower " +
                           std::to_string(policy.max_gpu_power_w) + " W";
      if (g.throttle_reasons != 0) reason += "; throttled: " + DescribeThrottleReasons(g.throttle_reasons);
      return PauseCondition{"power", reason, g.throttle_reasons};
    }
  }
  return std::nullopt;
}

bool Ignored(const PausePolicy& policy, const std::string& name) {
  return std::find(policy.owner_gpu_ignore.begin(), policy.owner_gpu_ignore.end(), name) !=
         policy.owner_gpu_ignore.end();
}

std::optional<PauseCondition> OwnerGpu(const PausePolicy& policy, const PauseObservation& seen) {
  for (const auto& g : seen.gpus) {
    const GpuObservation::Process* owner = nullptr;
    for (const auto& p : g.foreign_processes) {
      if (!Ignored(policy, p.name)) {
        owner = &p;
        break;
      }
    }
    if (policy.owner_gpu_processes && g.processes_known && owner != nullptr) {
      const auto& p = *owner;
      std::string reason = "process " + (p.name.empty() ? std::string("?") : p.name) + " (pid " +
                           std::to_string(p.pid) + ") uses " + Gpu(g.index);
      return PauseCondition{"owner-gpu", reason, 0};
    }
    // A device a job holds is busy with the job: its utilisation is no sign of the owner.
    if (policy.owner_gpu_utilization_above >= 0 && g.live_known && !g.held_by_agent &&
        g.utilization_pct > static_cast<uint32_t>(policy.owner_gpu_utilization_above)) {
      return PauseCondition{"owner-gpu",
                            Gpu(g.index) + " " + std::to_string(g.utilization_pct) + "% busy, utilizationAbove " +
                                std::to_string(policy.owner_gpu_utilization_above),
                            0};
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> DefaultOwnerGpuIgnore() {
  // As /proc/PID/comm names them (cut at 15 characters).
  return {"Xorg",        "X",      "Xwayland", "gnome-shell", "kwin_wayland", "kwin_x11", "kwin",
          "plasmashell", "mutter", "weston",   "sway",        "Hyprland",     "cinnamon", "muffin",
          "xfwm4",       "marco",  "compiz",   "picom",       "labwc",        "wayfire",  "enlightenment"};
}

PauseAction ActionForAttempt(const PausePolicy& policy, bool holds_gpu, bool has_checkpoint) {
  if (holds_gpu && has_checkpoint && policy.gpu_jobs == PauseAction::kHandBack) return PauseAction::kHandBack;
  return policy.action;
}

bool PausePolicy::Enabled() const {
  return owner_gpu_processes || owner_gpu_utilization_above >= 0 || !processes.empty() || user_active || on_battery ||
         !hours.empty() || max_gpu_temp_c > 0 || max_gpu_power_w > 0;
}

Result<HoursWindow> ParseHoursWindow(const std::string& text) {
  int h1 = 0, m1 = 0, h2 = 0, m2 = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%2d:%2d-%2d:%2d%c", &h1, &m1, &h2, &m2, &tail) != 4) {
    return Status::InvalidArgument("\"" + text + "\" is not a window such as \"22:00-07:00\"");
  }
  // 24:00 may end a window (until midnight).
  if (h1 < 0 || h1 > 23 || h2 < 0 || h2 > 24 || m1 < 0 || m1 > 59 || m2 < 0 || m2 > 59 || (h2 == 24 && m2 != 0)) {
    return Status::InvalidArgument("\"" + text + "\": hours are 00-23 and minutes 00-59");
  }
  HoursWindow w{h1 * 60 + m1, h2 * 60 + m2};
  if (w.start_minute == w.end_minute) {
    return Status::InvalidArgument("\"" + text + "\" is empty (start and end are the same)");
  }
  return w;
}

bool InWindow(const HoursWindow& window, int minute_of_day) {
  if (window.start_minute < window.end_minute) {
    return minute_of_day >= window.start_minute && minute_of_day < window.end_minute;
  }
  return minute_of_day >= window.start_minute || minute_of_day < window.end_minute;
}

std::optional<PauseCondition> FindPauseCondition(const PausePolicy& policy, const PauseObservation& seen) {
  // Hardware limits first: they protect the machine, and carry throttle reasons.
  if (auto c = Thermal(policy, seen)) return c;
  if (auto c = Power(policy, seen)) return c;
  if (auto c = OwnerGpu(policy, seen)) return c;
  if (!policy.processes.empty() && !seen.named_processes.empty()) {
    const auto& p = seen.named_processes.front();
    return PauseCondition{"owner-process", "process " + p.name + " (pid " + std::to_string(p.pid) + ") is running", 0};
  }
  if (policy.user_active && seen.user_idle.has_value() && !*seen.user_idle) {
    return PauseCondition{"user-active", "the owner is using the machine (logind: not idle)", 0};
  }
  if (policy.on_battery && seen.on_battery.value_or(false)) {
    return PauseCondition{"battery", "the machine runs on battery", 0};
  }
  if (seen.minute_of_day >= 0) {
    for (const auto& w : policy.hours) {
      if (InWindow(w, seen.minute_of_day)) {
        char text[64];
        std::snprintf(text, sizeof text, "owner's hours %02d:%02d-%02d:%02d", w.start_minute / 60, w.start_minute % 60,
                      w.end_minute / 60, w.end_minute % 60);
        return PauseCondition{"hours", text, 0};
      }
    }
  }
  return std::nullopt;
}

PauseDecision DecidePause(const PausePolicy& policy, const PauseState& previous,
                          const std::optional<PauseCondition>& condition, int64_t now_ms) {
  PauseDecision d;
  PauseState& s = d.next;
  s = previous;
  if (condition) {
    if (!s.paused) {
      s.paused = true;
      s.since_ms = now_ms;
      s.handed_back = false;
      ++s.pauses;
      d.freeze = true;
    }
    s.condition = *condition;
    s.clear_since_ms = 0;
  } else if (s.paused) {
    if (s.clear_since_ms == 0) s.clear_since_ms = now_ms;
    const bool commanded = s.condition.cause == kOwnerCommandCause;
    if (commanded || now_ms - s.clear_since_ms >= policy.resume_after_ms) {
      s.paused_ms_total += now_ms - s.since_ms;
      s.paused = false;
      s.condition = {};
      s.since_ms = 0;
      s.clear_since_ms = 0;
      s.handed_back = false;
      d.thaw = true;
      return d;
    }
  }
  if (s.paused && !s.handed_back) {
    const int64_t grace = policy.action == PauseAction::kHandBack ? 0 : policy.hand_back_after_ms;
    if (now_ms - s.since_ms >= grace) {
      s.handed_back = true;
      d.hand_back = true;
    }
  }
  return d;
}

std::string DescribeThrottleReasons(uint64_t reasons) {
  static const struct {
    uint64_t bit;
    const char* name;
  } kNames[] = {{0x1, "gpu-idle"},    {0x2, "applications-clocks"}, {0x4, "sw-power-cap"},
                {0x8, "hw-slowdown"}, {0x10, "sync-boost"},         {0x20, "sw-thermal"},
                {0x40, "hw-thermal"}, {0x80, "hw-power-brake"},     {0x100, "display-clocks"}};
  std::string out;
  uint64_t rest = reasons;
  for (const auto& n : kNames) {
    if ((reasons & n.bit) == 0) continue;
    out += (out.empty() ? "" : ", ") + std::string(n.name);
    rest &= ~n.bit;
  }
  if (rest != 0) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(rest));
    out += (out.empty() ? "" : ", ") + std::string(hex);
  }
  return out.empty() ? "none" : out;
}

}  // namespace idlegrid::agent
