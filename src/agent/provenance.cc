#include "agent/provenance.h"

#include <algorithm>
#include <set>

#include "common/digest.h"
#include "manifest/manifest.h"

namespace idlegrid::agent {

namespace {

constexpr char kSimulated[] = "simulated";

}  // namespace

GpuStack GpuStackOf(const std::vector<v1::GpuDevice>& host_gpus, const std::vector<std::string>& assigned) {
  std::vector<const v1::GpuDevice*> used;
  for (const v1::GpuDevice& d : host_gpus) {
    if (assigned.empty() || std::find(assigned.begin(), assigned.end(), d.uuid()) != assigned.end()) {
      used.push_back(&d);
    }
  }
  if (used.empty()) return {};
  for (const v1::GpuDevice* d : used) {
    if (!d->simulated()) return {d->driver_version(), d->cuda_driver_version()};
  }
  return {kSimulated, kSimulated};
}

v1::Provenance BuildProvenance(const v1::Assignment& a, const runtime::RunSpec& spec,
                               const runtime::SandboxFacts& sandbox, const NodeFacts& node) {
  v1::Provenance p;
  if (!spec.image_id.empty()) p.set_image_config_digest("sha256:" + spec.image_id);
  const std::string manifest_digest = manifest::ImageDigestOf(a.spec().image());
  if (IsValidDigest(manifest_digest)) p.set_image_manifest_digest(manifest_digest);
  p.set_job_spec_digest(manifest::SpecDigest(a.spec()));
  p.set_driver(sandbox.driver);
  p.set_runtime(sandbox.runtime.empty() ? spec.runtime : sandbox.runtime);
  p.set_runtime_version(sandbox.runtime_version);
  p.set_seccomp_digest(sandbox.seccomp_digest);
  p.set_job_user(sandbox.job_user);
  p.set_kernel_release(node.kernel_release);
  const GpuStack gpu = GpuStackOf(node.gpus, {a.device_uuids().begin(), a.device_uuids().end()});
  p.set_gpu_driver_version(gpu.driver_version);
  p.set_cuda_version(gpu.cuda_version);
  p.set_node_id(node.node_id);
  p.set_node_key_fingerprint(node.key_fingerprint);
  p.set_agent_version(node.agent_version);
  std::set<std::string> names;
  for (const auto& variable : spec.env) names.insert(variable.first);
  for (const std::string& name : names) p.add_env_names(name);
  return p;
}

}  // namespace idlegrid::agent
