// idlegrid: one binary, subcommands in the style of nomad/consul. This file
// only wires flags to the modules that do the work.
#include <CLI/CLI.hpp>
#include <google/protobuf/util/json_util.h>
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <set>
#include <thread>

#include "agent/agent.h"
#include "agent/join.h"
#include "agent/join_plan.h"
#include "agent/image_cache.h"
#include "agent/local_policy.h"
#include "common/fs.h"
#include "cli/agent_pause.h"
#include "api/coordinator_server.h"
#include "common/exit_code.h"
#include "cli/agent_status.h"
#include "cli/commands.h"
#include "cli/image_base.h"
#include "ledger/plans.h"
#include "manifest/manifest.h"
#include "registry/allow_list.h"

namespace {

// Logs go to stderr; stdout carries only results and readiness lines.
void SetupLogging(const std::string& level) {
  auto logger = spdlog::stderr_color_mt("idlegrid");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(level));
}


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
    idlegrid::cli::PrintAdvertisement(*ad);
    return 0;
  }
  // SIGTERM/SIGINT: stop taking work, kill running containers, exit.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    spdlog::info("signal {}: agent draining, then shutting down", sig);
    agent.GracefulShutdown(std::chrono::seconds(grace_seconds));
  });
  waiter.detach();
  return agent.Run();
}

// `agent status`: the node id and coordinator come from the agent's own
// config and data directory; the coordinator's view needs a provider token.
int AgentStatusCommand(idlegrid::cli::CommonFlags common, std::string agent_config_file) {
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
  return idlegrid::cli::AgentStatus(common, *node_id, agent.coordinator, idlegrid::agent::UserUnitState(),
                                    idlegrid::cli::FormatImageCache(usage.images, usage.blobs, usage.bytes, budget));
}

// The agent's data directory for `agent pause`/`resume`: as given, else the
// agent config's (agent join writes it), else the agent's default.
idlegrid::Result<std::string> AgentDataDir(const std::string& given, std::string config_file) {
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"idlegrid: a grid of idle GPUs and CPUs for batch ML and simulation jobs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("idlegrid ") + IDLEGRID_VERSION);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")->capture_default_str();

  idlegrid::cli::CommonFlags common;
  auto add_client_flags = [&](CLI::App* sub) {
    sub->add_option("--addr", common.config.address, "coordinator gRPC address (env IDLEGRID_ADDR)");
    sub->add_option("--ca-file", common.config.ca_file, "coordinator CA certificate (env IDLEGRID_CA_FILE)");
    sub->add_option("--token", common.config.token, "API token (env IDLEGRID_TOKEN)");
    sub->add_option("--config", common.config_file, "client config YAML (env IDLEGRID_CONFIG)");
    sub->add_flag("--json", common.json, "machine-readable output");
  };

  // coordinator
  idlegrid::api::CoordinatorConfig coord;
  auto* c = app.add_subcommand("coordinator", "run the control plane");
  c->add_option("--data-dir", coord.data_dir, "state, PKI, artifacts")->capture_default_str();
  c->add_option("--db", coord.db, "store: SQLite file or postgresql://... URL (default: DATA_DIR/state.db)");
  c->add_option("--listen", coord.grpc_listen, "gRPC address (port 0 = any)")->capture_default_str();
  c->add_option("--http-listen", coord.http_listen, "HTTPS/JSON address (port 0 = any)")->capture_default_str();
  c->add_option("--tls-name", coord.tls_names, "extra DNS name or IP for the server certificate");
  c->add_option("--shared-dir", coord.shared_dir,
                 "PKI, artifacts and secrets shared by coordinators on one PostgreSQL database (default: DATA_DIR)");
  c->add_option("--policy-file", coord.policy_file,
                 "scheduling policies, data classes and trusted nodes YAML (docs/scheduling.md)");
  c->add_option("--heartbeat-interval-ms", coord.options.heartbeat_interval_ms)->capture_default_str();
  c->add_option("--heartbeat-margin", coord.options.heartbeat_margin)->capture_default_str();
  c->add_option("--ack-timeout-ms", coord.options.ack_timeout_ms, "assignments not acknowledged by then go elsewhere")
      ->capture_default_str();
  c->add_option("--log-head-bytes", coord.options.log_cap.head_bytes,
                "per task, the first bytes of output kept in the store")
      ->capture_default_str();
  c->add_option("--log-tail-bytes", coord.options.log_cap.tail_bytes,
                "per task, the last bytes of output kept (what lies between is dropped and counted)")
      ->capture_default_str();
  std::string retention = "7d";
  c->add_option("--retention", retention, "how long a settled job is kept when its manifest names no retention "
                "(then deleted with its logs and the artifacts only it held; 0: forever)")
      ->capture_default_str();
  c->add_option("--max-queued-tasks", coord.options.default_quota.max_queued_tasks,
                "per account, unless its own quota says otherwise (0: no limit)")
      ->capture_default_str();
  c->add_option("--max-running-tasks", coord.options.default_quota.max_running_tasks,
                "per account (0: no limit)")
      ->capture_default_str();
  c->add_option("--max-stored-bytes", coord.options.default_quota.max_stored_bytes,
                "per account: artifacts it holds and its jobs' logs (0: no limit)")
      ->capture_default_str();
  c->add_option("--rate-limit", coord.options.rate_limits.per_token.per_second,
                "API calls per second per token (0: off); a flood is answered ResourceExhausted")
      ->capture_default_str();
  c->add_option("--rate-burst", coord.options.rate_limits.per_token.burst, "calls a token may make at once")
      ->capture_default_str();
  c->add_option("--trusted-image-key", coord.trusted_image_key_files,
                "public-key file (idlegrid image keygen) whose signatures make an image acceptable; repeatable")
      ->check(CLI::ExistingFile);
  c->add_flag("--require-signed-images", coord.options.require_signed_images,
              "refuse jobs whose image has no valid signature by a --trusted-image-key");
  c->add_option("--allow-registry", coord.allow_registries,
                "an OCI registry HOST[:PORT] jobs may name images from, by digest (repeatable; docs/registries.md)");
  c->add_flag("--allow-registry-tags", coord.options.registries.allow_tags,
              "let jobs name an allowed registry's image by tag: resolved to its digest at submit");
  c->add_option("--registry-ca", coord.registry_cas,
                "HOST[:PORT]=CA_FILE: also trust this CA (PEM) for that registry's TLS (repeatable)");
  c->add_option("--skopeo", coord.skopeo, "skopeo binary, which reads registries")->capture_default_str();
  // Verification (docs/verification.md).
  std::string default_verification = "none";
  c->add_option("--default-verification", default_verification,
                "verification for jobs that name none: none, replicate, adaptive or challenge (docs/verification.md)")
      ->capture_default_str();
  c->add_option("--verification-trust-threshold", coord.options.verification.trust_threshold,
                "adaptive: verified results in a row before a provider's results are only audited")
      ->capture_default_str();
  c->add_option("--verification-audit-floor", coord.options.verification.audit_floor,
                "adaptive: the least share of a trusted provider's results still replicated; "
                "challenge: the share replicated to add known answers")
      ->capture_default_str();
  c->add_option("--verification-unproven-share", coord.options.verification.unproven_share,
                "the most of the verified work in flight that providers not yet trusted for its image hold "
                "together while a trusted one could take it (1: no cap)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  c->add_option("--verification-known-answer-rate", coord.options.verification.known_answer_rate,
                "adaptive: the chance that a result accepted on a trusted provider's word brings it a "
                "known-answer check (0: none)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  c->add_option("--verification-dispute-margin", coord.options.verification.dispute_margin,
                "how far a split's winning group must lead the others (1: a plain majority)")
      ->capture_default_str();
  // The ledger (docs/ledger.md): off unless asked for.
  c->add_flag("--ledger", coord.options.ledger.enabled,
              "keep the ledger: escrow each job's maxCost at submit, charge succeeded attempts, refund the rest");
  c->add_option("--ledger-fee-ppm", coord.options.ledger.policy.fee_ppm,
                "operator's share of each released charge, parts per million")
      ->capture_default_str();
  std::string dispute_window = "24h";
  c->add_option("--ledger-dispute-window", dispute_window, "how long a charge stays pending before its release")
      ->capture_default_str();
  std::string slash_credits = "10";
  c->add_option("--ledger-slash", slash_credits, "credits taken from a provider's stake per proven misbehaviour")
      ->capture_default_str();
  c->add_option("--ledger-slash-to-requester-ppm", coord.options.ledger.policy.slash_to_requester_ppm,
                "share of a slash paid to the harmed requester, parts per million")
      ->capture_default_str();
  c->add_flag("--allow-simulated-gpus", coord.options.allow_simulated_gpus,
              "accept agents advertising simulated GPUs (tests and demos only)");
  c->add_option("--bench-binary", coord.bench_binary, "static readiness benchmark (default: beside this binary)");
  c->add_option("--gpu-bench-binary", coord.gpu_bench_binary, "GPU readiness benchmark (default: beside this binary)");
  c->add_option("--bench-iterations", coord.options.bench_iterations)->capture_default_str();
  c->add_option("--gpu-bench-rounds", coord.options.gpu_bench_rounds,
                "GPU readiness benchmark: rounds per device thread")->capture_default_str();
  c->add_option("--min-cpu-score", coord.options.min_cpu_score, "slowest plausible benchmark score (rounds/s)")
      ->capture_default_str();

  // agent
  idlegrid::agent::AgentConfig agent;
  bool discover = false;
  bool agent_json = false;
  auto* a = app.add_subcommand("agent", "run the data plane on this host (dials out only)");
  a->add_option("--coordinator", agent.coordinator, "coordinator gRPC address host:port");
  a->add_option("--join-token", agent.join_token, "join token (first start only)");
  a->add_option("--ca-hash", agent.ca_hash, "sha256 fingerprint of the coordinator CA to pin (first start)");
  a->add_option("--data-dir", agent.data_dir, "agent state")->capture_default_str();
  a->add_option("--name", agent.name, "node name (default: hostname)");
  a->add_option("--cpus", agent.cpus, "cores offered (default: all)");
  a->add_option("--memory-mib", agent.memory_bytes, "memory offered in MiB (default: all)")
      ->transform([](std::string s) { return std::to_string(std::stoull(s) << 20); });
  a->add_option("--region", agent.region)->capture_default_str();
  a->add_option("--podman", agent.podman, "podman binary")->capture_default_str();
  a->add_option("--driver", agent.driver,
                "how containers start: auto (runc directly where it gives podman's sandbox, podman otherwise), "
                "podman, runc")
      ->check(CLI::IsMember({"auto", "podman", "runc"}))
      ->capture_default_str();
  a->add_option("--runc", agent.runc, "runc binary (driver auto or runc)")->capture_default_str();
  a->add_flag("--no-pilots", agent.no_pilots,
              "every task of an array job in a container of its own (no pilot sandboxes; slower sweeps)");
  a->add_flag("--discover", discover, "print what this host would advertise and exit");
  a->add_option("--simulate-gpu", agent.simulate_gpus,
                "add a simulated device \"MODEL:MEMORY:CC\", e.g. \"RTX 4090:24GiB:8.9\" (repeatable; tests and demos)");
  a->add_option("--policy", agent.policy_file, "owner policy YAML (default: DATA_DIR/policy.yaml)");
  a->add_option("--nvml-library", agent.nvml_library, "NVML library to load")->capture_default_str();
  a->add_option("--cdi-spec", agent.cdi_specs,
                "a CDI spec naming this host's GPUs, in /etc/cdi or /var/run/cdi (repeatable; default "
                "/etc/cdi/nvidia.yaml or /var/run/cdi/nvidia.yaml, as nvidia-ctk cdi generate writes)");
  a->add_option("--untrusted-runtime", agent.untrusted_runtime,
                "runsc: tenants' jobs run under gVisor where this host can cap their memory there (cgroup v2 with "
                "the memory controller delegated); runc: they run under runc like the operator's")
      ->check(CLI::IsMember({"runsc", "runc"}))
      ->capture_default_str();
  std::vector<std::string> agent_registry_cas;
  a->add_option("--registry-ca", agent_registry_cas,
                "HOST[:PORT]=CA_FILE: also trust this CA (PEM) for that registry's TLS (repeatable; which "
                "registries the node pulls from is the policy's allowedRegistries)");
  a->add_option("--skopeo", agent.skopeo, "skopeo binary, which pulls images from registries")->capture_default_str();
  a->add_option("--default-attempt-disk", agent.default_attempt_disk_bytes,
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
  a->add_option("--input-cache", agent.input_cache_bytes,
                "the most the node's input cache (DATA_DIR/inputs) holds, e.g. 10Gi; least recently used inputs no "
                "running attempt reads are evicted past it")
      ->transform([](std::string s) {
        auto bytes = idlegrid::manifest::ParseBytes(s);
        if (!bytes.ok()) throw CLI::ValidationError(bytes.status().message());
        return std::to_string(*bytes);
      })
      ->type_name("BYTES")
      ->default_str("10Gi");
  a->add_option("--pause-poll-ms", agent.pause_poll_ms,
                "how often the owner-first pause watcher looks (policy pauseWhen, maxGpuTemp, maxGpuPower)")
      ->check(CLI::Range(50, 60000))
      ->capture_default_str();
  int grace_seconds = 30;
  a->add_option("--shutdown-grace", grace_seconds, "on SIGTERM, seconds running work may take to finish before it "
                "is handed back")->capture_default_str();
  a->add_flag("--json", agent_json, "with --discover: JSON only");
  std::string agent_config_file;
  a->add_option("--config", agent_config_file,
                "agent config YAML (agent join writes ~/.config/idlegrid/agent.yaml); flags given here win");

  // agent join / status / unit (docs/provider.md)
  idlegrid::agent::JoinOptions join_opts;
  auto* ajoin = a->add_subcommand("join", "join a coordinator as this (unprivileged) user: check the host, enroll, "
                                          "write the config and a systemd user unit, start it");
  ajoin->add_option("url", join_opts.url, "the coordinator's gRPC API, https://HOST:PORT")->required();
  ajoin->add_option("--token", join_opts.join_token, "join token (igj_...)")->required();
  ajoin->add_option("--ca-hash", join_opts.ca_hash, "sha256 fingerprint of the coordinator CA to pin")->required();
  ajoin->add_option("--api-token", join_opts.api_token,
                    "a provider API token (read scope) saved for `agent status` and `idlegrid nodes`");
  ajoin->add_option("--name", join_opts.agent.name, "node name (default: hostname)");
  ajoin->add_option("--cpus", join_opts.agent.cpus, "cores offered (default: all)");
  ajoin->add_option("--memory-mib", join_opts.agent.memory_bytes, "memory offered in MiB (default: all)")
      ->transform([](std::string s) { return std::to_string(std::stoull(s) << 20); });
  ajoin->add_option("--region", join_opts.agent.region)->capture_default_str();
  ajoin->add_option("--driver", join_opts.agent.driver, "auto, podman, runc")
      ->check(CLI::IsMember({"auto", "podman", "runc"}))
      ->capture_default_str();
  ajoin->add_option("--untrusted-runtime", join_opts.agent.untrusted_runtime, "runsc or runc")
      ->check(CLI::IsMember({"runsc", "runc"}))
      ->capture_default_str();
  ajoin->add_option("--policy", join_opts.agent.policy_file, "owner policy YAML (default: DATA_DIR/policy.yaml)");
  ajoin->add_option("--shutdown-grace", join_opts.grace_seconds, "seconds running work may take when the unit stops")
      ->capture_default_str();
  ajoin->add_flag("--ignore-checks", join_opts.ignore_checks, "enroll even when the host check finds a PROBLEM");
  ajoin->add_flag("--no-start", join_opts.no_start, "write the unit but neither enable nor start it");
  auto* astatus = a->add_subcommand("status", "this node as the coordinator sees it: state, current work, why it "
                                              "is not schedulable, the provider's earnings");
  std::string status_agent_config;
  astatus->add_option("--agent-config", status_agent_config, "agent config YAML (default: ~/.config/idlegrid/agent.yaml)");
  add_client_flags(astatus);
  std::string pause_for, pause_data_dir, pause_agent_config;
  std::vector<std::string> pause_gpus;
  auto* apause = a->add_subcommand("pause", "the owner needs the machine: hand back GPU jobs that checkpoint, freeze "
                                            "the rest, take no new work, until `agent resume` (or --for ends)");
  apause->add_option("--for", pause_for, "end the pause by itself after this long, e.g. 2h, 30m");
  apause->add_option("--gpu", pause_gpus, "pause only this GPU (index or UUID; repeatable): the rest keeps working");
  auto* aresume = a->add_subcommand("resume", "end a pause `agent pause` began");
  for (auto* sub : {apause, aresume}) {
    sub->add_option("--data-dir", pause_data_dir, "the agent's data directory (default: from its config)");
    sub->add_option("--agent-config", pause_agent_config, "agent config YAML (default: ~/.config/idlegrid/agent.yaml)");
  }
  auto* aunit = a->add_subcommand("unit", "print the systemd user unit agent join installs");
  std::string unit_binary = "/usr/bin/idlegrid", unit_config = "%h/.config/idlegrid/agent.yaml";
  aunit->add_option("--binary", unit_binary)->capture_default_str();
  aunit->add_option("--config", unit_config, "agent config path (%h: the user's home)")->capture_default_str();
  aunit->add_option("--shutdown-grace", grace_seconds)->capture_default_str();

  std::string manifest, job_id, dir, file;
  bool wait = false, follow = false;
  auto* submit = app.add_subcommand("submit", "submit a job manifest, or a workflow (kind: Workflow)");
  submit->add_option("manifest", manifest, "job or workflow manifest YAML")->required();
  submit->add_flag("--wait", wait, "follow progress until the job (or workflow) ends");
  add_client_flags(submit);
  auto* validate = app.add_subcommand("validate", "check a job manifest without submitting it");
  validate->add_option("manifest", manifest)->required();
  validate->add_flag("--json", common.json);
  auto* status = app.add_subcommand("status", "show a job, or a workflow (w-...) as a tree of its steps");
  status->add_option("job", job_id, "job id, or workflow id")->required();
  status->add_flag("--wait", wait, "wait until the job ends");
  bool explain = false;
  status->add_flag("--explain", explain, "why its queued tasks wait: nodes per filter, best candidates' scores");
  auto* market = app.add_subcommand("market", "the spot market's order book (free units and asks per device class)");
  add_client_flags(market);
  add_client_flags(status);
  auto* jobs = app.add_subcommand("jobs", "list jobs");
  add_client_flags(jobs);
  auto* workflows = app.add_subcommand("workflows", "list workflows (docs/workflows.md)");
  add_client_flags(workflows);
  auto* nodes = app.add_subcommand("nodes", "list nodes; drain or undrain one");
  add_client_flags(nodes);
  std::string node_id, deadline;
  auto* drain = nodes->add_subcommand("drain", "take no new work; at --deadline, hand running work back");
  drain->add_option("node", node_id)->required();
  drain->add_option("--deadline", deadline, "e.g. 90s, 10m (default: let running work finish)");
  add_client_flags(drain);
  auto* undrain = nodes->add_subcommand("undrain", "take work again");
  undrain->add_option("node", node_id)->required();
  add_client_flags(undrain);
  auto* logs = app.add_subcommand("logs", "print a job's output");
  logs->add_option("job", job_id)->required();
  logs->add_flag("-f,--follow", follow, "keep streaming until the job ends");
  add_client_flags(logs);
  auto* fetch = app.add_subcommand("fetch", "download a job's outputs, verifying digests");
  fetch->add_option("job", job_id)->required();
  fetch->add_option("dir", dir)->required();
  add_client_flags(fetch);
  idlegrid::cli::ReceiptQuery receipt_query;
  uint32_t receipt_task = 0;
  std::string receipt_file, receipt_fingerprint;
  auto* receipt = app.add_subcommand("receipt", "an attempt's signed receipt: metering, price, provenance (docs/receipts.md)");
  receipt->add_option("job", receipt_query.job_id, "the job (its latest attempt with a receipt)");
  auto* receipt_task_opt = receipt->add_option("--task", receipt_task, "that task's latest attempt");
  receipt->add_option("--attempt", receipt_query.attempt_id, "that attempt");
  receipt->add_option("-o,--output", receipt_query.output_file, "save it (JSON) to this file");
  add_client_flags(receipt);
  auto* receipt_verify = receipt->add_subcommand("verify", "verify a saved receipt offline, with public keys only");
  receipt_verify->add_option("file", receipt_file, "a receipt saved with `receipt JOB -o FILE`")->required();
  receipt_verify->add_option("--coordinator-key-fingerprint", receipt_fingerprint,
                             "sha256:<hex> of the coordinator's receipt key (default: the client config's "
                             "receipt_key_fingerprint)");
  receipt_verify->add_option("--config", common.config_file, "client config YAML (env IDLEGRID_CONFIG)");
  idlegrid::cli::TaskFlags task_flags;
  auto* cancel = app.add_subcommand("cancel", "cancel a job, or some of its tasks, or a workflow (w-...)");
  cancel->add_option("job", job_id)->required();
  cancel->add_option("--tasks", task_flags.indices, "only these task indices, e.g. 3,7-9");
  cancel->add_option("--state", task_flags.states, "only tasks in these states (queued,assigned,running,lost; repeatable)")
      ->allow_extra_args(false);
  add_client_flags(cancel);
  bool retry_failed = false;
  auto* retry = app.add_subcommand(
      "retry", "run a job's failed tasks (--failed) or listed tasks (--tasks) again; alone: its tasks lost with their node");
  retry->add_option("job", job_id)->required();
  retry->add_flag("--failed", retry_failed, "every failed task, with a fresh attempt");
  retry->add_option("--tasks", task_flags.indices, "these failed or cancelled task indices, e.g. 3,7-9");
  add_client_flags(retry);
  auto* abandon = app.add_subcommand("abandon", "give up a job's tasks lost with their node (they fail)");
  abandon->add_option("job", job_id)->required();
  add_client_flags(abandon);
  auto* image = app.add_subcommand("image", "manage images");
  image->require_subcommand(1);
  auto* push = image->add_subcommand("push", "upload an OCI archive (podman save --format oci-archive)");
  bool make_public = false;
  push->add_option("archive", file)->required()->check(CLI::ExistingFile);
  push->add_flag("--public", make_public, "any account may run it (default: only yours)");
  std::string sign_key, image_ref, key_name;
  push->add_option("--sign-key", sign_key, "sign the pushed image with this secret-key file (image keygen)")
      ->check(CLI::ExistingFile);
  add_client_flags(push);
  idlegrid::cli::ImageBuildOptions build_options;
  auto* build = image->add_subcommand(
      "build", "build DIR with podman (RUN steps without network, nothing pulled) and push it as image push does");
  build->add_option("dir", build_options.context_dir, "the build context")->required();
  build->add_option("-f,--file", build_options.containerfile,
                    "the Containerfile (default: DIR/Containerfile, else DIR/Dockerfile)");
  build->add_flag("--allow-network", build_options.allow_network, "give RUN steps a network (default: none)");
  build->add_option("--name", build_options.name, "name it: prints NAME@sha256:... (default: the bare digest)");
  build->add_flag("--public", build_options.make_public, "any account may run it (default: only yours)");
  add_client_flags(build);
  idlegrid::cli::ImageBaseOptions base_options;
  std::string base_packages;
  auto* base = image->add_subcommand(
      "base", "make a minimal Debian root with mmdebstrap and import it into podman as localhost/NAME:latest, "
              "for a Containerfile's FROM NAME (nothing is pushed)");
  base->add_option("name", base_options.name, "the image's name")->required();
  base->add_option("--packages", base_packages, "Debian packages to include, comma-separated (python3-numpy,...)")
      ->required();
  base->add_option("--suite", base_options.suite, "Debian suite")->capture_default_str();
  base->add_option("--mirror", base_options.mirror,
                   "Debian archive URL (default: the host's apt sources' Debian archive, else deb.debian.org)");
  auto* keygen = image->add_subcommand("keygen", "make an Ed25519 key pair for signing images: NAME.key, NAME.pub");
  keygen->add_option("name", key_name, "file prefix; the key is named by its last part")->required();
  auto* sign = image->add_subcommand("sign", "sign an image and add the signature to the coordinator");
  sign->add_option("image", image_ref, "the image's digest (sha256:..., as image push prints it)")->required();
  sign->add_option("--key", sign_key, "secret-key file (image keygen)")->required()->check(CLI::ExistingFile);
  add_client_flags(sign);
  auto* artifact = app.add_subcommand("artifact", "manage artifacts");
  artifact->require_subcommand(1);
  auto* apush = artifact->add_subcommand(
      "push", "upload a file, or a directory as a tar (for inputs with unpack: true), as a content-addressed input "
              "artifact");
  apush->add_option("file", file, "a file or a directory (regular files and directories only)")
      ->required()
      ->check(CLI::ExistingPath);
  apush->add_flag("--public", make_public, "any account may use it (default: only yours)");
  add_client_flags(apush);

  idlegrid::cli::AccountFlags account;
  auto* accounts = app.add_subcommand("account", "manage accounts (operators)");
  accounts->require_subcommand(1);
  auto* acreate = accounts->add_subcommand("create", "create an account");
  acreate->add_option("name", account.name)->required();
  acreate->add_option("--role", account.role, "requester | provider | operator")->required();
  acreate->add_option("--weight", account.weight, "fair-share weight")->capture_default_str();
  acreate->add_option("--max-queued", account.max_queued_tasks, "queued-task quota (0: the coordinator's default)");
  acreate->add_option("--max-running", account.max_running_tasks, "running-task quota (0: the default)");
  acreate->add_option("--max-stored-bytes", account.max_stored_bytes, "stored-bytes quota (0: the default)");
  add_client_flags(acreate);
  auto* alist = accounts->add_subcommand("list", "list accounts with their use and quotas");
  add_client_flags(alist);
  std::string token_account, expires, token_name, token_id;
  std::vector<std::string> scopes;
  auto* token = app.add_subcommand("token", "manage API tokens");
  token->require_subcommand(1);
  auto* tcreate = token->add_subcommand("create", "mint an API token (shown once)");
  tcreate->add_option("--account", token_account, "whose (default: your own)");
  tcreate->add_option("--scope", scopes, "submit,read,cancel,drain (default: all the role allows)")->delimiter(',');
  tcreate->add_option("--expires", expires, "e.g. 30d, 12h (default: never)");
  tcreate->add_option("--name", token_name, "a label for token list");
  add_client_flags(tcreate);
  auto* tlist = token->add_subcommand("list", "list tokens (never their secrets)");
  tlist->add_option("--account", token_account);
  add_client_flags(tlist);
  auto* trevoke = token->add_subcommand("revoke", "revoke a token by id");
  trevoke->add_option("id", token_id)->required();
  add_client_flags(trevoke);
  std::string ledger_account, ledger_amount;
  int64_t ledger_after = 0;
  uint32_t ledger_limit = 0;
  bool unstake = false;
  auto* ledger_cmd = app.add_subcommand("ledger", "balances, history, deposits and stakes (docs/ledger.md)");
  ledger_cmd->require_subcommand(1);
  auto* lbalance = ledger_cmd->add_subcommand("balance", "an account's balances (default: your own)");
  lbalance->add_option("--account", ledger_account);
  add_client_flags(lbalance);
  auto* lhistory = ledger_cmd->add_subcommand("history", "an account's postings, oldest first");
  lhistory->add_option("--account", ledger_account);
  lhistory->add_option("--after", ledger_after, "only postings after this seq");
  lhistory->add_option("--limit", ledger_limit, "at most this many (default 100)");
  add_client_flags(lhistory);
  auto* ldeposit = ledger_cmd->add_subcommand("deposit", "credit an account from outside the grid (operators)");
  ldeposit->add_option("account", ledger_account)->required();
  ldeposit->add_option("amount", ledger_amount, "credits, e.g. 12.5")->required();
  add_client_flags(ldeposit);
  auto* lwithdraw = ledger_cmd->add_subcommand("withdraw", "pay an account's credits out of the grid (operators)");
  lwithdraw->add_option("account", ledger_account)->required();
  lwithdraw->add_option("amount", ledger_amount, "credits, e.g. 12.5")->required();
  add_client_flags(lwithdraw);
  auto* lstake = ledger_cmd->add_subcommand("stake", "stake available credits (providers), or --unstake them");
  lstake->add_option("amount", ledger_amount, "credits, e.g. 12.5")->required();
  lstake->add_option("--account", ledger_account, "whose (default: your own)");
  lstake->add_flag("--unstake", unstake, "move stake back to available");
  add_client_flags(lstake);
  std::string earnings_provider;
  auto* provider_cmd = app.add_subcommand("provider", "a provider's side: what its nodes earned (docs/provider.md)");
  provider_cmd->require_subcommand(1);
  auto* pearnings = provider_cmd->add_subcommand(
      "earnings", "metered, accepted work of your nodes, ledger balances and an estimate per hour at your asks");
  pearnings->add_option("--provider", earnings_provider, "whose (default: your own; operators may name any)");
  add_client_flags(pearnings);
  auto* join = app.add_subcommand("join-token", "manage node join tokens");
  join->require_subcommand(1);
  auto* jcreate = join->add_subcommand("create", "mint a join token for a provider account");
  jcreate->add_option("--provider", token_account, "the provider account (default: your own)");
  jcreate->add_option("--expires", expires, "e.g. 7d (default: never)");
  add_client_flags(jcreate);
  auto* del = app.add_subcommand("delete", "delete a finished job, its logs and the artifacts only it held");
  del->add_option("job", job_id)->required();
  add_client_flags(del);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  SetupLogging(log_level);

  if (*c) {
    if (retention != "0") {
      auto secs = idlegrid::manifest::ParseDurationSeconds(retention);
      if (!secs.ok()) {
        std::cerr << "--retention: " << secs.status().message() << "\n";
        return 2;
      }
      coord.options.default_retention_seconds = static_cast<uint32_t>(*secs);
    } else {
      coord.options.default_retention_seconds = 0;
    }
    auto mode = idlegrid::verify::ParseMode(default_verification);
    if (!mode) {
      std::cerr << "--default-verification: \"" << default_verification
                << "\" is not one of none, replicate, adaptive, challenge\n";
      return 2;
    }
    coord.options.verification.default_mode = *mode;
    auto window = idlegrid::manifest::ParseDurationSeconds(dispute_window);
    auto slash = idlegrid::ledger::ParseCredits(slash_credits);
    if (!window.ok() || !slash.ok()) {
      std::cerr << (window.ok() ? "--ledger-slash: " + slash.status().message()
                                : "--ledger-dispute-window: " + window.status().message())
                << "\n";
      return 2;
    }
    coord.options.ledger.policy.dispute_window_ms = static_cast<int64_t>(*window) * 1000;
    coord.options.ledger.policy.slash_micro = *slash;
    if (auto st = idlegrid::ledger::ValidatePolicy(coord.options.ledger.policy); !st.ok()) {
      std::cerr << st.message() << "\n";
      return 2;
    }
    return idlegrid::api::RunCoordinator(coord);
  }
  if (*ajoin) return idlegrid::agent::RunJoin(join_opts);
  if (*aunit) {
    std::cout << idlegrid::agent::RenderUserUnit(unit_binary, unit_config, grace_seconds);
    return 0;
  }
  if (*astatus) return AgentStatusCommand(common, status_agent_config);
  if (*apause || *aresume) {
    auto data_dir = AgentDataDir(pause_data_dir, pause_agent_config);
    if (!data_dir.ok()) return std::cerr << "error: " << data_dir.status().message() << "\n", 2;
    return *apause ? idlegrid::cli::AgentPause(*data_dir, pause_for, pause_gpus) : idlegrid::cli::AgentResume(*data_dir);
  }
  if (*a) {
    if (!agent_config_file.empty()) {
      std::set<std::string> given;
      for (const CLI::Option* opt : a->get_options()) {
        if (opt->count() == 0) continue;
        for (const std::string& name : opt->get_lnames()) given.insert(name);
      }
      if (auto st = idlegrid::agent::LoadAgentConfigFile(agent_config_file, given, &agent); !st.ok()) {
        std::cerr << "error: " << st.message() << "\n";
        return 2;
      }
    }
    auto cas = idlegrid::registry::ParseRegistryCaFlags(agent_registry_cas);
    if (!cas.ok()) {
      std::cerr << cas.status().message() << "\n";
      return 2;
    }
    agent.registry_ca_files = std::move(*cas);
    return RunAgent(agent, discover, agent_json, grace_seconds);
  }
  if (*submit) return idlegrid::cli::Submit(common, manifest, wait);
  if (*validate) return idlegrid::cli::Validate(common, manifest);
  if (*status) {
    if (explain) return idlegrid::cli::Explain(common, job_id);
    return idlegrid::cli::Status_(common, job_id, wait);
  }
  if (*market) return idlegrid::cli::Market(common);
  if (*pearnings) return idlegrid::cli::ProviderEarnings(common, earnings_provider);
  if (*jobs) return idlegrid::cli::Jobs(common);
  if (*workflows) return idlegrid::cli::Workflows(common);
  if (*drain) return idlegrid::cli::Drain(common, node_id, deadline, false);
  if (*undrain) return idlegrid::cli::Drain(common, node_id, "", true);
  if (*nodes) return idlegrid::cli::Nodes(common);
  if (*logs) return idlegrid::cli::Logs(common, job_id, follow);
  if (*fetch) return idlegrid::cli::Fetch(common, job_id, dir);
  if (*receipt_verify) return idlegrid::cli::ReceiptVerify(common, receipt_file, receipt_fingerprint);
  if (*receipt) {
    if (receipt_query.job_id.empty()) {
      std::cerr << "receipt: a job is required (or: receipt verify FILE)\n";
      return 2;
    }
    if (receipt_task_opt->count() > 0) receipt_query.task_index = receipt_task;
    return idlegrid::cli::Receipt(common, receipt_query);
  }
  if (*cancel) return idlegrid::cli::Cancel(common, job_id, task_flags);
  if (*retry) {
    if (retry_failed || !task_flags.indices.empty()) {
      return idlegrid::cli::Retry(common, job_id, task_flags, retry_failed);
    }
    return idlegrid::cli::ResolveLost(common, job_id, true);
  }
  if (*abandon) return idlegrid::cli::ResolveLost(common, job_id, false);
  if (*base) {
    base_options.packages = idlegrid::cli::SplitPackageList(base_packages);
    return idlegrid::cli::ImageBase(base_options);
  }
  if (*build) return idlegrid::cli::ImageBuild(common, build_options);
  if (*push) return idlegrid::cli::ImagePush(common, file, make_public, sign_key);
  if (*keygen) return idlegrid::cli::ImageKeygen(key_name);
  if (*sign) return idlegrid::cli::ImageSign(common, image_ref, sign_key);
  if (*apush) return idlegrid::cli::ArtifactPush(common, file, make_public);
  if (*acreate) return idlegrid::cli::AccountCreate(common, account);
  if (*alist) return idlegrid::cli::AccountList(common);
  if (*lbalance) return idlegrid::cli::LedgerBalance(common, ledger_account);
  if (*lhistory) return idlegrid::cli::LedgerHistory(common, ledger_account, ledger_after, ledger_limit);
  if (*ldeposit) return idlegrid::cli::LedgerTransfer(common, ledger_account, ledger_amount, true);
  if (*lwithdraw) return idlegrid::cli::LedgerTransfer(common, ledger_account, ledger_amount, false);
  if (*lstake) return idlegrid::cli::LedgerStake(common, ledger_account, ledger_amount, unstake);
  if (*tcreate) return idlegrid::cli::TokenCreate(common, token_account, scopes, expires, token_name);
  if (*tlist) return idlegrid::cli::TokenList(common, token_account);
  if (*trevoke) return idlegrid::cli::TokenRevoke(common, token_id);
  if (*jcreate) return idlegrid::cli::JoinTokenCreate(common, token_account, expires);
  if (*del) return idlegrid::cli::Delete(common, job_id);
  return 2;  // no subcommand: a usage error, as CLI11's own
}
