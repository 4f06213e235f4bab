#pragma once
// The idlegrid binary's subcommands, one Register function per group. main()
// calls them in this order, which is the order `idlegrid --help` lists them
// in; the coordinator's own (it needs ig_api) is in main.cc.
#include <CLI/CLI.hpp>

#include "cli/command_registry.h"
#include "cli/commands.h"

namespace idlegrid::cli {

// agent_cli.cc: agent, and its join, status, pause, resume and unit.
void RegisterAgentCommands(CLI::App& app, CommandRegistry& reg, CommonFlags& common);
// job_cli.cc: submit, validate, status, market, jobs, workflows, nodes (drain,
// undrain), logs, fetch.
void RegisterJobCommands(CLI::App& app, CommandRegistry& reg, CommonFlags& common);
// receipt_cli.cc: receipt, receipt verify.
void RegisterReceiptCommands(CLI::App& app, CommandRegistry& reg, CommonFlags& common);
// job_cli.cc: cancel, retry, abandon.
void RegisterJobControlCommands(CLI::App& app, CommandRegistry& reg, CommonFlags& common);
// image_cli.cc: image (push, build, base, keygen, sign), artifact push.
void RegisterImageCommands(CLI::App& app, CommandRegistry& reg, CommonFlags& common);
// account_cli.cc: account, token, ledger, provider, join-token, delete.
void RegisterAccountCommands(CLI::App& app, CommandRegistry& reg, CommonFlags& common);
// ops_cli.cc: login, backup, restore.
void RegisterOpsCommands(CLI::App& app, CommandRegistry& reg);

}  // namespace idlegrid::cli
