// The Agent as the world of its attempts (attempt_env.h): admission against
// the owner's policy and the node's capacity holds, cancellations, GPUs, and
// the wiring of one AttemptRunner per attempt.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "agent/agent.h"
#include "agent/attempt_runner.h"
#include "agent/image_cache.h"
#include "agent/input_cache.h"
#include "agent/log_shipper.h"
#include "discovery/nvml_loader.h"

namespace idlegrid::agent {

void Agent::RunAttempt(const v1::Assignment& a) {
  AttemptEnv env;
  env.runtime = runtime_.get();
  env.host = this;
  env.reporter = this;
  env.artifacts = this;
  env.images = images_.get();
  env.inputs = inputs_.get();
  env.logs = logs_.get();
  env.clock = config_.clock;
  env.attempts_dir = config_.data_dir + "/attempts";
  env.default_output_bytes = config_.default_attempt_disk_bytes;
  env.gvisor_for_tenants = config_.untrusted_runtime == "runsc";
  if (!config_.cdi_specs.empty()) env.cdi_spec_paths = config_.cdi_specs;
  // Set once at enrolment, before any attempt runs; the key is immutable.
  env.node_key = advertiser_ ? &advertiser_->key() : nullptr;
  env.read_gpu_load = [nvml = config_.nvml_library] { return discovery::ReadGpuLoad(nvml); };
  // Its transfers go under its own artifact token while it runs.
  grants_.Add(a);
  AttemptRunner(std::move(env)).Run(a);
  grants_.Remove(a.attempt_id());
}

Status Agent::CheckLocalPolicy(const v1::Assignment& a) {
  if (draining_) return Status::FailedPrecondition("the agent is shutting down");
  MutexLock lock(&mu_);
  return CheckOwnerPolicy(a, owner_.policy);
}

Status Agent::CheckImageSignatures(const v1::Assignment& a) {
  std::vector<image::ImagePublicKey> trusted;
  {
    MutexLock lock(&mu_);
    trusted = owner_.trusted_image_keys;
  }
  return CheckImageTrust(a, trusted);  // verifies outside the lock
}

Status Agent::ReserveCapacity(const v1::Assignment& a) {
  const v1::NodeInfo info = Describe();
  MutexLock lock(&mu_);
  // Refused as busy, not by policy: the node is fit for the task, only not now.
  if (!owner_pause_reason_.empty()) return Status::ResourceExhausted("paused by its owner: " + owner_pause_reason_);
  // The coordinator's view may lag (an attempt it ended may still be tearing
  // down here), so the node checks again, by the same rule
  // (capacity/ledger.h), against every hold until its runner has seen its
  // container gone, killed and tearing-down ones included.
  capacity::NodeCapacity left = capacity::NodeCapacity::Offered(info, owner_.policy, last_devices_);
  for (const auto& [other, h] : holds_) left.Hold(h.held);
  capacity::AttemptHold request = capacity::HoldOf(a.spec(), {a.device_uuids().begin(), a.device_uuids().end()});
  if (Status fits = left.Check(request); !fits.ok()) {
    return Status::FailedPrecondition(fits.message() + " on this node");
  }
  for (const auto& d : last_devices_) {
    // Placed before the advertisement saying so reached the coordinator.
    if (!d.owner_hold().empty() && std::count(request.devices.begin(), request.devices.end(), d.uuid())) {
      return Status::ResourceExhausted("GPU " + std::to_string(d.index()) +
                                       " is held back by its owner: " + d.owner_hold());
    }
  }
  holds_[a.attempt_id()] = {std::move(request), !a.spec().checkpoint_path().empty()};
  readvertise_ = true;  // what it holds shows in the next advertisement, sent at once
  cv_.NotifyAll();
  return Status::Ok();
}

void Agent::ReleaseCapacity(const std::string& attempt_id) {
  {
    MutexLock lock(&mu_);
    holds_.erase(attempt_id);
  }
  RequestReadvertise();
}

Result<std::vector<v1::GpuDevice>> Agent::Gpus() {
  auto ad = CurrentAdvertisement();
  if (!ad.ok()) return ad.status();
  const auto& devices = ad->inventory().gpus().devices();
  return std::vector<v1::GpuDevice>(devices.begin(), devices.end());
}

}  // namespace idlegrid::agent
