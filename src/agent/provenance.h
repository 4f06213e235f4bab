#pragma once
// An attempt's provenance record (docs/provenance.md): which image, job spec,
// sandbox and host produced its results, put together when its container is
// about to start. Pure: the runner gathers the facts (the runtime's
// SandboxFacts, the node's identity and devices) and these functions only
// combine them.
#include <string>
#include <vector>

#include "idlegrid/v1/idlegrid.pb.h"
#include "runtime/container_runtime.h"

namespace idlegrid::agent {

// What a node says about itself in each of its attempts' provenance.
struct NodeFacts {
  std::string node_id;
  std::string key_fingerprint;  // advert::KeyFingerprint of the node's key
  std::string kernel_release;   // uname(2); "" if it could not be read
  std::string agent_version;
  std::vector<v1::GpuDevice> gpus;  // as last discovered, simulated devices included
};

// The GPU driver and CUDA versions an attempt ran with, from the devices it
// holds (those of `host_gpus` named in `assigned`), or from all of the host's
// devices when it holds none: the first real device's versions; "simulated"
// for both when those devices are all simulated; empty when there are none.
struct GpuStack {
  std::string driver_version;
  std::string cuda_version;
};
GpuStack GpuStackOf(const std::vector<v1::GpuDevice>& host_gpus, const std::vector<std::string>& assigned);

// The record for assignment `a` started as `spec` in the sandbox `sandbox`
// describes, on the node `node` describes. The image is named by the id the
// runtime runs (its config digest) and the manifest digest the job's image
// reference pins; the job spec by manifest::SpecDigest of the spec sent,
// which is the one the job was stored with. Environment variables are named
// by `spec.env`'s names only (sorted, each once): never their values.
// gpu_isolation is left empty: the runner sets it from the
// runtime::RuntimeChoice that decided how the GPUs reach the sandbox.
v1::Provenance BuildProvenance(const v1::Assignment& a, const runtime::RunSpec& spec,
                               const runtime::SandboxFacts& sandbox, const NodeFacts& node);

}  // namespace idlegrid::agent
