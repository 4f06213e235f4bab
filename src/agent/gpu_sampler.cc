#include "agent/gpu_sampler.h"

namespace idlegrid::agent {

GpuSampler::GpuSampler(Options options) : options_(std::move(options)), usage_(options_.uuids) {}

void GpuSampler::Start() {
  MutexLock lifecycle(&lifecycle_mu_);
  if (options_.uuids.empty() || !options_.read) return;
  {
    MutexLock lock(&mu_);
    if (started_ || stopping_) return;
    started_ = true;
  }
  thread_ = std::thread([this] { Loop(); });
}

void GpuSampler::Stop() {
  MutexLock lifecycle(&lifecycle_mu_);
  bool started = false;
  {
    MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    started = started_;
  }
  wake_.NotifyAll();
  if (thread_.joinable()) thread_.join();
  if (started) ReadOnce();
}

std::vector<v1::GpuUsage> GpuSampler::Usage() {
  MutexLock lock(&mu_);
  return usage_.Usage();
}

void GpuSampler::Loop() {
  while (true) {
    ReadOnce();
    MutexLock lock(&mu_);
    if (wake_.WaitFor(&mu_, options_.interval, [this]() IG_REQUIRES(mu_) { return stopping_; })) return;
  }
}

void GpuSampler::ReadOnce() {
  // NVML is read without the lock: a slow driver never holds up Usage().
  const std::vector<GpuSample> samples = SamplesOf(options_.read(), options_.uuids);
  MutexLock lock(&mu_);
  for (const GpuSample& s : samples) usage_.Add(s);
}

}  // namespace idlegrid::agent
