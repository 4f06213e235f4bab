#pragma once
// How the idlegrid binary's subcommands are declared and run: each CLI module
// adds its subcommands, their flags and what runs them (Register...Commands in
// cli/command_groups.h); main() parses and runs the one chosen.
#include <CLI/CLI.hpp>

#include <functional>
#include <vector>

#include "cli/commands.h"

namespace idlegrid::cli {

// A subcommand and what runs it once CLI11 has parsed it; `run` returns the
// process exit code.
struct Command {
  CLI::App* sub;
  std::function<int()> run;
};

class CommandRegistry {
 public:
  // Commands are tried in the order added, so a command's own subcommands
  // (agent join, nodes drain, receipt verify) are added before it.
  void Add(CLI::App* sub, std::function<int()> run);
  // Runs the first command parsed; 2 (a usage error, as CLI11's own) when none was.
  int RunChosen() const;

 private:
  std::vector<Command> commands_;
};

// --addr, --ca-file, --token, --config and --json: how a client subcommand
// reaches the coordinator, and how it prints.
void AddClientFlags(CLI::App* sub, CommonFlags& common);

}  // namespace idlegrid::cli
