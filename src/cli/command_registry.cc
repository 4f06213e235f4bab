#include "cli/command_registry.h"

#include <utility>

namespace idlegrid::cli {

void CommandRegistry::Add(CLI::App* sub, std::function<int()> run) {
  commands_.push_back(Command{sub, std::move(run)});
}

int CommandRegistry::RunChosen() const {
  for (const Command& command : commands_) {
    if (*command.sub) return command.run();
  }
  return 2;
}

void AddClientFlags(CLI::App* sub, CommonFlags& common) {
  sub->add_option("--addr", common.config.address, "coordinator gRPC address (env IDLEGRID_ADDR)");
  sub->add_option("--ca-file", common.config.ca_file, "coordinator CA certificate (env IDLEGRID_CA_FILE)");
  sub->add_option("--token", common.config.token, "API token (env IDLEGRID_TOKEN)");
  sub->add_option("--config", common.config_file, "client config YAML (env IDLEGRID_CONFIG)");
  sub->add_flag("--json", common.json, "machine-readable output");
}

}  // namespace idlegrid::cli
