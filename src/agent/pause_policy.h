#pragma once
// Owner-first scheduling on the node (docs/provider.md, "When the owner needs
// the machine"): when the owner's policy says the machine is theirs now — a
// game on the GPU, a named program, the owner at the keyboard, on battery,
// certain hours, a GPU too hot or drawing too much — the agent freezes the
// jobs it runs, and hands them back if the pause lasts. This is the pure
// part: what the policy says, what the watcher saw, and the decision. The
// shell (pause_watcher.h) gathers observations and carries decisions out.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace idlegrid::agent {

// Minutes since local midnight, [start, end); a window whose end is not after
// its start wraps midnight ("22:00-07:00").
struct HoursWindow {
  int start_minute = 0;
  int end_minute = 0;
};

// Parses "HH:MM-HH:MM" (24 h clock). InvalidArgument naming what is wrong.
Result<HoursWindow> ParseHoursWindow(const std::string& text);
bool InWindow(const HoursWindow& window, int minute_of_day);

enum class PauseAction {
  kFreeze,    // freeze the jobs; hand them back after hand_back_after_ms
  kHandBack,  // checkpoint and hand them back at once
};

// Xorg, Xwayland, gnome-shell, kwin_wayland, ...: what ownerGpu ignores by default.
std::vector<std::string> DefaultOwnerGpuIgnore();

struct PausePolicy {
  // pauseWhen:
  bool owner_gpu_processes = false;      // ownerGpu.processes: a GPU process not the agent's
  int owner_gpu_utilization_above = -1;  // ownerGpu.utilizationAbove: percent; < 0 off
  std::vector<std::string> processes;    // processes: names of the owner's programs (games)
  bool user_active = false;              // userActive: logind says the user is not idle
  bool on_battery = false;               // onBattery
  std::vector<HoursWindow> hours;        // hours: windows when the node is the owner's
  int64_t resume_after_ms = 30'000;      // resumeAfter: clear this long before resuming
  PauseAction action = PauseAction::kFreeze;
  int64_t hand_back_after_ms = 600'000;  // handBackAfter: a freeze longer than this hands back
  // gpuJobs: a job holding a GPU that has a checkpoint directory is handed
  // back at once when the pause begins (a frozen job keeps its VRAM, which the
  // owner's game wants); kFreeze treats it like any other job.
  PauseAction gpu_jobs = PauseAction::kHandBack;
  // ownerGpu ignores these programs on the GPU: display servers and
  // compositors hold a context on the card all the time and say nothing of
  // a game. ownerGpu.ignoreProcesses adds to the list.
  std::vector<std::string> owner_gpu_ignore = DefaultOwnerGpuIgnore();
  // Limits (top-level keys maxGpuTemp, maxGpuPower); 0: none.
  uint32_t max_gpu_temp_c = 0;
  uint32_t max_gpu_power_w = 0;

  // Whether anything at all can pause the node (else the watcher idles).
  bool Enabled() const;
};

// One GPU as the watcher saw it.
struct GpuObservation {
  uint32_t index = 0;
  bool live_known = false;  // temperature, power, utilisation and throttle read
  uint32_t temperature_c = 0;
  uint32_t power_draw_mw = 0;
  uint32_t utilization_pct = 0;
  uint64_t throttle_reasons = 0;
  // Whether one of the agent's attempts holds the device: its utilisation is
  // then (partly) the job's own and says nothing of the owner.
  bool held_by_agent = false;
  bool processes_known = false;
  // Processes on the device that are not the agent's (nor its jobs').
  struct Process {
    uint32_t pid = 0;
    std::string name;
  };
  std::vector<Process> foreign_processes;
};

struct HostProcess {
  uint32_t pid = 0;
  std::string name;
};

// What the watcher saw at one poll. Unknowns stay unknown: a condition that
// cannot be observed never pauses (the shell logs why once).
struct PauseObservation {
  std::vector<GpuObservation> gpus;
  std::vector<HostProcess> named_processes;  // running processes whose name the policy lists
  std::optional<bool> user_idle;             // logind IdleHint
  std::optional<bool> on_battery;
  int minute_of_day = -1;  // local time; < 0 unknown
};

// Why the node is the owner's now.
struct PauseCondition {
  std::string cause;   // as NodePause.cause: owner-gpu, owner-process, user-active, battery, hours, thermal, power
  std::string reason;  // for people: "process steam (pid 4242) uses GPU 0"
  uint64_t throttle_reasons = 0;  // the device's, for thermal and power
};

// The first condition the policy finds in the observation, in a fixed order
// (thermal, power, owner GPU, processes, user, battery, hours), or nullopt.
std::optional<PauseCondition> FindPauseCondition(const PausePolicy& policy, const PauseObservation& seen);

// The pause as it stands between polls.
struct PauseState {
  bool paused = false;
  PauseCondition condition;     // while paused: the latest condition seen
  int64_t since_ms = 0;         // while paused: when it began
  int64_t clear_since_ms = 0;   // while paused: when the condition last cleared (0: it holds)
  bool handed_back = false;     // this pause's attempts were handed back
  uint32_t pauses = 0;          // since the agent started
  int64_t paused_ms_total = 0;  // ended pauses' lengths
};

struct PauseDecision {
  PauseState next;
  bool freeze = false;     // the pause begins: freeze the running attempts
  bool thaw = false;       // the pause ends: thaw the frozen ones
  bool hand_back = false;  // checkpoint and hand back the frozen attempts now
};

// The next state from the previous one and this poll's condition at `now_ms`.
// A pause begins at once; it ends only after the condition has been clear
// for resume_after_ms (hysteresis: a game's loading screen, a flickering
// sensor), except one the owner commanded, which ends when they resume. The hand back comes once per pause, when it has
// lasted hand_back_after_ms (at once for action kHandBack).
PauseDecision DecidePause(const PausePolicy& policy, const PauseState& previous,
                          const std::optional<PauseCondition>& condition, int64_t now_ms);

// How the pause treats one running attempt: hand it back at once (a GPU job
// with a checkpoint directory, unless gpuJobs: freeze), else the policy's
// action. Pure.
PauseAction ActionForAttempt(const PausePolicy& policy, bool holds_gpu, bool has_checkpoint);

// The cause of a pause the owner asked for (`idlegrid agent pause`): it ends
// when they resume, with no resumeAfter wait.
inline constexpr const char* kOwnerCommandCause = "owner-command";

// NVML's throttle-reason bits in words: "hw-thermal, sw-power-cap".
std::string DescribeThrottleReasons(uint64_t reasons);

}  // namespace idlegrid::agent
