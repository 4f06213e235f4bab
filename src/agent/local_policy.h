#pragma once
// The host owner's local policy, from a YAML file the owner edits
// (<data-dir>/policy.yaml by default):
//
//   acceptJobs: true            # false pauses the node
//   maxRunSeconds: 3600         # refuse jobs whose run timeout is longer
//   allowedRuntimes: [runc]     # refuse other runtimes
//   allowedJobClasses: [io-uring]  # job classes that widen the sandbox (none by default)
//   reservedGpuMemory: 4Gi      # per device, kept for the owner
//   reservedCpu: 1              # cores kept for the owner
//   allowedRegistries: [ghcr.io, "127.0.0.1:5000"]  # OCI registries it may pull from; none by default
//   tenantGpuJobs: false        # refuse tenants' jobs that ask for GPUs (default true; the
//                               #   operator's still run; docs/containment.md, GPU jobs)
//   asks:                       # hourly price asks per device class
//     "NVIDIA GeForce RTX 4090": 0.35   # the GPU's NVML name (agent --discover), or
//     "RTX 4090": 0.35                  #   a short form: matched by normalised model name
//     cpu-core: 0.01                    # per core-hour; this key is matched exactly
//                               # (market::MatchingAsk; an ask that prices no GPU is
//                               # warned at start and in `agent status`)
//   trustedImageKeys:           # run only images signed by one of these
//     - keys/release.pub        #   a public-key file (relative: to this file's directory)
//     - "idlegrid-ed25519 lYq3...= ci"   # or a public-key line itself
//   pauseWhen:                  # the owner first (pause_policy.h, docs/provider.md)
//     ownerGpu: {processes: true, utilizationAbove: 50}   # or ownerGpu: true
//     processes: [steam, cyberpunk2077.exe]
//     userActive: true          # logind's IdleHint says the owner is there
//     onBattery: true
//     hours: ["18:00-23:00"]    # windows when the machine is the owner's
//     resumeAfter: 30s          # clear this long before jobs resume
//     action: freeze            # or handBack (checkpoint and hand back at once)
//     handBackAfter: 10m        # a freeze longer than this hands the work back
//     gpuJobs: handBack         # a GPU job with a checkpoint directory is handed back at
//                               #   once (its VRAM freed); freeze: frozen like the rest
//     # ownerGpu ignores display servers and compositors (Xorg, Xwayland, gnome-shell,
//     # kwin_wayland, ...; pause_policy.cc); ownerGpu: {processes: true, ignoreProcesses: [x]} adds
//   lendGpus: [0, GPU-8f3e...]  # lend only these GPUs (index or UUID); unset: all
//   maxGpuTemp: 85              # degrees C; hotter pauses until cool
//   maxGpuPower: 300            # watts
#include <optional>
#include <string>
#include <vector>

#include "agent/pause_policy.h"
#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "image/signature.h"

namespace idlegrid::agent {

struct OwnerPolicy {
  v1::LocalPolicy policy;
  std::vector<v1::PriceAsk> asks;
  // trustedImageKeys (docs/containment.md, Signatures): the keys written
  // inline, then, once the agent has read them, the keys of the files named.
  std::vector<image::ImagePublicKey> trusted_image_keys;
  std::vector<std::string> trusted_image_key_files;  // as written; not read by the parser
  PausePolicy pause;  // pauseWhen, maxGpuTemp, maxGpuPower (agent-side only: not advertised)
  // lendGpus: the GPUs (by index or UUID) the owner lends; the others are
  // advertised with GpuDevice.owner_hold and take no work. Unset: all.
  std::optional<std::vector<std::string>> lend_gpus;
  // imageCache: bytes of layered images' blobs the agent keeps before it
  // evicts the least recently used image (image_cache.h); 0: the default.
  uint64_t image_cache_bytes = 0;
  // inputCache: bytes of job inputs the node's input cache keeps
  // (input_cache.h); unset: the agent's --input-cache. 0 keeps none past
  // their attempts.
  uint64_t input_cache_bytes = 0;
  bool input_cache_set = false;
};

// Defaults: accept jobs, no limits, no reserves, no asks.
OwnerPolicy DefaultOwnerPolicy();
// InvalidArgument "<file>:<line>:<col>: ..." for unknown keys, wrong types or impossible values.
Result<OwnerPolicy> ParseOwnerPolicy(const std::string& yaml_text, const std::string& filename);
// Whether what a node advertises of its owner's policy differs between `a`
// and `b` (the policy and the asks, prices included): then it re-advertises
// at once. Pure.
bool AdvertisedPolicyDiffers(const OwnerPolicy& a, const OwnerPolicy& b);
// Why the owner's policy refuses this job, or Ok (FailedPrecondition with the
// reason and, for a registry image, the registry and the setting). Pure.
Status CheckOwnerPolicy(const v1::JobSpec& spec, const v1::LocalPolicy& policy);
// The same for an assignment, and also refuses a tenant's job
// (Assignment.untrusted_tenant) that asks for GPUs (whole or a share) where
// the owner set tenantGpuJobs: false. Pure.
Status CheckOwnerPolicy(const v1::Assignment& assignment, const v1::LocalPolicy& policy);
// Adds `keys` (read from trusted_image_key_files) to the policy's trusted
// keys and sets what the node advertises: their ids, sorted, once each.
void AddTrustedImageKeys(OwnerPolicy* policy, const std::vector<image::ImagePublicKey>& keys);
// Ok when `trusted` is empty, or when the assignment carries a valid
// signature over its image by one of them; otherwise FailedPrecondition
// naming the image, the trusted keys and the signatures it has. Pure.
Status CheckImageTrust(const v1::Assignment& assignment, const std::vector<image::ImagePublicKey>& trusted);

}  // namespace idlegrid::agent
