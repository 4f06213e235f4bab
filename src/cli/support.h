#pragma once
// What every client subcommand shares: connecting, printing JSON, failing
// with the one exit-code mapping.
#include <google/protobuf/message.h>

#include <memory>

#include "cli/client.h"
#include "cli/commands.h"
#include "common/status.h"

namespace idlegrid::cli {

// Prints "error: ..." and returns the exit code for it (common/exit_code.h).
int Fail(const Status& st);
void PrintJson(const google::protobuf::Message& m, bool one_line = false);
Result<std::unique_ptr<Client>> Open(const CommonFlags& f);

}  // namespace idlegrid::cli
