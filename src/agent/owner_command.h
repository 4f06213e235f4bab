#pragma once
// `idlegrid agent pause [--for 2h] [--gpu N]` and `idlegrid agent resume`
// (docs/provider.md, "Pausing by hand"): the CLI writes (or removes) a small
// file in the agent's data directory, which the pause watcher reads each
// poll. A file, not an RPC: the agent listens on nothing (it dials out only),
// and the file survives an agent restart, so a pause the owner asked for
// holds until they resume or it expires. This is the pure part: the file's
// text, expiry, and which GPUs the owner keeps back.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::agent {

struct OwnerCommand {
  int64_t since_ms = 0;           // when the owner asked (wall clock)
  int64_t until_ms = 0;           // --for: it ends then; 0: until `agent resume`
  std::string for_text;           // the --for duration as the owner wrote it ("2h")
  std::vector<std::string> gpus;  // --gpu: these GPUs (index or UUID) only; empty: the whole node
};

// <data-dir>/owner-pause
std::string OwnerCommandPath(const std::string& data_dir);
// "since_ms N\nuntil_ms N\nfor 2h\ngpu 0\n..."
std::string FormatOwnerCommand(const OwnerCommand& c);
// InvalidArgument naming the line for anything else.
Result<OwnerCommand> ParseOwnerCommand(const std::string& text);
bool OwnerCommandExpired(const OwnerCommand& c, int64_t now_ms);
// For people and NodePause.reason: "the owner ran idlegrid agent pause --for 2h".
std::string DescribeOwnerCommand(const OwnerCommand& c);

// Whether `text` can name a GPU: an index ("0") or an NVML UUID ("GPU-...",
// "MIG-..."). lendGpus and `agent pause --gpu` take the same.
bool IsGpuSelector(const std::string& text);
// Whether `selector` (an index "0" or a UUID "GPU-...") names `d`.
bool GpuSelected(const std::vector<std::string>& selectors, const v1::GpuDevice& d);
// Why the owner keeps `d` back, or "": not in lendGpus, or paused by
// `agent pause --gpu`. The coordinator offers a held device to no job.
std::string GpuOwnerHold(const std::optional<std::vector<std::string>>& lend_gpus,
                         const std::optional<OwnerCommand>& command, const v1::GpuDevice& d);

}  // namespace idlegrid::agent
