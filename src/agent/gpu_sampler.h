#pragma once
// The shell around gpu_usage.h: reads the GPUs an attempt holds through NVML
// while its container runs, for the attempt's Metering.gpus (docs/receipts.md).
// Telemetry never fails a job: a reading NVML cannot give only leaves the
// device with fewer samples.
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "agent/gpu_usage.h"
#include "common/mutex.h"
#include "discovery/nvml_loader.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::agent {

// Reads every device NVML sees, as it is now (discovery::ReadGpuLoad).
using GpuLoadReader = std::function<discovery::GpuLoadReading()>;

// Takes one reading when Start() is called, one every `interval` after it,
// and one when Stop() is called (the container has exited), so even a short
// run has two. Thread-safe.
class GpuSampler {
 public:
  struct Options {
    std::vector<std::string> uuids;  // the attempt's real GPUs (SelectGpus)
    GpuLoadReader read;              // unset: nothing is read
    std::chrono::milliseconds interval{5000};
  };

  explicit GpuSampler(Options options);
  ~GpuSampler() { Stop(); }
  GpuSampler(const GpuSampler&) = delete;
  GpuSampler& operator=(const GpuSampler&) = delete;

  // Starts the readings, the first at once, on a thread of the sampler's
  // own (the caller is not kept waiting on NVML). Does nothing when there is
  // no device or no reader, when already started, or after Stop().
  void Start();
  // Wakes the sampler at once (it never sleeps out its interval), waits for
  // a reading in progress, then takes the last one. Idempotent; without
  // Start() it reads nothing.
  void Stop();
  // One GpuUsage per device of Options::uuids, in that order
  // (GpuUsageAccumulator::Usage); final once Stop() returned.
  std::vector<v1::GpuUsage> Usage();

 private:
  void Loop();
  void ReadOnce();

  const Options options_;
  Mutex mu_;
  CondVar wake_;
  bool started_ IG_GUARDED_BY(mu_) = false;
  bool stopping_ IG_GUARDED_BY(mu_) = false;
  GpuUsageAccumulator usage_ IG_GUARDED_BY(mu_);
  std::thread thread_;  // only Start() and Stop() touch it; Stop() joins it
  Mutex lifecycle_mu_;  // serialises Start() and Stop()
};

}  // namespace idlegrid::agent
