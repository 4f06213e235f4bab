#pragma once
// `idlegrid agent pause [--for 2h] [--gpu N]` and `idlegrid agent resume`: the
// owner's word, written to the agent's data directory (agent/owner_command.h)
// where its pause watcher reads it at its next poll.
#include <string>
#include <vector>

namespace idlegrid::cli {

// Exit codes: 0 done, 2 bad arguments, 1 the file could not be written.
int AgentPause(const std::string& data_dir, const std::string& for_text, const std::vector<std::string>& gpus);
int AgentResume(const std::string& data_dir);

}  // namespace idlegrid::cli
