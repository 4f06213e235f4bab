#include "agent/pause_observe.h"

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>

#include "common/fs.h"
#include "discovery/nvml_loader.h"
#include "runtime/subprocess.h"

namespace idlegrid::agent {

namespace {

constexpr std::chrono::milliseconds kLoginctlTimeout{2000};

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\0')) s.pop_back();
  return s;
}

std::string ProcessName(uint32_t pid) {
  Result<std::string> comm = ReadFile("/proc/" + std::to_string(pid) + "/comm");
  return comm.ok() ? Trim(*comm) : "";
}

void ObserveGpus(const PausePolicy& policy, const ObserveInputs& in, PauseObservation* out,
                 std::vector<std::string>* unknown) {
  const discovery::GpuLoadReading reading = discovery::ReadGpuLoad(in.nvml_library);
  if (!reading.available) {
    // No GPU is an answer, not an unknown: nothing of the owner's can be on one.
    if (reading.reason != "no device") unknown->push_back("GPUs: " + reading.reason);
    return;
  }
  std::set<int> own;
  bool own_read = false;
  const int self = static_cast<int>(::getpid());
  for (const auto& load : reading.devices) {
    GpuObservation g;
    g.index = load.device.index();
    g.live_known = true;
    g.temperature_c = load.device.temperature_c();
    g.power_draw_mw = load.device.power_draw_mw();
    g.utilization_pct = load.device.utilization_gpu_pct();
    g.throttle_reasons = load.device.throttle_reasons();
    g.held_by_agent = in.held_gpu_uuids.count(load.device.uuid()) > 0;
    g.processes_known = load.processes_known;
    if (!load.processes_known && policy.owner_gpu_processes) {
      unknown->push_back("GPU " + std::to_string(g.index) + " processes: " + load.processes_error);
    }
    for (const auto& p : load.processes) {
      if (!own_read && in.own_pids) {
        own = in.own_pids();
        own_read = true;
      }
      const int pid = static_cast<int>(p.pid);
      if (pid == self || own.count(pid)) continue;
      g.foreign_processes.push_back({p.pid, ProcessName(p.pid)});
    }
    out->gpus.push_back(std::move(g));
  }
}

std::optional<bool> ObserveUserIdle(std::vector<std::string>* unknown) {
  auto r = runtime::RunCommand({"loginctl", "show-user", std::to_string(::getuid()), "-p", "IdleHint", "--value"},
                               kLoginctlTimeout);
  if (!r.ok()) {
    unknown->push_back("userActive: loginctl: " + r.status().message());
    return std::nullopt;
  }
  std::optional<bool> idle = r->exit_code == 0 ? ParseIdleHint(r->stdout_text) : std::nullopt;
  if (!idle) unknown->push_back("userActive: loginctl says " + Trim(r->stderr_text + r->stdout_text));
  return idle;
}

// On battery: a battery discharging. A machine without one never is.
bool ObserveOnBattery() {
  const std::string root = "/sys/class/power_supply";
  DIR* dir = ::opendir(root.c_str());
  if (dir == nullptr) return false;
  bool discharging = false;
  while (struct dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const std::string base = root + "/" + e->d_name;
    Result<std::string> type = ReadFile(base + "/type");
    Result<std::string> status = ReadFile(base + "/status");
    if (type.ok() && Trim(*type) == "Battery" && status.ok() && Trim(*status) == "Discharging") discharging = true;
  }
  ::closedir(dir);
  return discharging;
}

int LocalMinuteOfDay(int64_t now_ms) {
  std::time_t now = now_ms > 0 ? static_cast<std::time_t>(now_ms / 1000) : std::time(nullptr);
  std::tm local{};
  if (::localtime_r(&now, &local) == nullptr) return -1;
  return local.tm_hour * 60 + local.tm_min;
}

}  // namespace

std::optional<bool> ParseIdleHint(const std::string& loginctl_output) {
  const std::string value = Trim(loginctl_output);
  if (value == "yes") return true;
  if (value == "no") return false;
  return std::nullopt;
}

std::vector<HostProcess> FindNamedProcesses(const std::vector<std::string>& names) {
  std::vector<HostProcess> out;
  if (names.empty()) return out;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return out;
  while (struct dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    const std::string base = "/proc/" + std::string(e->d_name);
    // comm is cut at 15 characters; argv[0]'s file name is whole (a game
    // under Wine or Proton shows as "Game.exe" there).
    std::string comm = ProcessName(static_cast<uint32_t>(pid));
    std::string argv0;
    if (Result<std::string> cmdline = ReadFile(base + "/cmdline"); cmdline.ok()) {
      argv0 = cmdline->substr(0, cmdline->find('\0'));
      if (size_t slash = argv0.find_last_of("/\\"); slash != std::string::npos) argv0 = argv0.substr(slash + 1);
    }
    for (const auto& name : names) {
      if (name == comm || name == argv0) {
        out.push_back({static_cast<uint32_t>(pid), name});
        break;
      }
    }
  }
  ::closedir(dir);
  return out;
}

PauseObservation ObserveHost(const PausePolicy& policy, const ObserveInputs& in, std::vector<std::string>* unknown) {
  PauseObservation out;
  const bool gpus = policy.owner_gpu_processes || policy.owner_gpu_utilization_above >= 0 ||
                    policy.max_gpu_temp_c > 0 || policy.max_gpu_power_w > 0;
  if (gpus) ObserveGpus(policy, in, &out, unknown);
  out.named_processes = FindNamedProcesses(policy.processes);
  if (policy.user_active) out.user_idle = ObserveUserIdle(unknown);
  if (policy.on_battery) out.on_battery = ObserveOnBattery();
  if (!policy.hours.empty()) out.minute_of_day = LocalMinuteOfDay(in.now_ms);
  return out;
}

}  // namespace idlegrid::agent
