// `agent` and its subcommands: join, status, pause, resume, unit
// (docs/provider.md).
#include <google/protobuf/util/json_util.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/image_cache.h"
#include "agent/join.h"
#include "agent/join_plan.h"
#include "agent/local_policy.h"
#include "cli/agent_pause.h"
#include "cli/agent_status.h"
#include "cli/command_groups.h"
#include "cli/commands.h"
#include "cli/image_base.h"
#include "common/exit_code.h"
#include "common/fs.h"
#include "common/signal_drain.h"
#include "manifest/manifest.h"
#include "registry/allow_list.h"

namespace idlegrid::cli {
namespace {

// What the agent's flags are parsed into. One for the whole group: `agent
// --shutdown-grace` and `agent unit --shutdown-grace` set the same value, and
// pause and resume share --data-dir and --agent-config.
struct AgentFlags {
  idlegrid::agent::AgentConfig agent;
  bool discover = false;
  bool json = false;
  std::vector<std::string> registry_cas;
  int grace_seconds = 30;
  std::string config_file;
  idlegrid::agent::JoinOptions join;
  std::string status_agent_config;
  std::string pause_for, pause_data_dir, pause_agent_config;
  std::vector<std::string> pause_gpus;
  std::string unit_binary = "/usr/bin/idlegrid", unit_config = "%h/.config/idlegrid/agent.yaml";
};

int RunAgent(const idlegrid::agent::AgentConfig& config, bool discover, bool json, int grace_seconds) {
  idlegrid::agent::Agent agent(config);
  if (discover) {
    auto ad = agent.CurrentAdvertisement();
    if (!ad.ok()) {
      std::cerr << "error: " << ad.status().message() << "\n";
      return idlegrid::ExitCodeFor(ad.status());
    }
    if (json) {
      std::string out;
      google::protobuf::util::JsonPrintOptions opts;
      opts.add_whitespace = true;
      // Fails only for a message our own code cannot build (invalid UTF-8);
      // the output is then empty.
      (void)google::protobuf::util::MessageToJsonString(*ad, &out, opts);
      std::cout << out;
      return 0;
    }
    PrintAdvertisement(*ad);
    return 0;
  }
  // SIGTERM/SIGINT: stop taking work, kill running containers, exit. The
  // drain runs beside Run() and is joined before `agent` goes out of scope.
  return idlegrid::RunDrainingOnSignal([&] { return agent.Run(); },
                                       [&](int sig) {
                                         spdlog::info("signal {}: agent draining, then shutting down", sig);
                                         agent.GracefulShutdown(std::chrono::seconds(grace_seconds));
                                       });
}

// `agent status`: the node id and coordinator come from the agent's own
// config and data directory; the coordinator's view needs a provider token.
int AgentStatusCommand(CommonFlags common, std::string agent_config_file) {
  if (agent_config_file.empty()) {
    auto path = idlegrid::agent::DefaultAgentConfigFile();
    if (!path.ok()) return std::cerr << "error: " << path.status().message() << "\n", 2;
    agent_config_file = *path;
  }
  idlegrid::agent::AgentConfig agent;
  if (auto st = idlegrid::agent::LoadAgentConfigFile(agent_config_file, {}, &agent); !st.ok()) {
    std::cerr << "error: " << st.message() << " (has this user run `idlegrid agent join`?)\n";
    return idlegrid::ExitCodeFor(st);
  }
  auto node_id = idlegrid::agent::EnrolledNodeId(agent.data_dir);
  if (!node_id.ok()) return std::cerr << "error: " << node_id.status().message() << "\n", 1;
  if (common.config.address.empty()) common.config.address = agent.coordinator;
  if (common.config.ca_file.empty()) common.config.ca_file = agent.data_dir + "/coordinator-ca.crt";
  // The image cache as this host holds it, against the owner's budget.
  uint64_t budget = idlegrid::agent::kDefaultImageCacheBytes;
  const std::string policy_file = agent.policy_file.empty() ? agent.data_dir + "/policy.yaml" : agent.policy_file;
  if (auto text = idlegrid::ReadFile(policy_file); text.ok()) {
    auto policy = idlegrid::agent::ParseOwnerPolicy(*text, policy_file);
    if (policy.ok() && policy->image_cache_bytes > 0) budget = policy->image_cache_bytes;
  }
  const auto usage = idlegrid::agent::ReadImageCacheUsage(agent.data_dir + "/images");
  return AgentStatus(common, *node_id, agent.coordinator, idlegrid::agent::UserUnitState(),
                     FormatImageCache(usage.images, usage.blobs, usage.bytes, budget));
}

// The agent's data directory for `agent pause`/`resume`: as given, else the
// agent config's (agent join writes it), else the agent's default.
Result<std::string> AgentDataDir(const std::string& given, std::string config_file) {
  if (!given.empty()) return given;
  if (config_file.empty()) {
    auto path = idlegrid::agent::DefaultAgentConfigFile();
    if (path.ok() && std::filesystem::exists(*path)) config_file = *path;
  }
  idlegrid::agent::AgentConfig agent;
  if (config_file.empty()) return agent.data_dir;
  IG_RETURN_IF_ERROR(idlegrid::agent::LoadAgentConfigFile(config_file, {}, &agent));
  return agent.data_dir;
}

// `agent` itself: flags from --config fill in those not given, then it runs.
int AgentCommand(CLI::App* a, AgentFlags& f) {
  if (!f.config_file.empty()) {
    std::set<std::string> given;
    for (const CLI::Option* opt : a->get_options()) {
      if (opt->count() == 0) continue;
      for (const std::string& name : opt->get_lnames()) given.insert(name);
    }
    if (auto st = idlegrid::agent::LoadAgentConfigFile(f.config_file, given, &f.agent); !st.ok()) {
      std::cerr << "error: " << st.message() << "\n";
      return 2;
    }
  }
  auto cas = idlegrid::registry::ParseRegistryCaFlags(f.registry_cas);
  if (!cas.ok()) {
    std::cerr << cas.status().message() << "\n";
    return 2;
  }
  f.agent.registry_ca_files = std::move(*cas);
  return RunAgent(f.agent, f.discover, f.json, f.grace_seconds);
}

int AgentPauseCommand(const AgentFlags& f, bool pause) {
  auto data_dir = AgentDataDir(f.pause_data_dir, f.pause_agent_config);
  if (!data_dir.ok()) return std::cerr << "error: " << data_dir.status().message() << "\n", 2;
  return pause ? AgentPause(*data_dir, f.pause_for, f.pause_gpus) : AgentResume(*data_dir);
}

// The agent's flags up to --simulate-gpu: where it joins and what it offers.
void AddAgentHostFlags(CLI::App* a, AgentFlags& f) {
  a->add_option("--coordinator", f.agent.coordinator,
                "coordinator gRPC address host:port; several, comma-separated, to fail over between coordinators "
                "sharing one database");
  a->add_option("--join-token", f.agent.join_token, "join token (first start only)");
  a->add_option("--metrics-listen", f.agent.metrics_listen,
                "serve this agent's Prometheus metrics at http://ADDR/metrics, loopback only (e.g. 127.0.0.1:9464)");
  a->add_option("--ca-hash", f.agent.ca_hash, "sha256 fingerprint of the coordinator CA to pin (first start)");
  a->add_option("--data-dir", f.agent.data_dir, "agent state")->capture_default_str();
  a->add_option("--name", f.agent.name, "node name (default: hostname)");
  a->add_option("--cpus", f.agent.cpus, "cores offered (default: all)");
  a->add_option("--memory-mib", f.agent.memory_bytes, "memory offered in MiB (default: all)")
      ->transform([](std::string s) { return std::to_string(std::stoull(s) << 20); });
  a->add_option("--region", f.agent.region)->capture_default_str();
  a->add_option("--podman", f.agent.podman, "podman binary")->capture_default_str();
  a->add_option("--driver", f.agent.driver,
                "how containers start: auto (runc directly where it gives podman's sandbox, podman otherwise), "
                "podman, runc")
      ->check(CLI::IsMember({"auto", "podman", "runc"}))
      ->capture_default_str();
  a->add_option("--runc", f.agent.runc, "runc binary (driver auto or runc)")->capture_default_str();
  a->add_flag("--no-pilots", f.agent.no_pilots,
              "every task of an array job in a container of its own (no pilot sandboxes; slower sweeps)");
  a->add_flag("--discover", f.discover, "print what this host would advertise and exit");
  a->add_option(
      "--simulate-gpu", f.agent.simulate_gpus,
      "add a simulated device \"MODEL:MEMORY:CC\", e.g. \"RTX 4090:24GiB:8.9\" (repeatable; tests and demos)");
}

// The agent's flags from --policy to --skopeo: devices, sandboxes, registries.
void AddAgentRuntimeFlags(CLI::App* a, AgentFlags& f) {
  a->add_option("--policy", f.agent.policy_file, "owner policy YAML (default: DATA_DIR/policy.yaml)");
  a->add_option("--nvml-library", f.agent.nvml_library, "NVML library to load")->capture_default_str();
  a->add_option("--cdi-spec", f.agent.cdi_specs,
                "a CDI spec naming this host's GPUs, in /etc/cdi or /var/run/cdi (repeatable; default "
                "/etc/cdi/nvidia.yaml or /var/run/cdi/nvidia.yaml, as nvidia-ctk cdi generate writes)");
  a->add_option("--untrusted-runtime", f.agent.untrusted_runtime,
                "runsc: tenants' jobs run under gVisor where this host can cap their memory there (cgroup v2 with "
                "the memory controller delegated); runc: they run under runc like the operator's")
      ->check(CLI::IsMember({"runsc", "runc"}))
      ->capture_default_str();
  a->add_option("--registry-ca", f.registry_cas,
                "HOST[:PORT]=CA_FILE: also trust this CA (PEM) for that registry's TLS (repeatable; which "
                "registries the node pulls from is the policy's allowedRegistries)");
  a->add_option("--skopeo", f.agent.skopeo, "skopeo binary, which pulls images from registries")->capture_default_str();
}

// The agent's flags from --default-attempt-disk on: disk, pausing, shutdown,
// output and its config file.
void AddAgentLimitFlags(CLI::App* a, AgentFlags& f) {
  a->add_option("--default-attempt-disk", f.agent.default_attempt_disk_bytes,
                "what an attempt may write to its output, checkpoint and home directories together when its job "
                "sets no resources.disk, e.g. 10Gi, 500G")
      ->transform([](std::string s) {
        auto bytes = idlegrid::manifest::ParseBytes(s);
        if (!bytes.ok()) throw CLI::ValidationError(bytes.status().message());
        if (*bytes == 0) throw CLI::ValidationError("must be more than 0");
        return std::to_string(*bytes);
      })
      ->type_name("BYTES")
      ->default_str("10Gi");
  a->add_option("--input-cache", f.agent.input_cache_bytes,
                "the most the node's input cache (DATA_DIR/inputs) holds, e.g. 10Gi; least recently used inputs no "
                "running attempt reads are evicted past it")
      ->transform([](std::string s) {
        auto bytes = idlegrid::manifest::ParseBytes(s);
        if (!bytes.ok()) throw CLI::ValidationError(bytes.status().message());
        return std::to_string(*bytes);
      })
      ->type_name("BYTES")
      ->default_str("10Gi");
  a->add_option("--pause-poll-ms", f.agent.pause_poll_ms,
                "how often the owner-first pause watcher looks (policy pauseWhen, maxGpuTemp, maxGpuPower)")
      ->check(CLI::Range(50, 60000))
      ->capture_default_str();
  a->add_option("--shutdown-grace", f.grace_seconds,
                "on SIGTERM, seconds running work may take to finish before it "
                "is handed back")
      ->capture_default_str();
  a->add_flag("--json", f.json, "with --discover: JSON only");
  a->add_option("--config", f.config_file,
                "agent config YAML (agent join writes ~/.config/idlegrid/agent.yaml); flags given here win");
}

CLI::App* AddAgentJoin(CLI::App* a, AgentFlags& f) {
  idlegrid::agent::JoinOptions& j = f.join;
  auto* ajoin = a->add_subcommand("join",
                                  "join a coordinator as this (unprivileged) user: check the host, enroll, "
                                  "write the config and a systemd user unit, start it");
  ajoin
      ->add_option("url", j.url,
                   "the coordinator's gRPC API, https://HOST:PORT (several, comma-separated: fail over between them)")
      ->required();
  ajoin->add_option("--token", j.join_token, "join token (igj_...)")->required();
  ajoin->add_option("--ca-hash", j.ca_hash, "sha256 fingerprint of the coordinator CA to pin")->required();
  ajoin->add_option("--api-token", j.api_token,
                    "a provider API token (read scope) saved for `agent status` and `idlegrid nodes`");
  ajoin->add_option("--name", j.agent.name, "node name (default: hostname)");
  ajoin->add_option("--cpus", j.agent.cpus, "cores offered (default: all)");
  ajoin->add_option("--memory-mib", j.agent.memory_bytes, "memory offered in MiB (default: all)")
      ->transform([](std::string s) { return std::to_string(std::stoull(s) << 20); });
  ajoin->add_option("--region", j.agent.region)->capture_default_str();
  ajoin->add_option("--driver", j.agent.driver, "auto, podman, runc")
      ->check(CLI::IsMember({"auto", "podman", "runc"}))
      ->capture_default_str();
  ajoin->add_option("--untrusted-runtime", j.agent.untrusted_runtime, "runsc or runc")
      ->check(CLI::IsMember({"runsc", "runc"}))
      ->capture_default_str();
  ajoin->add_option("--policy", j.agent.policy_file, "owner policy YAML (default: DATA_DIR/policy.yaml)");
  ajoin->add_option("--metrics-listen", j.agent.metrics_listen,
                    "the agent serves its Prometheus metrics here, loopback only (e.g. 127.0.0.1:9464)");
  ajoin->add_option("--shutdown-grace", j.grace_seconds, "seconds running work may take when the unit stops")
      ->capture_default_str();
  ajoin->add_flag("--ignore-checks", j.ignore_checks, "enroll even when the host check finds a PROBLEM");
  ajoin->add_flag("--no-start", j.no_start, "write the unit but neither enable nor start it");
  return ajoin;
}

// agent status, pause, resume and unit; adds them to `reg`.
void AddAgentLocalCommands(CLI::App* a, CommandRegistry& reg, CommonFlags& common,
                           const std::shared_ptr<AgentFlags>& f) {
  auto* astatus = a->add_subcommand("status",
                                    "this node as the coordinator sees it: state, current work, why it "
                                    "is not schedulable, the provider's earnings");
  astatus->add_option("--agent-config", f->status_agent_config,
                      "agent config YAML (default: ~/.config/idlegrid/agent.yaml)");
  AddClientFlags(astatus, common);
  auto* apause = a->add_subcommand("pause",
                                   "the owner needs the machine: hand back GPU jobs that checkpoint, freeze "
                                   "the rest, take no new work, until `agent resume` (or --for ends)");
  apause->add_option("--for", f->pause_for, "end the pause by itself after this long, e.g. 2h, 30m");
  apause->add_option("--gpu", f->pause_gpus, "pause only this GPU (index or UUID; repeatable): the rest keeps working");
  auto* aresume = a->add_subcommand("resume", "end a pause `agent pause` began");
  for (auto* sub : {apause, aresume}) {
    sub->add_option("--data-dir", f->pause_data_dir, "the agent's data directory (default: from its config)");
    sub->add_option("--agent-config", f->pause_agent_config,
                    "agent config YAML (default: ~/.config/idlegrid/agent.yaml)");
  }
  auto* aunit = a->add_subcommand("unit", "print the systemd user unit agent join installs");
  aunit->add_option("--binary", f->unit_binary)->capture_default_str();
  aunit->add_option("--config", f->unit_config, "agent config path (%h: the user's home)")->capture_default_str();
  aunit->add_option("--shutdown-grace", f->grace_seconds)->capture_default_str();

  reg.Add(aunit, [f] {
    std::cout << idlegrid::agent::RenderUserUnit(f->unit_binary, f->unit_config, f->grace_seconds);
    return 0;
  });
  reg.Add(astatus, [f, &common] { return AgentStatusCommand(common, f->status_agent_config); });
  reg.Add(apause, [f] { return AgentPauseCommand(*f, true); });
  reg.Add(aresume, [f] { return AgentPauseCommand(*f, false); });
}

}  // namespace

void RegisterAgentCommands(CLI::App& app, CommandRegistry& reg, CommonFlags& common) {
  auto f = std::make_shared<AgentFlags>();
  auto* a = app.add_subcommand("agent", "run the data plane on this host (dials out only)");
  AddAgentHostFlags(a, *f);
  AddAgentRuntimeFlags(a, *f);
  AddAgentLimitFlags(a, *f);
  auto* ajoin = AddAgentJoin(a, *f);
  reg.Add(ajoin, [f] { return idlegrid::agent::RunJoin(f->join); });
  AddAgentLocalCommands(a, reg, common, f);
  reg.Add(a, [a, f] { return AgentCommand(a, *f); });
}

}  // namespace idlegrid::cli
