#pragma once
// What every client subcommand shares: connecting, printing JSON, failing
// with the one exit-code mapping.
#include <google/protobuf/message.h>

#include <memory>
#include <string>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "common/status.h"

namespace idlegrid::cli {

// Prints "error: ..." and returns the exit code for it (common/exit_code.h).
int Fail(const Status& st);
void PrintJson(const google::protobuf::Message& m, bool one_line = false);
Result<std::unique_ptr<Client>> Open(const CommonFlags& f);

// Uploads an OCI archive and registers it as an image: the coordinator checks
// every digest in it. What `image push` and `image build` both do. Shows the
// upload's progress on stderr (cli/progress.h; nothing with `json`).
Result<v1::PushImageResponse> PushImageArchive(Client& client, const std::string& archive, bool make_public, bool json);
// How progress shows on stderr: nothing with --json, a bar on a terminal.
ProgressStyle StderrProgressStyle(bool json);
// Prints a pushed image: the response as JSON with --json, else `reference`.
void PrintPushedImage(const CommonFlags& f, const v1::PushImageResponse& pushed, const std::string& reference);

}  // namespace idlegrid::cli
