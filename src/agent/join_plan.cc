#include "agent/join_plan.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <sstream>

namespace idlegrid::agent {

namespace {

constexpr char kDefaultGrpcPort[] = "7443";
// Container images commonly hold uids up to 65535 (nobody is 65534): a
// smaller range makes their layers fail to unpack.
constexpr uint64_t kWantedSubordinateIds = 65536;

std::string Get(const std::map<std::string, std::string>& env, const std::string& key) {
  auto it = env.find(key);
  return it == env.end() ? "" : it->second;
}

bool Absolute(const std::string& p) { return !p.empty() && p[0] == '/'; }

// YAML double-quoted scalar: paths and names may hold ':' or '#'.
std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

// systemd splits ExecStart on spaces and expands '%' and '$': quote each word.
// A leading "%h/" stays a specifier: the packaged unit names the user's home so.
std::string UnitWord(const std::string& s) {
  std::string out;
  bool plain = !s.empty();
  const bool home = s.rfind("%h/", 0) == 0;
  if (home) out = "%h";
  for (char ch : home ? s.substr(2) : s) {
    if (ch == '%')
      out += "%%";
    else if (ch == '$')
      out += "$$";
    else
      out += ch;
    if (ch == ' ' || ch == '"' || ch == '\\' || ch == '\'') plain = false;
  }
  if (plain) return out;
  std::string quoted = "\"";
  for (char ch : out) {
    if (ch == '"' || ch == '\\') quoted += '\\';
    quoted += ch;
  }
  return quoted + "\"";
}

}  // namespace

Result<std::string> CoordinatorAddressFromUrl(const std::string& url) {
  std::string rest = url;
  if (auto scheme = rest.find("://"); scheme != std::string::npos) {
    std::string name = rest.substr(0, scheme);
    if (name != "https" && name != "grpcs") {
      return Status::InvalidArgument("coordinator URL " + url + ": the scheme must be https:// (gRPC over TLS)");
    }
    rest = rest.substr(scheme + 3);
  }
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.find('/') != std::string::npos) {
    return Status::InvalidArgument("coordinator URL " + url + ": give host:port only, without a path");
  }
  if (rest.empty() || rest[0] == ':') return Status::InvalidArgument("coordinator URL " + url + " names no host");
  if (rest[0] == '[') {  // [v6] or [v6]:port
    auto close = rest.find(']');
    if (close == std::string::npos) return Status::InvalidArgument("coordinator URL " + url + ": unclosed '['");
    if (close + 1 == rest.size()) return rest + ":" + kDefaultGrpcPort;
    if (rest[close + 1] != ':' || close + 2 == rest.size()) {
      return Status::InvalidArgument("coordinator URL " + url + ": expected [IPv6]:port");
    }
    return rest;
  }
  auto colon = rest.find(':');
  if (colon == std::string::npos) return rest + ":" + kDefaultGrpcPort;
  std::string port = rest.substr(colon + 1);
  if (port.empty() || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return Status::InvalidArgument("coordinator URL " + url + ": the port must be a number");
  }
  return rest;
}

Result<AgentPaths> AgentPathsFromEnv(const std::map<std::string, std::string>& env) {
  const std::string home = Get(env, "HOME");
  std::string config_home = Get(env, "XDG_CONFIG_HOME");
  std::string data_home = Get(env, "XDG_DATA_HOME");
  if (!Absolute(config_home)) config_home = Absolute(home) ? home + "/.config" : "";
  if (!Absolute(data_home)) data_home = Absolute(home) ? home + "/.local/share" : "";
  if (config_home.empty() || data_home.empty()) {
    return Status::InvalidArgument(
        "HOME is not an absolute path (nor are XDG_CONFIG_HOME and XDG_DATA_HOME): "
        "run agent join as the user who will lend the machine, from a login shell");
  }
  AgentPaths p;
  p.config_dir = config_home + "/idlegrid";
  p.config_file = p.config_dir + "/agent.yaml";
  p.client_config_file = p.config_dir + "/config.yaml";
  p.data_dir = data_home + "/idlegrid/agent";
  p.unit_dir = config_home + "/systemd/user";
  p.unit_file = p.unit_dir + "/" + kAgentUnitName;
  return p;
}

std::string RenderAgentConfig(const AgentConfig& c) {
  std::ostringstream out;
  out << "# idlegrid agent settings, written by `idlegrid agent join` (docs/provider.md).\n"
      << "# Keys are the long flags of `idlegrid agent`; a flag on the command line wins.\n"
      << "coordinator: " << Quoted(c.coordinator) << "\n"
      << "data_dir: " << Quoted(c.data_dir) << "\n";
  if (!c.name.empty()) out << "name: " << Quoted(c.name) << "\n";
  if (c.cpus > 0) out << "cpus: " << c.cpus << "\n";
  if (c.memory_bytes > 0) out << "memory_mib: " << (c.memory_bytes >> 20) << "\n";
  out << "region: " << Quoted(c.region) << "\n"
      << "driver: " << Quoted(c.driver) << "\n"
      << "untrusted_runtime: " << Quoted(c.untrusted_runtime) << "\n";
  if (!c.policy_file.empty()) out << "policy: " << Quoted(c.policy_file) << "\n";
  if (!c.metrics_listen.empty()) out << "metrics_listen: " << Quoted(c.metrics_listen) << "\n";
  return out.str();
}

Status ApplyAgentConfig(const std::string& yaml_text, const std::set<std::string>& given, AgentConfig* c) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string("agent config: ") + e.what());
  }
  if (root.IsNull()) return Status::Ok();
  if (!root.IsMap()) return Status::InvalidArgument("agent config: expected a map of settings");
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>("");
    std::string flag = key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    if (given.count(flag) > 0) continue;
    try {
      const YAML::Node& v = kv.second;
      if (key == "coordinator")
        c->coordinator = v.as<std::string>();
      else if (key == "data_dir")
        c->data_dir = v.as<std::string>();
      else if (key == "name")
        c->name = v.as<std::string>();
      else if (key == "cpus")
        c->cpus = v.as<double>();
      else if (key == "memory_mib")
        c->memory_bytes = v.as<uint64_t>() << 20;
      else if (key == "region")
        c->region = v.as<std::string>();
      else if (key == "driver")
        c->driver = v.as<std::string>();
      else if (key == "untrusted_runtime")
        c->untrusted_runtime = v.as<std::string>();
      else if (key == "policy")
        c->policy_file = v.as<std::string>();
      else if (key == "metrics_listen")
        c->metrics_listen = v.as<std::string>();
      else
        return Status::InvalidArgument("agent config: unknown setting '" + key + "'");
    } catch (const YAML::Exception&) {
      return Status::InvalidArgument("agent config: '" + key + "' has a value of the wrong type");
    }
  }
  if (c->driver != "auto" && c->driver != "podman" && c->driver != "runc") {
    return Status::InvalidArgument("agent config: driver must be auto, podman or runc");
  }
  if (c->untrusted_runtime != "runsc" && c->untrusted_runtime != "runc") {
    return Status::InvalidArgument("agent config: untrusted_runtime must be runsc or runc");
  }
  return Status::Ok();
}

std::string RenderUserUnit(const std::string& binary, const std::string& config_file, int grace_seconds) {
  std::ostringstream out;
  out << "# Written by `idlegrid agent join` (docs/provider.md). Runs the agent as this user;\n"
      << "# with lingering enabled it starts at boot, before anyone logs in.\n"
      << "[Unit]\n"
      << "Description=idlegrid agent: lends this machine's idle CPUs and GPUs to a grid\n"
      << "Documentation=man:idlegrid-agent(1)\n"
      << "\n[Service]\n"
      << "Type=simple\n"
      << "ExecStart=" << UnitWord(binary) << " agent --config " << UnitWord(config_file) << " --shutdown-grace "
      << grace_seconds
      << "\n"
      // The agent drains on SIGTERM: only it gets the signal, not the
      // containers it supervises (they would die before being handed back).
      << "KillMode=mixed\n"
      << "TimeoutStopSec=" << grace_seconds + 30 << "\n"
      << "Restart=on-failure\n"
      << "RestartSec=10s\n"
      << "\n[Install]\n"
      << "WantedBy=default.target\n";
  return out.str();
}

std::vector<IdRange> SubordinateRanges(const std::string& file_text, const std::string& user, uid_t uid) {
  std::vector<IdRange> out;
  std::istringstream lines(file_text);
  std::string line;
  const std::string numeric = std::to_string(uid);
  while (std::getline(lines, line)) {
    auto a = line.find(':');
    auto b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::string who = line.substr(0, a);
    if (who != user && who != numeric) continue;
    try {
      IdRange r{std::stoull(line.substr(a + 1, b - a - 1)), std::stoull(line.substr(b + 1))};
      if (r.count > 0) out.push_back(r);
    } catch (const std::exception&) {
      continue;  // malformed: newuidmap skips it too
    }
  }
  return out;
}

uint64_t FreeSubordinateStart(const std::string& file_text) {
  uint64_t start = 100000;
  std::istringstream lines(file_text);
  std::string line;
  while (std::getline(lines, line)) {
    auto a = line.find(':');
    auto b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    try {
      uint64_t end = std::stoull(line.substr(a + 1, b - a - 1)) + std::stoull(line.substr(b + 1));
      start = std::max(start, end);
    } catch (const std::exception&) {
      continue;
    }
  }
  return start;
}

std::vector<Finding> CheckHost(const HostFacts& f) {
  std::vector<Finding> out;
  if (!f.has_podman) {
    out.push_back({true, "podman is not installed", "sudo apt-get install podman"});
  }
  if (!f.has_newuidmap) {
    out.push_back({true, "newuidmap/newgidmap are missing: rootless podman cannot map the container's users",
                   "sudo apt-get install uidmap"});
  }
  auto ids = [&](const std::string& text, const char* file, const char* flag) {
    uint64_t total = 0;
    for (const IdRange& r : SubordinateRanges(text, f.user, f.uid)) total += r.count;
    if (total >= kWantedSubordinateIds) return;
    const uint64_t start = FreeSubordinateStart(text);
    const std::string range = std::to_string(start) + "-" + std::to_string(start + kWantedSubordinateIds - 1);
    out.push_back({true,
                   std::string(file) + " gives " + f.user + " " + std::to_string(total) +
                       " subordinate ids; rootless containers need " + std::to_string(kWantedSubordinateIds),
                   std::string("sudo usermod ") + flag + " " + range + " " + f.user + " && podman system migrate"});
  };
  ids(f.subuid_text, "/etc/subuid", "--add-subuids");
  ids(f.subgid_text, "/etc/subgid", "--add-subgids");
  const bool runc = std::find(f.runtimes.begin(), f.runtimes.end(), "runc") != f.runtimes.end();
  const bool runsc = std::find(f.runtimes.begin(), f.runtimes.end(), "runsc") != f.runtimes.end();
  if (!runc) out.push_back({true, "runc is not installed: no job can start", "sudo apt-get install runc"});
  if (f.has_podman && !f.podman_works) {
    out.push_back({true, "rootless podman does not work for " + f.user + ": " + f.podman_error,
                   "run `podman info` as " + f.user +
                       " and fix what it reports (often: subordinate ids, then "
                       "`podman system migrate`)"});
  }
  const v1::Enforcement& e = f.enforcement;
  const bool v2 = e.cgroup_version() == "" || e.cgroup_version() == "v2";
  const std::string cgroup_v2 =
      "boot with cgroup v2: add systemd.unified_cgroup_hierarchy=1 to the kernel command line";
  const std::string delegate =
      "sudo mkdir -p /etc/systemd/system/user@.service.d && printf '[Service]\\nDelegate=cpu cpuset io memory "
      "pids\\n' | sudo tee /etc/systemd/system/user@.service.d/delegate.conf && sudo systemctl daemon-reload, "
      "then log out and in (or reboot)";
  if (!v2) {
    out.push_back({false,
                   "cgroup " + e.cgroup_version() +
                       ": rootless containers get no cgroup limits (memory, pids and "
                       "cpu fall back to rlimits or nothing)",
                   cgroup_v2});
  } else {
    std::vector<std::string> missing;
    if (e.memory() != "cgroup") missing.push_back("memory");
    if (e.pids() != "cgroup") missing.push_back("pids");
    if (e.cpu() != "cgroup") missing.push_back("cpu");
    if (!missing.empty()) {
      std::string list;
      for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
      out.push_back({false,
                     "the cgroup controllers " + list + " are not delegated to " + f.user +
                         ": those limits fall back to rlimits (cpu: none), and jobs needing them may be refused",
                     delegate});
    }
  }
  if (!runsc) {
    out.push_back({false,
                   "runsc (gVisor) is not installed: tenants' jobs run under runc, or are refused where "
                   "their policy asks for gVisor",
                   "sudo apt-get install runsc"});
  } else if (!e.runsc_unavailable().empty()) {
    out.push_back({false, "gVisor cannot run jobs here: " + e.runsc_unavailable(), v2 ? delegate : cgroup_v2});
  }
  std::stable_sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) { return a.blocking > b.blocking; });
  return out;
}

}  // namespace idlegrid::agent
