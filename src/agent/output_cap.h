#pragma once
// Pure: the cap on what an attempt writes to its writable directories (HOME,
// output and checkpoint) together (resources.disk, proto output_bytes), and
// the verdict on a measured total. The watcher (output_watch.h) measures
// while the container runs; the runner measures again before uploading
// anything; both ask here.
#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::agent {

// An agent's total cap for an attempt whose job sets none.
inline constexpr uint64_t kDefaultAttemptDiskBytes = 10ull << 30;

struct OutputCap {
  uint64_t bytes = 0;
  bool from_job = false;  // the job's resources.disk, not the node's default
};

// The job's output_bytes when it sets one, else the node's default.
OutputCap ResolveOutputCap(const v1::Resources& resources, uint64_t node_default_bytes);

// When a total is judged: while the container runs (passing the cap kills
// it) or once it has ended, before any output is uploaded (passing the cap
// uploads nothing).
enum class OutputCheck { kWhileRunning, kBeforeUpload };

// Why `used` (a measured total) breaks `cap`, as the attempt's failure
// message, e.g. "wrote more than 1Gi (resources.disk) to its home, output
// and checkpoint directories; killed"; nullopt while it is at most
// cap.bytes. A total that could not be measured breaks it too, saying why:
// what the agent cannot see it cannot hold to the cap.
std::optional<std::string> OutputCapBreach(const Result<uint64_t>& used, const OutputCap& cap, OutputCheck when);

}  // namespace idlegrid::agent
