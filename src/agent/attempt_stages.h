#pragma once
// The pure parts of an attempt's stages (attempt_runner.h does the I/O around
// them): what the container is started with, which assigned GPUs it gets, and
// the report an outcome becomes. Plus the two guards that make every way out
// of an attempt clean up the same way.
#include <string>
#include <vector>

#include "agent/attempt_env.h"
#include "agent/outcome.h"
#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "runtime/container_runtime.h"

namespace idlegrid::agent {

// An attempt's report of `event`, with nothing else set.
v1::ReportAttemptRequest AttemptEvent(const std::string& attempt_id, v1::AttemptEvent event);

// The final report for `outcome` (EXITED, STOPPED or ERRORED), outputs not
// yet added: EXITED carries the exit code, and the reason and message when
// the outcome has them; ERRORED its reason and message.
v1::ReportAttemptRequest OutcomeReport(const std::string& attempt_id, const Outcome& outcome);

// Where an attempt's files are on the host, once prepared.
struct RunLayout {
  std::string container_name;
  std::string image_id;
  std::string out_dir;         // mounted read-write at the job's outputPath
  std::string checkpoint_dir;  // "" unless the job checkpoints
  // Mounted read-write at runtime::kJobHomeDir, holding kCacheDirName; ""
  // for none (then HOME names a directory of the image, likely read-only).
  std::string home_dir;
  std::vector<std::string> input_paths;  // one per spec input, in order, read-only
  std::vector<std::string> gpu_uuids;    // real GPUs only (SelectGpus)
  uint32_t host_user_processes = 0;
};

// The cache directory inside the job's HOME (XDG_CACHE_HOME).
inline constexpr char kCacheDirName[] = ".cache";

// The container an assignment runs in. The job's env comes first, then
// IDLEGRID_TASK_INDEX, _TASK_COUNT, _JOB_ID (and _CHECKPOINT_DIR); mounts are
// outputs, checkpoint, inputs. With a layout.home_dir, HOME and
// XDG_CACHE_HOME (kJobHomeDir and its kCacheDirName) follow unless the job's
// env sets them, and the home directory is mounted last, unless another
// mount is at kJobHomeDir or above it (HOME is then in that one). Tasks of an
// array job share a sandbox group unless they checkpoint (a checkpoint
// directory is synced while its container runs, so it keeps a container per
// attempt).
runtime::RunSpec BuildRunSpec(const v1::Assignment& a, const RunLayout& layout);

// The assigned GPUs to pass into the container: the real ones among
// `host_gpus` (simulated ones exist only in the advertisement).
// FailedPrecondition when an assigned GPU is not on this host: a job never
// runs without the GPU it was placed (and priced) for.
Result<std::vector<std::string>> SelectGpus(const v1::Assignment& a, const std::vector<v1::GpuDevice>& host_gpus);

// The attempt's scratch directory: removed, with all it holds, however the
// attempt ends (the one place that cleans it up): early by Remove() (before
// the attempt's end is reported) or else on destruction.
class ScratchDir {
 public:
  explicit ScratchDir(std::string path) : path_(std::move(path)) {}
  ~ScratchDir() { Remove(); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  // Idempotent; a failure is logged, not retried.
  void Remove();

 private:
  const std::string path_;
  bool removed_ = false;
};

// An attempt's capacity hold, taken by AttemptHost::ReserveCapacity: released
// early by Release() (once the container is gone) or else on destruction.
class CapacityHold {
 public:
  CapacityHold(AttemptHost* host, std::string attempt_id) : host_(host), attempt_id_(std::move(attempt_id)) {}
  ~CapacityHold() { Release(); }
  CapacityHold(const CapacityHold&) = delete;
  CapacityHold& operator=(const CapacityHold&) = delete;
  void Release();

 private:
  AttemptHost* const host_;
  const std::string attempt_id_;
  bool released_ = false;
};

}  // namespace idlegrid::agent
