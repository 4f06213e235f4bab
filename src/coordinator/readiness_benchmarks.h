#pragma once
// Readiness benchmarks as a service: a node takes no ordinary work until it
// ran the coordinator's benchmark through the real sandbox with the right
// answer, and each real GPU likewise, one job pinned to each device
// (docs/provider.md). This service builds and registers the two benchmark
// images, creates the pinned jobs nodes need, and judges those jobs when
// they end. What a node measured stays the node table's (it is part of what
// the node is); the service reads and replaces it through hooks.
//
// Thread-safe. Its lock is a leaf: NodeTable::mu_ may be held when
// CpuBenchError or GpuBenchError is called, and no hook is called with it
// held. Store, artifacts, catalog and clock are injected.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "artifacts/artifact_store.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "coordinator/image_catalog.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "store/store.h"

namespace idlegrid::coordinator {

class ReadinessBenchmarks {
 public:
  struct Options {
    uint64_t bench_iterations = 0;  // CPU kernel rounds per run
    double min_cpu_score = 0;       // the slowest score (rounds/s) still taken as an honest CPU
    uint64_t gpu_bench_rounds = 0;  // rounds per device thread
    int bench_retry_ms = 0;         // a failed benchmark is run again after this long
  };
  // A node that may run a benchmark now: online, connected, not draining,
  // advertised.
  struct Candidate {
    std::string node_id;
    v1::Advertisement ad;
    v1::Measurement measurement;
  };
  struct Hooks {
    std::function<std::vector<Candidate>()> candidates;
    // The node's advertisement; nullopt when the node table has no such node.
    std::function<std::optional<v1::Advertisement>(const std::string& node_id)> advertisement;
    // Edits the node's measurement in the node table (given its current
    // advertisement) and stores it; false when there is no such node.
    std::function<bool(const std::string& node_id,
                       const std::function<void(v1::Measurement&, const v1::Advertisement&)>& edit)>
        update_measurement;
    std::function<void()> changed;  // a node may be schedulable now, or no longer
  };

  ReadinessBenchmarks(store::Store* store, artifacts::ArtifactStore* artifacts, ImageCatalog* images,
                      const Clock* clock, Options options, Hooks hooks)
      : store_(store),
        artifacts_(artifacts),
        images_(images),
        clock_(clock),
        options_(options),
        hooks_(std::move(hooks)) {}

  // Builds the CPU benchmark image from the static benchmark program and
  // registers it. Until it succeeds no node becomes schedulable.
  Status PrepareCpu(const std::string& bench_binary, const std::string& work_dir) IG_EXCLUDES(mu_);
  // The same for the GPU benchmark; without it real GPUs are not offered
  // (they cannot be measured), with this error as their reason.
  Status PrepareGpu(const std::string& gpu_bench_binary, const std::string& work_dir) IG_EXCLUDES(mu_);

  // Creates the benchmark jobs the candidates need now: a CPU benchmark for a
  // node not measured for its current stack (a failed one again after
  // bench_retry_ms), then one per real GPU its owner lends. The loop's.
  void Ensure() IG_EXCLUDES(mu_);
  // Judges a benchmark job once it settled (any other job is ignored): the
  // node's measurement is replaced (CPU) or its device's entry (GPU).
  void Judge(const std::string& job_id) IG_EXCLUDES(mu_);
  void Judge(const v1::Job& job) IG_EXCLUDES(mu_);  // as read after the report that ended it
  // The node went offline: its benchmark jobs (failed as node_lost) are no
  // longer waited for.
  void ForgetNode(const std::string& node_id) IG_EXCLUDES(mu_);

  // Why no node can be measured yet ("" when nothing stands in the way).
  std::string CpuBenchError() const IG_EXCLUDES(mu_);
  // Why no GPU can be measured ("" once the GPU image is ready).
  std::string GpuBenchError() const IG_EXCLUDES(mu_);

  // The spec of a benchmark job pinned to `node_id` (pure).
  static v1::JobSpec Spec(const std::string& node_id, const std::string& image, const std::string& entrypoint,
                          const std::vector<std::string>& args);

 private:
  // One node's benchmarks in flight ("pending" while a job is being created).
  struct InFlight {
    std::string cpu_job;
    int64_t cpu_failed_ms = 0;                    // when the last CPU benchmark failed
    std::map<std::string, std::string> gpu_jobs;  // device uuid -> job
  };
  struct Needed {
    std::string node_id;
    std::string device_uuid;  // "" for the CPU benchmark
  };
  // Registers the image an archive builder made; its manifest digest.
  Result<std::string> Import(const std::function<Status(const std::string&)>& build, const std::string& archive);
  std::vector<Needed> Plan(const std::vector<Candidate>& nodes, bool gpu_image) IG_EXCLUDES(mu_);
  v1::JobSpec GpuSpec(const std::string& node_id, const std::string& image, const std::string& uuid) const;
  void Create(const Needed& need, const v1::JobSpec& spec) IG_EXCLUDES(mu_);
  void JudgeCpu(const v1::Job& job) IG_EXCLUDES(mu_);
  void JudgeGpu(const v1::Job& job) IG_EXCLUDES(mu_);

  store::Store* const store_;
  artifacts::ArtifactStore* const artifacts_;
  ImageCatalog* const images_;
  const Clock* const clock_;
  const Options options_;
  const Hooks hooks_;

  mutable Mutex mu_;
  std::string cpu_image_ IG_GUARDED_BY(mu_);  // manifest digest, once prepared
  std::string cpu_error_ IG_GUARDED_BY(mu_);  // why there is none
  std::string gpu_image_ IG_GUARDED_BY(mu_);
  std::string gpu_error_ IG_GUARDED_BY(mu_) = "no GPU readiness benchmark on the coordinator";
  std::map<std::string, InFlight> in_flight_ IG_GUARDED_BY(mu_);
};

}  // namespace idlegrid::coordinator
