// idlegrid: one binary, subcommands in the style of nomad/consul. This file
// only wires: the CLI modules declare their subcommands and flags
// (cli/command_groups.h); main() parses and runs the one chosen. The
// coordinator's subcommand is declared here since it needs ig_api, which the
// CLI modules do not link.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "api/coordinator_server.h"
#include "cli/command_groups.h"
#include "cli/command_registry.h"
#include "cli/commands.h"
#include "common/version.h"
#include "ledger/plans.h"
#include "manifest/manifest.h"
#include "verify/spec.h"

namespace {

// Logs go to stderr; stdout carries only results and readiness lines.
void SetupLogging(const std::string& level) {
  auto logger = spdlog::stderr_color_mt("idlegrid");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(level));
}

// What `coordinator`'s flags are parsed into; the strings are checked and
// turned into `coord`'s options once parsed (RunCoordinatorCommand).
struct CoordinatorFlags {
  idlegrid::api::CoordinatorConfig coord;
  std::string retention = "7d";
  std::string default_verification = "none";
  std::string dispute_window = "24h";
  std::string slash_credits = "10";
  std::string tls_lifetime = "365d";
  std::string tls_renew_before = "30d";
};

// --data-dir to --rate-burst: where it keeps state, what it listens on, how
// long it waits, keeps and lets accounts use.
void AddCoordinatorServerFlags(CLI::App* c, CoordinatorFlags& f) {
  c->add_option("--data-dir", f.coord.data_dir, "state, PKI, artifacts")->capture_default_str();
  c->add_option("--db", f.coord.db, "store: SQLite file or postgresql://... URL (default: DATA_DIR/state.db)");
  c->add_option("--listen", f.coord.grpc_listen, "gRPC address (port 0 = any)")->capture_default_str();
  c->add_option("--http-listen", f.coord.http_listen, "HTTPS/JSON address (port 0 = any)")->capture_default_str();
  c->add_option("--tls-name", f.coord.tls_names, "extra DNS name or IP for the server certificate");
  c->add_option("--tls-cert-lifetime", f.tls_lifetime, "how long a server certificate it issues lasts")
      ->capture_default_str();
  c->add_option("--tls-renew-before", f.tls_renew_before,
                "re-issue the server certificate this long before it expires, while running (docs/operations.md)")
      ->capture_default_str();
  c->add_flag("--adopt-new-ca", f.coord.adopt_new_ca,
              "record this coordinator's CA in the database in place of a lost one (every agent must join again)");
  c->add_option("--advertise-address", f.coord.advertise_address,
                "HOST[:PORT] agents and users dial, written to agent-join.txt and login.txt (default: the --listen "
                "host, or this machine's name when that is a wildcard)");
  c->add_option("--shared-dir", f.coord.shared_dir,
                "PKI, artifacts and secrets shared by coordinators on one PostgreSQL database (default: DATA_DIR)");
  c->add_option("--policy-file", f.coord.policy_file,
                "scheduling policies, data classes and trusted nodes YAML (docs/scheduling.md)");
  c->add_option("--heartbeat-interval-ms", f.coord.options.heartbeat_interval_ms)->capture_default_str();
  c->add_option("--heartbeat-margin", f.coord.options.heartbeat_margin)->capture_default_str();
  c->add_option("--ack-timeout-ms", f.coord.options.ack_timeout_ms, "assignments not acknowledged by then go elsewhere")
      ->capture_default_str();
  c->add_option("--log-head-bytes", f.coord.options.log_cap.head_bytes,
                "per task, the first bytes of output kept in the store")
      ->capture_default_str();
  c->add_option("--log-tail-bytes", f.coord.options.log_cap.tail_bytes,
                "per task, the last bytes of output kept (what lies between is dropped and counted)")
      ->capture_default_str();
  c->add_option("--retention", f.retention,
                "how long a settled job is kept when its manifest names no retention "
                "(then deleted with its logs and the artifacts only it held; 0: forever)")
      ->capture_default_str();
  c->add_option("--max-queued-tasks", f.coord.options.default_quota.max_queued_tasks,
                "per account, unless its own quota says otherwise (0: no limit)")
      ->capture_default_str();
  c->add_option("--max-running-tasks", f.coord.options.default_quota.max_running_tasks, "per account (0: no limit)")
      ->capture_default_str();
  c->add_option("--max-stored-bytes", f.coord.options.default_quota.max_stored_bytes,
                "per account: artifacts it holds and its jobs' logs (0: no limit)")
      ->capture_default_str();
  c->add_option("--rate-limit", f.coord.options.rate_limits.per_token.per_second,
                "API calls per second per token (0: off); a flood is answered ResourceExhausted")
      ->capture_default_str();
  c->add_option("--rate-burst", f.coord.options.rate_limits.per_token.burst, "calls a token may make at once")
      ->capture_default_str();
  c->add_option("--webhook-allow", f.coord.options.webhook_allow,
                "a HOST or HOST:PORT jobs' and workflows' callback URLs may name (repeatable; docs/webhooks.md)");
}

// --trusted-image-key to --skopeo: which images jobs may name.
void AddCoordinatorImageFlags(CLI::App* c, CoordinatorFlags& f) {
  c->add_option("--trusted-image-key", f.coord.trusted_image_key_files,
                "public-key file (idlegrid image keygen) whose signatures make an image acceptable; repeatable")
      ->check(CLI::ExistingFile);
  c->add_flag("--require-signed-images", f.coord.options.require_signed_images,
              "refuse jobs whose image has no valid signature by a --trusted-image-key");
  c->add_option("--allow-registry", f.coord.allow_registries,
                "an OCI registry HOST[:PORT] jobs may name images from, by digest (repeatable; docs/registries.md)");
  c->add_flag("--allow-registry-tags", f.coord.options.registries.allow_tags,
              "let jobs name an allowed registry's image by tag: resolved to its digest at submit");
  c->add_option("--registry-ca", f.coord.registry_cas,
                "HOST[:PORT]=CA_FILE: also trust this CA (PEM) for that registry's TLS (repeatable)");
  c->add_option("--skopeo", f.coord.skopeo, "skopeo binary, which reads registries")->capture_default_str();
}

// Verification (docs/verification.md).
void AddCoordinatorVerificationFlags(CLI::App* c, CoordinatorFlags& f) {
  c->add_option("--default-verification", f.default_verification,
                "verification for jobs that name none: none, replicate, adaptive or challenge (docs/verification.md)")
      ->capture_default_str();
  c->add_option("--verification-trust-threshold", f.coord.options.verification.trust_threshold,
                "adaptive: verified results in a row before a provider's results are only audited")
      ->capture_default_str();
  c->add_option("--verification-audit-floor", f.coord.options.verification.audit_floor,
                "adaptive: the least share of a trusted provider's results still replicated; "
                "challenge: the share replicated to add known answers")
      ->capture_default_str();
  c->add_option("--verification-unproven-share", f.coord.options.verification.unproven_share,
                "the most of the verified work in flight that providers not yet trusted for its image hold "
                "together while a trusted one could take it (1: no cap)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  c->add_option("--verification-known-answer-rate", f.coord.options.verification.known_answer_rate,
                "adaptive: the chance that a result accepted on a trusted provider's word brings it a "
                "known-answer check (0: none)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  c->add_option("--verification-dispute-margin", f.coord.options.verification.dispute_margin,
                "how far a split's winning group must lead the others (1: a plain majority)")
      ->capture_default_str();
}

// The ledger (docs/ledger.md): off unless asked for; then the readiness
// benchmark's.
void AddCoordinatorLedgerAndBenchFlags(CLI::App* c, CoordinatorFlags& f) {
  c->add_flag("--ledger", f.coord.options.ledger.enabled,
              "keep the ledger: escrow each job's maxCost at submit, charge succeeded attempts, refund the rest");
  c->add_option("--ledger-fee-ppm", f.coord.options.ledger.policy.fee_ppm,
                "operator's share of each released charge, parts per million")
      ->capture_default_str();
  c->add_option("--ledger-dispute-window", f.dispute_window, "how long a charge stays pending before its release")
      ->capture_default_str();
  c->add_option("--ledger-slash", f.slash_credits, "credits taken from a provider's stake per proven misbehaviour")
      ->capture_default_str();
  c->add_option("--ledger-slash-to-requester-ppm", f.coord.options.ledger.policy.slash_to_requester_ppm,
                "share of a slash paid to the harmed requester, parts per million")
      ->capture_default_str();
  c->add_flag("--allow-simulated-gpus", f.coord.options.allow_simulated_gpus,
              "accept agents advertising simulated GPUs (tests and demos only)");
  c->add_option("--bench-binary", f.coord.bench_binary, "static readiness benchmark (default: beside this binary)");
  c->add_option("--gpu-bench-binary", f.coord.gpu_bench_binary,
                "GPU readiness benchmark (default: beside this binary)");
  c->add_option("--bench-iterations", f.coord.options.bench_iterations)->capture_default_str();
  c->add_option("--gpu-bench-rounds", f.coord.options.gpu_bench_rounds,
                "GPU readiness benchmark: rounds per device thread")
      ->capture_default_str();
  c->add_option("--min-cpu-score", f.coord.options.min_cpu_score, "slowest plausible benchmark score (rounds/s)")
      ->capture_default_str();
}

// Checks the flags that are parsed only now, then runs the coordinator.
int RunCoordinatorCommand(CoordinatorFlags& f) {
  idlegrid::api::CoordinatorConfig& coord = f.coord;
  if (f.retention != "0") {
    auto secs = idlegrid::manifest::ParseDurationSeconds(f.retention);
    if (!secs.ok()) {
      std::cerr << "--retention: " << secs.status().message() << "\n";
      return 2;
    }
    coord.options.default_retention_seconds = static_cast<uint32_t>(*secs);
  } else {
    coord.options.default_retention_seconds = 0;
  }
  auto mode = idlegrid::verify::ParseMode(f.default_verification);
  if (!mode) {
    std::cerr << "--default-verification: \"" << f.default_verification
              << "\" is not one of none, replicate, adaptive, challenge\n";
    return 2;
  }
  coord.options.verification.default_mode = *mode;
  auto lifetime = idlegrid::manifest::ParseDurationSeconds(f.tls_lifetime);
  auto renew = idlegrid::manifest::ParseDurationSeconds(f.tls_renew_before);
  if (!lifetime.ok() || !renew.ok() || *renew >= *lifetime) {
    std::cerr << (!lifetime.ok() ? "--tls-cert-lifetime: " + lifetime.status().message()
                  : !renew.ok()  ? "--tls-renew-before: " + renew.status().message()
                                 : std::string("--tls-renew-before must be shorter than --tls-cert-lifetime"))
              << "\n";
    return 2;
  }
  coord.tls_lifetime = {static_cast<int64_t>(*lifetime), static_cast<int64_t>(*renew)};
  auto window = idlegrid::manifest::ParseDurationSeconds(f.dispute_window);
  auto slash = idlegrid::ledger::ParseCredits(f.slash_credits);
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
  // A PostgreSQL server that does not answer must not hold a connection
  // attempt (or /readyz) for minutes: libpq reads this unless --db sets
  // connect_timeout. Set before any thread starts.
  ::setenv("PGCONNECT_TIMEOUT", "10", /*overwrite=*/0);
  return idlegrid::api::RunCoordinator(coord);
}

// `coordinator`: run the control plane.
void RegisterCoordinatorCommand(CLI::App& app, idlegrid::cli::CommandRegistry& reg) {
  auto f = std::make_shared<CoordinatorFlags>();
  auto* c = app.add_subcommand("coordinator", "run the control plane");
  AddCoordinatorServerFlags(c, *f);
  AddCoordinatorImageFlags(c, *f);
  AddCoordinatorVerificationFlags(c, *f);
  AddCoordinatorLedgerAndBenchFlags(c, *f);
  reg.Add(c, [f] { return RunCoordinatorCommand(*f); });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"idlegrid: a grid of idle GPUs and CPUs for batch ML and simulation jobs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("idlegrid ") + idlegrid::BuildVersion());
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")->capture_default_str();

  // In the order `idlegrid --help` lists them.
  idlegrid::cli::CommonFlags common;
  idlegrid::cli::CommandRegistry reg;
  RegisterCoordinatorCommand(app, reg);
  idlegrid::cli::RegisterAgentCommands(app, reg, common);
  idlegrid::cli::RegisterJobCommands(app, reg, common);
  idlegrid::cli::RegisterReceiptCommands(app, reg, common);
  idlegrid::cli::RegisterJobControlCommands(app, reg, common);
  idlegrid::cli::RegisterImageCommands(app, reg, common);
  idlegrid::cli::RegisterAccountCommands(app, reg, common);
  idlegrid::cli::RegisterOpsCommands(app, reg);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  SetupLogging(log_level);
  return reg.RunChosen();
}
