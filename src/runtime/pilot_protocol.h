#pragma once
// Pure parts of the pilot path (pilot_pool.h): which attempts may share a
// sandbox, the key of the sandbox they share, and the frames exchanged with
// the pilot program (src/runtime/pilot/pilot.c, which documents the format).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runtime/podman_args.h"

namespace idlegrid::runtime {

// Where the pilot program is mounted in its container, and its path there.
inline constexpr char kPilotMountDir[] = "/.idlegrid";
inline constexpr char kPilotProgram[] = "/.idlegrid/pilot";
// Writable tmpfs directories of the sandbox (oci_config.cc) that the pilot
// clears before each task; the job's own writable mounts are emptied by the
// agent instead (their contents are the task's outputs).
inline const std::vector<std::string> kPilotClearedDirs = {"/tmp",     "/var/tmp",    "/run",
                                                           "/dev/shm", "/dev/mqueue", "/dev"};
// Frames larger than this are refused both ways.
inline constexpr uint32_t kMaxPilotFrame = 1 << 20;

// Ok when `spec` may run in a shared pilot sandbox: it names a sandbox group,
// asks for runc without GPUs, and every read-only mount says what it holds
// (content_digest), so that one copy serves every task of the group.
// FailedPrecondition saying why not otherwise.
Status PilotEligible(const RunSpec& spec);

// Attempts with equal keys get identical sandboxes: same group, image,
// runtime, resources and mounts (container paths, modes, contents). Expects
// an eligible spec.
std::string PilotKey(const RunSpec& spec);

// The request frame asking the pilot to run one task. InvalidArgument when a
// string holds a NUL byte, argv is empty, or the frame would be too large.
Result<std::string> EncodePilotRequest(const std::string& cwd, const std::vector<std::string>& argv,
                                       const std::vector<std::string>& env);

struct PilotReply {
  enum class Kind { kExit, kExecFailed, kUnclean };
  Kind kind = Kind::kExit;
  int exit_code = -1;  // kExit: 0-255 (128+N for signal N)
  std::string text;    // kExecFailed, kUnclean: the pilot's words
  // kExit: user + system CPU time of the task's processes, in microseconds,
  // as the pilot measured it (getrusage(RUSAGE_CHILDREN) around the task: it
  // waits for every process of the task, orphans included, being their
  // init). Absent from a pilot that does not report it.
  std::optional<uint64_t> cpu_usec;
};

// The most CPU time a reply may claim (about 146 years of one core): a
// larger figure is a malformed frame, not a measurement.
inline constexpr uint64_t kMaxPilotCpuUsec = uint64_t{1} << 62;

// Accumulates bytes read from the pilot's reply pipe. The pilot runs inside
// the job's sandbox, so its bytes are untrusted: anything but one well-formed
// frame is DataLoss.
class PilotReplyReader {
 public:
  // nullopt while the frame is incomplete; then the reply or the error.
  std::optional<Result<PilotReply>> Feed(std::string_view bytes);

 private:
  std::string buffer_;
};

}  // namespace idlegrid::runtime
