#pragma once
// Pure: what an attempt's end means, from what the agent observed. The
// attempt runner (attempt_runner.cc) gathers the facts and does the I/O
// (uploads, the report); every rule about which event and failure reason a
// run ends with lives here.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "runtime/container_runtime.h"

namespace idlegrid::agent {

// Outputs are collected one artifact per file; a job may not flood the coordinator.
inline constexpr size_t kMaxOutputFiles = 10000;

struct RunFacts {
  bool cancelled = false;                                // the coordinator stopped it (cancel, drain, lease)
  Result<runtime::ExitInfo> exit = runtime::ExitInfo{};  // what the runtime returned
  uint32_t run_timeout_seconds = 0;                      // the job's runTimeout
  uint64_t memory_bytes = 0;                             // the job's memory limit
  size_t output_files = 0;                               // regular files the job left in its output directory
  // Set when what it wrote passed its total disk cap (OutputCapBreach's
  // message): while it ran (the watcher killed it) or at collect.
  std::optional<std::string> output_breach;
  // Set when the run did not succeed, for no reason of its own (a timeout,
  // its memory limit), and the node's scratch filesystem is full even
  // without the job's own files (capacity/disk_floor.h's reason): the
  // node's failure, not the job's.
  std::optional<std::string> disk_full;
};

struct Outcome {
  v1::AttemptEvent event = v1::EXITED;  // EXITED, STOPPED or ERRORED
  v1::FailureReason reason = v1::FAILURE_REASON_UNSPECIFIED;
  std::string message;
  int exit_code = 0;             // EXITED only
  bool collect_outputs = false;  // upload the output files with the report
};

// The rules, in order: a cancelled attempt is STOPPED whatever happened
// after; one that wrote past its total disk cap is ERRORED as DISK_LIMIT
// (the job's fault; whatever the runtime said after the kill, and nothing is
// uploaded); a run that failed on a full disk is ERRORED as a platform
// failure (the node's: the job may write what it declared, and its exit
// code is most likely the full disk's); a runtime or OCI-runtime failure is ERRORED as a platform
// failure (not the job's fault); more than kMaxOutputFiles outputs is
// ERRORED as the job's fault; otherwise EXITED with the exit code, marked RUN_TIMEOUT when
// the timeout stopped it or OUT_OF_MEMORY when it died of the memory limit,
// and its outputs are collected (also after a timeout or OOM: what it wrote
// is kept).
Outcome DecideOutcome(const RunFacts& facts);

// Whether the job's checkpoint directory is synced once more after the run:
// whatever it saved before being stopped or failing is what the next attempt
// resumes from; a success needs none, and one past its disk cap gets none
// (the checkpoint may be what passed it).
bool NeedsFinalCheckpoint(const RunFacts& facts);

}  // namespace idlegrid::agent
