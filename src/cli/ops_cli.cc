// Getting in and keeping state: login (cli/login.h), backup and restore
// (ops/backup.h, docs/operations.md).
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command_groups.h"
#include "cli/login.h"
#include "common/exit_code.h"
#include "ops/backup.h"

namespace idlegrid::cli {
namespace {

struct OpsFlags {
  LoginOptions login;
  ops::BackupOptions backup;
  ops::RestoreOptions restore;
};

int RunBackup(const ops::BackupOptions& o) {
  auto report = ops::Backup(o);
  if (!report.ok()) {
    std::fprintf(stderr, "error: %s\n", report.status().message().c_str());
    return ExitCodeFor(report.status());
  }
  std::printf("backup %s: %s, %llu PKI and secret files, %llu artifacts (%llu bytes)\n", o.out_dir.c_str(),
              report->database_copied ? ("state.db " + std::to_string(report->database_bytes) + " bytes").c_str()
                                      : "no database (PostgreSQL: pg_dump it, docs/operations.md)",
              static_cast<unsigned long long>(report->files), static_cast<unsigned long long>(report->artifacts),
              static_cast<unsigned long long>(report->artifact_bytes));
  return 0;
}

int RunRestore(const ops::RestoreOptions& o) {
  if (Status st = ops::Restore(o); !st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return ExitCodeFor(st);
  }
  std::printf(
      "restored %s into %s: start the coordinator with --data-dir %s (same ports, or tell agents the new "
      "address); its agents reconnect as they were\n",
      o.backup_dir.c_str(), o.data_dir.c_str(), o.data_dir.c_str());
  return 0;
}

}  // namespace

void RegisterOpsCommands(CLI::App& app, CommandRegistry& reg) {
  auto f = std::make_shared<OpsFlags>();
  auto* login = app.add_subcommand("login", "pin a coordinator's CA, check your token and write your client config");
  login->add_option("url", f->login.url, "https://HOST:PORT of the coordinator (its DATA_DIR/login.txt)")->required();
  login->add_option("--token", f->login.token, "your API token (idlegrid token create)")->required();
  login->add_option("--ca-hash", f->login.ca_hash, "sha256:... of the coordinator's CA")->required();
  login->add_option("--config", f->login.config_file,
                    "where to write (default: $IDLEGRID_CONFIG, else ~/.config/idlegrid/config.yaml)");
  login->add_flag("--force", f->login.force, "replace a config file that exists");

  auto* backup = app.add_subcommand("backup", "copy a coordinator's state while it runs (docs/operations.md)");
  backup->add_option("out", f->backup.out_dir, "a new directory for the copy")->required();
  backup->add_option("--data-dir", f->backup.data_dir, "the coordinator's --data-dir")->required();
  backup->add_option("--shared-dir", f->backup.shared_dir, "its --shared-dir, if it has one");
  backup->add_option("--db", f->backup.db, "its --db, if not DATA_DIR/state.db");

  auto* restore = app.add_subcommand("restore", "put a backup into a new data directory (docs/operations.md)");
  restore->add_option("backup", f->restore.backup_dir, "a directory `idlegrid backup` wrote")->required();
  restore->add_option("--data-dir", f->restore.data_dir, "the new data directory (absent or empty)")->required();

  reg.Add(login, [f] { return Login(f->login); });
  reg.Add(backup, [f] { return RunBackup(f->backup); });
  reg.Add(restore, [f] { return RunRestore(f->restore); });
}

}  // namespace idlegrid::cli
