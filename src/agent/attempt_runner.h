#pragma once
// One attempt, from admission to cleanup, as stages:
//   admission -> ACCEPTED -> fetch (image) -> prepare (scratch, checkpoint
//   restore, inputs, GPUs, provenance) -> run (STARTED, logs, checkpoints) -> collect
//   (final checkpoint, outcome, outputs) -> report (EXITED/STOPPED/ERRORED)
// Each stage returns its result or the Status that ends the attempt; Run()
// turns that into the one final report. Which event and reason a run ends
// with is decided by the pure DecideOutcome (outcome.h); what the container
// is started with by BuildRunSpec (attempt_stages.h).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/attempt_env.h"
#include "agent/attempt_stages.h"
#include "agent/checkpoint_sync.h"
#include "agent/metering.h"
#include "agent/outcome.h"
#include "agent/output_cap.h"

namespace idlegrid::agent {

class AttemptRunner {
 public:
  // Its transfers are counted for the attempt's metering.
  explicit AttemptRunner(AttemptEnv env) : counted_(env.artifacts), env_(Counted(std::move(env), &counted_)) {}

  // Runs `a` to its end, blocking (each attempt has its own thread). Reports
  // REJECTED when the node will not take it; otherwise ACCEPTED, then (unless
  // ACCEPTED was not delivered: the coordinator no longer wants it) exactly
  // one of STOPPED, ERRORED or EXITED, with STARTED and CHECKPOINTED between.
  // Its capacity hold is released and its scratch directory removed on every
  // path; reports that cannot be delivered are logged.
  void Run(const v1::Assignment& a);

 private:
  // What the prepare stage made: the container to run and, for a
  // checkpointing job, the sync of its checkpoint directory.
  struct PreparedRun {
    runtime::RunSpec spec;
    std::string out_dir;
    std::unique_ptr<CheckpointSync> checkpoint;
    // What the job may write to (its output, checkpoint and home directories),
    // held together to `output_cap`.
    std::vector<std::string> writable_dirs;
    OutputCap output_cap;
    // Reported with STARTED, and with EXITED in case STARTED was lost.
    v1::Provenance provenance;
    // When the container started and when its Run returned (wall clock, ms).
    int64_t started_ms = 0;
    int64_t finished_ms = 0;
    // What NVML read of its real GPUs while the container ran (GpuSampler).
    std::vector<v1::GpuUsage> gpu_usage;
  };

  static AttemptEnv Counted(AttemptEnv env, CountingTransfer* counted) {
    env.artifacts = counted;
    return env;
  }

  // Stage admission: the REJECTED report if this node will not run `a`
  // (local policy, limits the runtime cannot enforce, no free capacity);
  // otherwise none, and the attempt's capacity is held.
  std::optional<v1::ReportAttemptRequest> Admit(const v1::Assignment& a);
  // Stage prepare: the scratch directories, the restored checkpoint, the
  // downloaded inputs and the GPUs, all under `scratch`; and the attempt's
  // provenance record, from the container spec, the runtime and the node.
  Result<PreparedRun> Prepare(const v1::Assignment& a, const std::string& image_id, const ScratchDir& scratch);
  Result<RunLayout> PrepareFiles(const v1::Assignment& a, const ScratchDir& scratch,
                                 std::unique_ptr<CheckpointSync>& checkpoint);
  Result<std::vector<std::string>> PrepareGpus(const v1::Assignment& a);
  // Input `in` at `local`: from the node's input cache (env_.inputs) when
  // the job's data class is public, else downloaded (and for `unpack`,
  // unpacked) for this attempt alone, gone with its scratch.
  Status ProvideInput(const std::string& attempt_id, const v1::JobSpec& spec, const v1::InputSpec& in,
                      const std::string& local);
  // Stage run: the container, to its end; STARTED once it is spawned. An
  // OutputWatch kills it if its writable directories pass their cap; a
  // GpuSampler reads its real GPUs from its start to its exit.
  RunFacts RunContainer(const v1::Assignment& a, PreparedRun& run);
  // Stage collect, before the outcome is decided: stops the checkpoint sync,
  // measures the writable directories against their cap again (the watcher
  // looks only every so often), syncs the checkpoint once more if the run
  // did not clearly succeed and is within its cap, and lists the output
  // files, counted into `facts`.
  std::vector<std::string> CollectAfterRun(const std::string& attempt_id, PreparedRun& run, RunFacts& facts);
  // Stage collect, for an outcome that keeps them: uploads the outputs into
  // `report`. A failed upload fails the attempt.
  Status CollectOutputs(const std::string& out_dir, const std::vector<std::string>& files,
                        v1::ReportAttemptRequest& report);

  // Stage report, for an attempt ended by a failure: its scratch (when it
  // has one by then) and its capacity are freed first.
  void Fail(const std::string& attempt_id, v1::FailureReason reason, const Status& st, CapacityHold& hold,
            ScratchDir* scratch = nullptr);
  void ReportOrLog(const v1::ReportAttemptRequest& report);
  // Stage report, for EXITED: the attempt's metering in the node's signed
  // statement for its receipt. Without a node key, nothing is attached.
  void AttachReceiptStatement(const v1::Assignment& a, const PreparedRun& run, const RunFacts& facts,
                              v1::ReportAttemptRequest& done);

  CountingTransfer counted_;  // before env_, whose artifacts it is
  const AttemptEnv env_;
};

}  // namespace idlegrid::agent
