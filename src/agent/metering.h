#pragma once
// Metering an attempt and the node's statement for its receipt
// (docs/receipts.md). MeterAttempt and BuildStatement are pure; the
// CountingTransfer counts what an attempt's transfers move.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "agent/attempt_env.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::agent {

// What the agent observed of one run, in plain values.
struct MeterInputs {
  int64_t started_ms = 0;   // the container started (agent's wall clock)
  int64_t finished_ms = 0;  // its Run returned
  uint32_t gpus = 0;        // devices assigned
  uint32_t gpu_milli = 0;   // compute share of each (0 or 1000: whole)
  uint64_t cpu_usec = 0;    // from the runtime (runtime::ExitInfo)
  std::string cpu_source;   // "" when not measured
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  int64_t paused_ms = 0;  // frozen for the owner in between (runtime::ExitInfo)
  // What NVML read of each real GPU held while the job ran (GpuSampler).
  std::vector<v1::GpuUsage> gpu_usage;
};

// run_ms = finished - started - paused (0 if negative): the requester does
// not pay for time the owner froze the job; gpu_millis = run_ms x gpus x
// share, where a shared GPU (gpu_milli 1..999) counts gpu_milli/1000 of a
// device, rounded down; cpu_millis rounded down from microseconds; gpus the
// usage as given.
v1::Metering MeterAttempt(const MeterInputs& in);

// The node's statement about attempt `a` that ended with `exited` (an
// EXITED report: exit code, outputs, provenance), as its key will sign it.
// The node id is the provenance's: the one the node key derives.
v1::ReceiptStatement BuildStatement(const v1::Assignment& a, const v1::ReportAttemptRequest& exited,
                                    const v1::Metering& metering, int64_t started_ms, int64_t finished_ms);

// Counts the bytes one attempt's transfers move: the inputs and checkpoint it
// downloads, the outputs and checkpoints it uploads. The image is not
// counted: the node caches it for every attempt that uses it. Thread-safe
// (the checkpoint thread uploads too); `inner` must outlive it.
class CountingTransfer : public ArtifactTransfer {
 public:
  explicit CountingTransfer(ArtifactTransfer* inner) : inner_(inner) {}
  Status Download(const std::string& digest, const std::string& path) override;
  Result<v1::OutputFile> Upload(const std::string& path, const std::string& rel) override;
  uint64_t bytes_in() const { return bytes_in_.load(); }
  uint64_t bytes_out() const { return bytes_out_.load(); }

 private:
  ArtifactTransfer* const inner_;
  std::atomic<uint64_t> bytes_in_{0};
  std::atomic<uint64_t> bytes_out_{0};
};

}  // namespace idlegrid::agent
