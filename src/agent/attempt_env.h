#pragma once
// What one attempt needs from the world, as small interfaces: the Agent
// implements them with gRPC, its image cache and its node state; tests
// implement them with fakes (tests/agent/attempt_fakes_support.h), so a whole
// attempt runs without a coordinator, podman or a wall clock.
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "advert/node_key.h"
#include "agent/output_cap.h"
#include "agent/provenance.h"
#include "common/clock.h"
#include "common/status.h"
#include "discovery/nvml_loader.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "runtime/container_runtime.h"

namespace idlegrid::agent {

class LogShipper;

// Reports about an attempt, to the coordinator.
class AttemptReporter {
 public:
  virtual ~AttemptReporter() = default;
  // Delivers one report, adding the attempt's lease epoch when it has none.
  // Ok once the coordinator took it; its refusal (e.g. a stale epoch) as is,
  // or Unavailable when it stayed unreachable through the retries.
  // Thread-safe: an attempt's checkpoint thread reports too.
  virtual Status Report(const v1::ReportAttemptRequest& report) = 0;
};

// Content-addressed artifacts, to and from the coordinator.
class ArtifactTransfer {
 public:
  virtual ~ArtifactTransfer() = default;
  // Writes artifact `digest` to `path`, verified while it arrives. DataLoss on
  // a digest mismatch, the transport's error otherwise. Thread-safe.
  virtual Status Download(const std::string& digest, const std::string& path) = 0;
  // Uploads the file at `path`; the result names it `rel` with the digest and
  // size the coordinator stored. Thread-safe.
  virtual Result<v1::OutputFile> Upload(const std::string& path, const std::string& rel) = 0;
};

// The images attempts run from.
class ImageSource {
 public:
  virtual ~ImageSource() = default;
  // The runtime's id (64 hex) of the assignment's image, fetched, verified
  // and loaded first if the runtime does not have it. DataLoss when the
  // archive is not the image the coordinator named. Thread-safe.
  virtual Result<std::string> Ensure(const v1::Assignment& a) = 0;
  // The attempt that Ensure'd the image is over: the image may be evicted.
  virtual void Release(const v1::Assignment& a) {}
};

// The inputs attempts read, held on the node (agent/input_cache.h).
class InputSource {
 public:
  virtual ~InputSource() = default;
  // Places input `input` of attempt `attempt_id` at `dest`, which must not
  // exist: the artifact as a file, or for an `unpack` input its unpacked
  // directory, read-only, fetched first when the node lacks it. What
  // `attempt_id` uses stays on the node until Release(attempt_id). DataLoss
  // on a digest mismatch; InvalidArgument for a malformed digest or a hostile
  // directory archive (naming the entry); the transport's error otherwise.
  // Thread-safe.
  virtual Status Provide(const std::string& attempt_id, const v1::InputSpec& input, const std::string& dest) = 0;
  // The attempt is over: what it pinned may be evicted. Idempotent.
  virtual void Release(const std::string& attempt_id) = 0;
};

// The node-wide state an attempt takes part in: the owner's rules, the
// capacity holds, cancellations and the host's GPUs. Thread-safe: every
// attempt runs on its own thread.
class AttemptHost {
 public:
  virtual ~AttemptHost() = default;
  // Why this node will not take the assignment by its own choice (shutting
  // down, the owner's policy: local_policy.h CheckOwnerPolicy), or Ok. Limits
  // the runtime cannot enforce are the runner's check, not this one.
  virtual Status CheckLocalPolicy(const v1::Assignment& a) = 0;
  // Whether the owner's trustedImageKeys (if any) accept the assignment's
  // image by the signatures it carries (local_policy.h CheckImageTrust).
  // Checked before anything is fetched.
  virtual Status CheckImageSignatures(const v1::Assignment& a) = 0;
  // Holds the attempt's CPU, memory and devices until ReleaseCapacity, or says
  // why they do not fit next to what is already held.
  virtual Status ReserveCapacity(const v1::Assignment& a) = 0;
  // Frees the attempt's hold and has the node readvertise. Idempotent.
  virtual void ReleaseCapacity(const std::string& attempt_id) = 0;
  // Whether the coordinator asked to stop the attempt.
  virtual bool IsCancelled(const std::string& attempt_id) = 0;
  // The GPUs this host has now, real and simulated.
  virtual Result<std::vector<v1::GpuDevice>> Gpus() = 0;
  // The attempt's container name, unique among agents sharing the runtime.
  virtual std::string ContainerName(const std::string& attempt_id) const = 0;
  // Who this node is (id, key fingerprint, kernel, agent version) and the
  // devices it last discovered, for provenance records. Cheap: no discovery
  // runs here.
  virtual NodeFacts Facts() = 0;
};

// Everything an AttemptRunner uses; not owned, and must outlive it.
struct AttemptEnv {
  runtime::ContainerRuntime* runtime = nullptr;
  AttemptHost* host = nullptr;
  AttemptReporter* reporter = nullptr;
  ArtifactTransfer* artifacts = nullptr;
  ImageSource* images = nullptr;
  // Null: each attempt downloads (and unpacks) its own copy of each input.
  InputSource* inputs = nullptr;
  LogShipper* logs = nullptr;
  const Clock* clock = SystemClock::Get();  // attempts' start and end times
  // Each attempt's scratch (inputs, outputs, checkpoint) is <attempts_dir>/<attempt id>.
  std::string attempts_dir;
  // A real GPU is passed in only if one of these CDI specs exists (written by
  // `nvidia-ctk cdi generate`): a test points them at its own files.
  std::vector<std::string> cdi_spec_paths = {"/etc/cdi/nvidia.yaml", "/var/run/cdi/nvidia.yaml"};
  // The cap on what an attempt writes to its output and checkpoint
  // directories together when its job sets none (resources.output_bytes 0),
  // and how often a running attempt's directories are measured against it.
  uint64_t default_output_bytes = kDefaultAttemptDiskBytes;
  std::chrono::milliseconds output_watch_interval{250};
  // See AgentConfig::untrusted_runtime.
  bool gvisor_for_tenants = true;
  // Signs the node's statement for each exited attempt's receipt
  // (docs/receipts.md); none: no statement is sent (older coordinators and
  // tests without a key accept that).
  const advert::NodeKey* node_key = nullptr;
  // Reads the host's GPUs as they are now (discovery::ReadGpuLoad), to sample
  // the real GPUs an attempt holds while its container runs, every
  // gpu_sample_interval (agent/gpu_sampler.h); unset: nothing is read, and
  // each such device's Metering.gpus entry says 0 samples.
  std::function<discovery::GpuLoadReading()> read_gpu_load;
  std::chrono::milliseconds gpu_sample_interval{5000};
};

}  // namespace idlegrid::agent
