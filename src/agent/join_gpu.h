#pragma once
// `agent join`'s check of the GPU chain (docs/provider.md, GPUs), decided on
// plain values: NVML loads and sees the GPUs, the driver can JIT the GPU
// readiness benchmark's PTX, and a CDI spec names every GPU so that podman
// can hand it to a container (the benchmark's and every job's). Each missing
// piece comes with the exact fix. No I/O here: agent/join.h reads the host
// (ReadGpuChainFacts) and prints.
#include <cstdint>
#include <string>
#include <vector>

namespace idlegrid::agent {

// The readiness benchmark's PTX (src/readiness/gpu_kernels.ptx) declares
// `.version 7.0`, the PTX ISA of CUDA 11.0: a driver whose CUDA version (as
// nvmlSystemGetCudaDriverVersion reports it) is 11.0 or newer JIT-compiles
// it. Where the driver does not say, its version is compared with 450.80.02,
// the Linux driver NVIDIA's CUDA release notes list as the minimum for CUDA
// 11.x; every R450 driver carries CUDA 11.0, but earlier R450 releases were
// betas and release candidates, so this floor claims nothing unsure.
inline constexpr int kMinCudaMajor = 11;
inline constexpr int kMinCudaMinor = 0;
inline constexpr char kMinDriverVersion[] = "450.80.02";
inline constexpr char kCdiGpuKind[] = "nvidia.com/gpu";

// One CDI spec file as read: its kind and the names of its devices (for an
// nvidia-ctk spec: "0", "GPU-<uuid>", "all"). `error` says why it could not
// be read or parsed ("" when it was).
struct CdiSpec {
  std::string path;
  std::string kind;
  std::vector<std::string> device_names;
  std::string error;
  // The host files its container edits mount (mounts' hostPath, in the
  // spec's and its devices' edits), and those of them the reader found
  // missing: an nvidia-ctk spec names the driver's versioned libraries, so
  // after a driver update it points at files that are gone.
  std::vector<std::string> host_paths;
  std::vector<std::string> missing_host_paths;
};

// Parses a CDI spec (YAML, or JSON, which YAML reads too). Sets `error` for
// text that is not YAML, not a map, or has no string `kind`; devices without
// a string name are skipped. Leaves missing_host_paths empty. Pure.
CdiSpec ParseCdiSpec(const std::string& text, const std::string& path);

enum class NvmlState {
  kAbsent,       // the library does not load: no driver
  kDriverError,  // it loads but fails (init, a missing symbol, the count)
  kNoDevice,     // it works and counts no GPU
  kReady,        // it lists the GPUs
};

struct GpuIdentity {
  uint32_t index = 0;
  std::string uuid;  // "GPU-..."
  std::string name;  // "NVIDIA GeForce RTX 4090"
};

// What the join saw of the GPU chain on this host.
struct GpuChainFacts {
  std::string nvml_library;  // what was loaded (AgentConfig.nvml_library)
  NvmlState nvml = NvmlState::kAbsent;
  std::string nvml_detail;          // discovery's reason when not kReady
  int nvidia_pci_devices = 0;       // NVIDIA display/3D controllers on the PCI bus, driver or not
  std::string driver_version;       // "550.54.15"; "" when unknown
  std::string cuda_driver_version;  // "12.4"; "" when unknown
  std::vector<GpuIdentity> gpus;
  // Where podman reads CDI specs (its default cdi_spec_dirs), and every spec
  // file found there or named by the agent's --cdi-spec.
  std::vector<std::string> cdi_dirs;
  std::vector<CdiSpec> cdi_specs;
  // The files of which the agent needs one to exist before it gives a job a
  // GPU (AgentConfig.cdi_specs, else AttemptEnv's nvidia.yaml pair).
  std::vector<std::string> agent_cdi_paths;
};

struct GpuCheck {
  enum Outcome {
    kPass,  // this link of the chain works
    kInfo,  // nothing to fix (a node without NVIDIA GPUs offers its CPUs)
    kFix,   // the GPUs cannot be measured or used until `fix` is done
  };
  Outcome outcome = kPass;
  std::string what;
  std::string fix;  // a command or step, exact enough to paste; "" unless kFix
};

// The GPU chain link by link: NVML, then (with GPUs) the driver version and
// the CDI specs. Never blocking for the join itself: a node whose GPUs cannot
// be used still offers its CPUs. Pure and deterministic.
std::vector<GpuCheck> CheckGpuChain(const GpuChainFacts& facts);

// Whether dotted version `version` ("550.54.15") is at least `floor`, part by
// part as numbers; false when `version` has no leading number. Pure.
bool VersionAtLeast(const std::string& version, const std::string& floor);

}  // namespace idlegrid::agent
