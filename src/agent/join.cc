#include "agent/join.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "agent/join_plan.h"
#include "common/coordinator_target.h"
#include "common/exit_code.h"
#include "common/fs.h"
#include "discovery/nvml_loader.h"
#include "runtime/admission.h"
#include "runtime/enforcement_probe.h"
#include "runtime/subprocess.h"

extern char** environ;

namespace idlegrid::agent {

namespace {

std::map<std::string, std::string> Environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

bool OnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0) return true;
  }
  return false;
}

// A systemd user manager answers only where systemd is PID 1 (sd_booted()'s
// test) and this user's manager runs (its bus socket exists).
bool SystemdBooted() { return PathExists("/run/systemd/system"); }

runtime::CommandOutput Run(const std::vector<std::string>& argv, int timeout_s = 60) {
  auto out = runtime::RunCommand(argv, std::chrono::seconds(timeout_s));
  if (out.ok()) return *out;
  return runtime::CommandOutput{-1, "", out.status().message()};
}

HostFacts GatherFacts() {
  HostFacts f;
  f.uid = ::geteuid();
  struct passwd* pw = ::getpwuid(f.uid);
  f.user = pw != nullptr ? pw->pw_name : std::to_string(f.uid);
  auto subuid = ReadFile("/etc/subuid");
  auto subgid = ReadFile("/etc/subgid");
  if (subuid.ok()) f.subuid_text = *subuid;
  if (subgid.ok()) f.subgid_text = *subgid;
  f.has_podman = OnPath("podman");
  f.has_newuidmap = OnPath("newuidmap") && OnPath("newgidmap");
  f.runtimes = runtime::ProbeRuntimes();
  f.enforcement = runtime::ProbeEnforcement();
  // As the podman driver decides it: what the agent will advertise.
  f.enforcement.set_runsc_unavailable(runtime::RunscUnavailable(f.enforcement, f.runtimes));
  if (f.has_podman) {
    // The real test: podman sets up this user's namespace with the ids above.
    auto info = Run({"podman", "info", "--format", "{{.Host.Security.Rootless}}"}, 120);
    f.podman_works = info.exit_code == 0;
    f.podman_error = runtime::Trimmed(runtime::Tail(info.stderr_text, 400));
  }
  return f;
}

// NVIDIA (vendor 0x10de) display controllers (PCI class 0x03xx: VGA and 3D)
// in sysfs: there with or without a driver.
int CountNvidiaPciDevices(const std::string& devices_dir) {
  std::error_code ec;
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(devices_dir, ec)) {
    auto vendor = ReadFile(entry.path().string() + "/vendor");
    auto device_class = ReadFile(entry.path().string() + "/class");
    if (vendor.ok() && device_class.ok() && vendor->starts_with("0x10de") && device_class->starts_with("0x03")) {
      ++count;
    }
  }
  return count;
}

void PrintGpuChecks(const std::vector<GpuCheck>& checks) {
  for (const GpuCheck& c : checks) {
    if (c.outcome == GpuCheck::kFix) {
      std::printf("note:    %s\n    fix: %s\n", c.what.c_str(), c.fix.c_str());
    } else {
      std::printf("%s %s\n", c.outcome == GpuCheck::kPass ? "gpu ok: " : "gpu:    ", c.what.c_str());
    }
  }
}

void PrintFindings(const std::vector<Finding>& findings) {
  if (findings.empty()) {
    std::printf("host check: rootless podman, subordinate ids, runc, runsc and cgroup limits are all in order\n");
    return;
  }
  for (const Finding& f : findings) {
    std::printf("%s %s\n    fix: %s\n", f.blocking ? "PROBLEM:" : "note:   ", f.what.c_str(), f.fix.c_str());
  }
}

std::string SelfBinary() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "idlegrid" : self.string();
}

std::string ByHand(const std::string& binary, const std::string& config_file) {
  return binary + " agent --config " + config_file;
}

// Enables lingering (so the user manager, and the agent, start at boot and
// outlive logouts), then enables and starts the unit. Prints each outcome.
int StartUnit(const std::string& user, const std::string& by_hand) {
  auto linger = Run({"loginctl", "enable-linger", user});
  if (linger.exit_code == 0) {
    std::printf("lingering enabled for %s: the agent starts at boot and survives logouts\n", user.c_str());
  } else {
    std::printf(
        "note:    lingering could not be enabled (%s)\n    fix: sudo loginctl enable-linger %s "
        "(without it the agent stops when %s logs out)\n",
        runtime::Trimmed(linger.stderr_text).c_str(), user.c_str(), user.c_str());
  }
  auto reload = Run({"systemctl", "--user", "daemon-reload"});
  auto enable = reload.exit_code == 0 ? Run({"systemctl", "--user", "enable", "--now", kAgentUnitName}) : reload;
  if (enable.exit_code != 0) {
    std::fprintf(stderr,
                 "error: systemctl --user could not start %s: %s\n"
                 "  the files are in place; once your user manager runs (log in, or enable lingering), run:\n"
                 "    systemctl --user enable --now %s\n  or run the agent by hand:\n    %s\n",
                 kAgentUnitName, runtime::Trimmed(enable.stderr_text).c_str(), kAgentUnitName, by_hand.c_str());
    return 1;
  }
  std::printf("started %s (systemctl --user status %s; journalctl --user -u %s)\n", kAgentUnitName, kAgentUnitName,
              kAgentUnitName);
  return 0;
}

// Checks the host and prints what it found: the exit code to stop with, or
// nullopt to go on.
std::optional<int> CheckJoinHost(const JoinOptions& o, HostFacts* facts) {
  *facts = GatherFacts();
  if (facts->uid == 0) {
    std::fprintf(stderr,
                 "error: run agent join as the unprivileged user who lends the machine, not as root "
                 "(jobs run in that user's rootless containers)\n");
    return 2;
  }
  std::vector<Finding> findings = CheckHost(*facts);
  PrintFindings(findings);
  // The GPU chain never blocks the join: a node whose GPUs cannot be used yet offers its CPUs.
  GpuChainSources gpu_sources;
  gpu_sources.nvml_library = o.agent.nvml_library;
  gpu_sources.extra_cdi_specs = o.agent.cdi_specs;
  gpu_sources.agent_cdi_paths = o.agent.cdi_specs;
  PrintGpuChecks(CheckGpuChain(ReadGpuChainFacts(gpu_sources)));
  const bool blocked = !findings.empty() && findings.front().blocking;
  if (blocked && !o.ignore_checks) {
    std::fprintf(stderr,
                 "error: this host cannot run jobs yet: fix the PROBLEM lines above, then run the same "
                 "command again (nothing was written)\n");
    return 1;
  }
  return std::nullopt;
}

// Makes the agent's directories and enrolls with config.coordinator: the exit
// code to stop with, or nullopt once joined (said).
std::optional<int> EnrollNode(const AgentConfig& config, const AgentPaths& paths) {
  for (const std::string& dir : {paths.config_dir, paths.data_dir, paths.unit_dir}) {
    if (Status st = MakeDirs(dir, 0700); !st.ok()) return std::fprintf(stderr, "error: %s\n", st.message().c_str()), 1;
  }
  Result<std::string> node_id = [&] {
    Agent enrolling(config);
    return enrolling.EnrollOnly();
  }();
  if (!node_id.ok()) {
    std::fprintf(stderr, "error: enrolling with %s: %s\n", config.coordinator.c_str(),
                 node_id.status().message().c_str());
    return ExitCodeFor(node_id.status());
  }
  std::printf("joined %s as node %s; CA pinned in %s/coordinator-ca.crt\n", config.coordinator.c_str(),
              node_id->c_str(), paths.data_dir.c_str());
  return std::nullopt;
}

// The agent's config and user unit, and the client config with --api-token
// unless one exists already.
Status WriteAgentFiles(const JoinOptions& o, const AgentConfig& config, const AgentPaths& paths,
                       const std::string& binary) {
  Status st = WriteFileAtomic(paths.config_file, RenderAgentConfig(config), 0600);
  if (st.ok()) st = WriteFileAtomic(paths.unit_file, RenderUserUnit(binary, paths.config_file, o.grace_seconds));
  if (!st.ok() || o.api_token.empty()) return st;
  if (PathExists(paths.client_config_file)) {
    std::printf("note:    %s exists: left as is (the --api-token was not saved)\n", paths.client_config_file.c_str());
    return st;
  }
  return WriteFileAtomic(paths.client_config_file,
                         "# written by idlegrid agent join: this provider's API token, keep private\n"
                         "address: " +
                             config.coordinator + "\nca_file: " + paths.data_dir +
                             "/coordinator-ca.crt\n"
                             "token: " +
                             o.api_token + "\n",
                         0600);
}

// Starts the unit where it can, else says how to start the agent.
int StartAgent(const JoinOptions& o, const std::string& user, const std::string& by_hand) {
  if (o.no_start) {
    std::printf("not started (--no-start): systemctl --user enable --now %s, or by hand: %s\n", kAgentUnitName,
                by_hand.c_str());
    return 0;
  }
  if (!SystemdBooted()) {
    std::printf(
        "no systemd here (PID 1 is not systemd), so the unit cannot be started and will not run at boot.\n"
        "run the agent by hand (or from your init system):\n    %s\n",
        by_hand.c_str());
    return 0;
  }
  return StartUnit(user, by_hand);
}

}  // namespace

GpuChainFacts ReadGpuChainFacts(const GpuChainSources& sources) {
  GpuChainFacts f;
  f.nvml_library = sources.nvml_library;
  f.nvidia_pci_devices = CountNvidiaPciDevices(sources.pci_devices_dir);
  const v1::GpuDiscovery gpus = discovery::DiscoverNvidiaGpus(sources.nvml_library, sources.cuda_library);
  f.nvml_detail = gpus.reason();
  if (gpus.available()) {
    f.nvml = NvmlState::kReady;
  } else if (gpus.reason() == "no device") {
    f.nvml = NvmlState::kNoDevice;
  } else if (gpus.reason().starts_with("library absent")) {
    f.nvml = NvmlState::kAbsent;
  } else {
    f.nvml = NvmlState::kDriverError;
  }
  for (const v1::GpuDevice& d : gpus.devices()) {
    f.gpus.push_back({d.index(), d.uuid(), d.name()});
    if (f.driver_version.empty()) f.driver_version = d.driver_version();
    if (f.cuda_driver_version.empty()) f.cuda_driver_version = d.cuda_driver_version();
  }
  f.cdi_dirs = sources.cdi_dirs;
  f.agent_cdi_paths = sources.agent_cdi_paths.empty() ? AttemptEnv{}.cdi_spec_paths : sources.agent_cdi_paths;
  std::vector<std::string> files;
  for (const std::string& dir : sources.cdi_dirs) {
    std::error_code ec;
    std::vector<std::string> found;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      const std::string ext = entry.path().extension().string();
      if (entry.is_regular_file(ec) && (ext == ".yaml" || ext == ".json")) found.push_back(entry.path().string());
    }
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  std::vector<std::string> named = sources.extra_cdi_specs;
  named.insert(named.end(), f.agent_cdi_paths.begin(), f.agent_cdi_paths.end());
  for (const std::string& p : named) {
    if (PathExists(p)) files.push_back(p);
  }
  std::set<std::string> seen;  // by canonical path: /var/run/cdi/x and /run/cdi/x are one file
  for (const std::string& path : files) {
    std::error_code ec;
    auto canonical = std::filesystem::weakly_canonical(path, ec);
    if (!seen.insert(ec ? path : canonical.string()).second) continue;
    auto text = ReadFile(path);
    if (text.ok()) {
      CdiSpec spec = ParseCdiSpec(*text, path);
      for (const std::string& host : spec.host_paths) {
        if (!PathExists(host)) spec.missing_host_paths.push_back(host);
      }
      f.cdi_specs.push_back(std::move(spec));
    } else {
      f.cdi_specs.push_back({path, "", {}, text.status().message(), {}, {}});
    }
  }
  return f;
}

Result<std::string> DefaultAgentConfigFile() {
  IG_ASSIGN_OR_RETURN(AgentPaths paths, AgentPathsFromEnv(Environment()));
  return paths.config_file;
}

Status LoadAgentConfigFile(const std::string& path, const std::set<std::string>& given, AgentConfig* config) {
  IG_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ApplyAgentConfig(text, given, config).WithContext(path);
}

Result<std::string> EnrolledNodeId(const std::string& data_dir) {
  auto creds = ReadFile(data_dir + "/credentials");
  if (!creds.ok()) return Status::NotFound("no node credential in " + data_dir + ": this agent has not joined yet");
  std::string id = creds->substr(0, creds->find('\n'));
  if (id.empty()) return Status::NotFound(data_dir + "/credentials names no node");
  return id;
}

std::string UserUnitState() {
  if (!SystemdBooted()) return "no systemd user manager on this host (PID 1 is not systemd): run the agent by hand";
  auto active = Run({"systemctl", "--user", "is-active", kAgentUnitName}, 10);
  std::string state = runtime::Trimmed(active.stdout_text);
  if (state.empty()) return "unknown (" + runtime::Trimmed(active.stderr_text) + ")";
  return state + " (" + std::string(kAgentUnitName) + ")";
}

int RunJoin(const JoinOptions& o) {
  // One URL, or several (a,b: coordinators sharing one database) to fail over between.
  Result<std::string> address = std::string();
  for (const std::string& url : SplitCoordinators(o.url)) {
    auto one = CoordinatorAddressFromUrl(url);
    if (!one.ok()) return std::fprintf(stderr, "error: %s\n", one.status().message().c_str()), 2;
    *address += (address->empty() ? "" : ",") + *one;
  }
  if (address->empty()) return std::fprintf(stderr, "error: agent join needs the coordinator's URL\n"), 2;
  if (o.join_token.empty() || o.ca_hash.empty()) {
    std::fprintf(stderr,
                 "error: agent join needs --token igj_... and --ca-hash sha256:... (the coordinator prints "
                 "both; its operator finds them in DATA_DIR/agent-join.txt or mints a token with "
                 "`idlegrid join-token create`)\n");
    return 2;
  }
  auto paths = AgentPathsFromEnv(Environment());
  if (!paths.ok()) return std::fprintf(stderr, "error: %s\n", paths.status().message().c_str()), 2;

  HostFacts facts;
  if (std::optional<int> stop = CheckJoinHost(o, &facts)) return *stop;

  AgentConfig config = o.agent;
  config.coordinator = *address;
  config.data_dir = paths->data_dir;
  config.join_token = o.join_token;
  config.ca_hash = o.ca_hash;
  if (std::optional<int> stop = EnrollNode(config, *paths)) return *stop;

  const std::string binary = SelfBinary();
  if (Status st = WriteAgentFiles(o, config, *paths, binary); !st.ok()) {
    return std::fprintf(stderr, "error: %s\n", st.message().c_str()), 1;
  }
  std::printf("config %s\nunit   %s\n", paths->config_file.c_str(), paths->unit_file.c_str());
  return StartAgent(o, facts.user, ByHand(binary, paths->config_file));
}

}  // namespace idlegrid::agent
