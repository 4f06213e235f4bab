#include "agent/join_gpu.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <optional>

namespace idlegrid::agent {
namespace {

constexpr char kDefaultCdiOutput[] = "/etc/cdi/nvidia.yaml";

// Debian's packaged driver (the Debian wiki's NvidiaGraphicsDrivers): it is
// built by DKMS, hence the headers, and lives in the non-free component.
constexpr char kInstallDriver[] =
    "install the NVIDIA driver (Debian 12: add non-free to the apt sources, then sudo apt-get install "
    "linux-headers-$(dpkg --print-architecture) nvidia-driver firmware-misc-nonfree, and reboot)";
constexpr char kUpgradeDriver[] =
    "install a newer NVIDIA driver (Debian 12: sudo apt-get install nvidia-driver, from non-free), then reboot";

std::string Generate(const std::string& output) { return "sudo nvidia-ctk cdi generate --output=" + output; }

std::string Joined(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string GpuLabel(const GpuIdentity& g) {
  return "GPU " + std::to_string(g.index) + " (" + g.name + ", " + g.uuid + ")";
}

// Leading numbers of each dot-separated part: "550.54.15" -> {550, 54, 15}.
std::optional<std::vector<long>> VersionParts(const std::string& version) {
  std::vector<long> parts;
  size_t i = 0;
  while (i < version.size()) {
    size_t j = i;
    long n = 0;
    while (j < version.size() && version[j] >= '0' && version[j] <= '9' && j - i < 9) n = n * 10 + (version[j++] - '0');
    if (j == i) break;
    parts.push_back(n);
    if (j >= version.size() || version[j] != '.') break;
    i = j + 1;
  }
  if (parts.empty()) return std::nullopt;
  return parts;
}

// The host files one containerEdits mounts. Device nodes are left out: some
// (/dev/nvidia-uvm) appear only once CUDA first loads, and regenerating the
// spec is not their fix.
void AddHostPaths(const YAML::Node& edits, std::vector<std::string>* out) {
  if (!edits || !edits.IsMap()) return;
  const YAML::Node mounts = edits["mounts"];
  if (!mounts || !mounts.IsSequence()) return;
  for (const YAML::Node& m : mounts) {
    if (!m.IsMap()) continue;
    const YAML::Node host = m["hostPath"];
    if (host && host.IsScalar() && std::find(out->begin(), out->end(), host.Scalar()) == out->end()) {
      out->push_back(host.Scalar());
    }
  }
}

bool InDirs(const std::string& path, const std::vector<std::string>& dirs) {
  for (std::string dir : dirs) {
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    if (path.size() > dir.size() + 1 && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/' &&
        path.find('/', dir.size() + 1) == std::string::npos) {
      return true;
    }
  }
  return false;
}

void CheckNvml(const GpuChainFacts& f, std::vector<GpuCheck>* out) {
  switch (f.nvml) {
    case NvmlState::kAbsent:
      if (f.nvidia_pci_devices == 0) {
        out->push_back({GpuCheck::kInfo,
                        "no NVIDIA GPU found (" + f.nvml_library + " does not load): this node offers CPUs only", ""});
      } else {
        out->push_back({GpuCheck::kFix,
                        std::to_string(f.nvidia_pci_devices) +
                            " NVIDIA GPU(s) on the PCI bus, but NVML does not "
                            "load (" +
                            f.nvml_detail + "): the node offers its CPUs only",
                        kInstallDriver});
      }
      return;
    case NvmlState::kDriverError:
      out->push_back({GpuCheck::kFix, "NVML loads but fails: " + f.nvml_detail + ": no GPU can be offered",
                      "run nvidia-smi, which reports the same; after a driver update, reboot (the kernel module "
                      "and the library must be of one version); otherwise reinstall the driver: " +
                          std::string(kInstallDriver)});
      return;
    case NvmlState::kNoDevice:
      out->push_back({GpuCheck::kInfo, "NVML loads but sees no GPU: this node offers CPUs only", ""});
      return;
    case NvmlState::kReady: {
      std::vector<std::string> gpus;
      for (const GpuIdentity& g : f.gpus) gpus.push_back(GpuLabel(g));
      out->push_back(
          {GpuCheck::kPass,
           "NVML loads (" + f.nvml_library + "): " + std::to_string(f.gpus.size()) + " GPU(s): " + Joined(gpus, ", "),
           ""});
      return;
    }
  }
}

void CheckDriver(const GpuChainFacts& f, std::vector<GpuCheck>* out) {
  const std::string floor = "the readiness benchmark's PTX (ISA 7.0) needs a CUDA " + std::to_string(kMinCudaMajor) +
                            "." + std::to_string(kMinCudaMinor) + " driver, " + kMinDriverVersion + " or newer";
  const std::string driver = "driver " +
                             (f.driver_version.empty() ? std::string("(version unknown)") : f.driver_version) +
                             (f.cuda_driver_version.empty() ? "" : " (CUDA " + f.cuda_driver_version + ")");
  std::optional<bool> new_enough;
  if (auto cuda = VersionParts(f.cuda_driver_version)) {
    const long minor = cuda->size() > 1 ? (*cuda)[1] : 0;
    new_enough = (*cuda)[0] > kMinCudaMajor || ((*cuda)[0] == kMinCudaMajor && minor >= kMinCudaMinor);
  } else if (VersionParts(f.driver_version)) {
    new_enough = VersionAtLeast(f.driver_version, kMinDriverVersion);
  }
  if (!new_enough.has_value()) {
    out->push_back({GpuCheck::kFix, "the driver's version could not be read from NVML (" + floor + ")",
                    "run nvidia-smi (its header shows the driver and CUDA versions); if it fails, " +
                        std::string(kInstallDriver)});
  } else if (*new_enough) {
    out->push_back({GpuCheck::kPass, driver + " is new enough: " + floor, ""});
  } else {
    out->push_back({GpuCheck::kFix,
                    driver + " is too old: " + floor + "; with it the GPUs fail their benchmark and are not offered",
                    kUpgradeDriver});
  }
}

void CheckCdi(const GpuChainFacts& f, std::vector<GpuCheck>* out) {
  const std::string dirs = Joined(f.cdi_dirs, " or ");
  std::vector<const CdiSpec*> visible;  // what podman uses for nvidia.com/gpu=...
  for (const CdiSpec& spec : f.cdi_specs) {
    if (!spec.error.empty()) {
      // Podman skips such a file; if it was the NVIDIA spec, no GPU reaches a container.
      out->push_back(
          {GpuCheck::kFix, "CDI spec " + spec.path + " cannot be read: " + spec.error,
           "if nvidia-ctk wrote it, regenerate it: " + Generate(spec.path) + "; otherwise fix or remove it"});
    } else if (spec.kind != kCdiGpuKind) {
      continue;  // another vendor's or class's spec
    } else if (!InDirs(spec.path, f.cdi_dirs)) {
      out->push_back({GpuCheck::kFix,
                      "CDI spec " + spec.path + " is outside " + dirs +
                          ", where podman reads specs: it gives no "
                          "container a GPU",
                      "generate it there: " + Generate(kDefaultCdiOutput)});
    } else {
      visible.push_back(&spec);
    }
  }
  if (visible.empty()) {
    out->push_back({GpuCheck::kFix,
                    "no CDI spec of kind " + std::string(kCdiGpuKind) + " in " + dirs +
                        ": podman cannot give a container a GPU, so the GPUs are neither measured nor offered",
                    "install nvidia-container-toolkit (NVIDIA's apt repository: https://docs.nvidia.com/datacenter/"
                    "cloud-native/container-toolkit/latest/install-guide.html), then run: " +
                        Generate(kDefaultCdiOutput)});
    return;
  }
  for (const CdiSpec* s : visible) {
    if (s->missing_host_paths.empty()) continue;
    out->push_back({GpuCheck::kFix,
                    "CDI spec " + s->path + " mounts " + std::to_string(s->missing_host_paths.size()) +
                        " file(s) that no longer exist (" + s->missing_host_paths.front() +
                        (s->missing_host_paths.size() > 1 ? ", ..." : "") +
                        "): it was generated for another driver, and a job given a GPU by it fails to start",
                    "regenerate it after a driver update: " + Generate(s->path)});
  }
  std::vector<std::string> paths;
  for (const CdiSpec* s : visible) paths.push_back(s->path);
  const std::string named_in = Joined(paths, ", ");
  bool all_named = true;
  for (const GpuIdentity& g : f.gpus) {
    bool by_uuid = false, by_index = false;
    for (const CdiSpec* s : visible) {
      by_uuid |= std::count(s->device_names.begin(), s->device_names.end(), g.uuid) > 0;
      by_index |= std::count(s->device_names.begin(), s->device_names.end(), std::to_string(g.index)) > 0;
    }
    if (by_uuid) continue;
    all_named = false;
    if (by_index) {
      out->push_back({GpuCheck::kFix,
                      "CDI spec " + named_in + " names " + GpuLabel(g) + " by index only; idlegrid asks podman for " +
                          kCdiGpuKind + "=" + g.uuid,
                      "regenerate with UUID names too: sudo nvidia-ctk cdi generate --device-name-strategy=index "
                      "--device-name-strategy=uuid --output=" +
                          visible.front()->path});
    } else {
      out->push_back({GpuCheck::kFix, "CDI spec " + named_in + " does not name " + GpuLabel(g),
                      "regenerate it after a driver update or a GPU change: " + Generate(visible.front()->path)});
    }
  }
  if (all_named) out->push_back({GpuCheck::kPass, "CDI spec " + named_in + " names every GPU by UUID", ""});
  // attempt_runner.cc gives a job a GPU only once one of these files exists.
  const bool agent_sees_one =
      std::any_of(f.agent_cdi_paths.begin(), f.agent_cdi_paths.end(), [&](const std::string& p) {
        return std::any_of(f.cdi_specs.begin(), f.cdi_specs.end(), [&](const CdiSpec& s) { return s.path == p; });
      });
  if (!agent_sees_one) {
    out->push_back(
        {GpuCheck::kFix,
         "the agent gives a job a GPU only when " + Joined(f.agent_cdi_paths, " or ") + " exists, and none does",
         "generate the spec there (" +
             Generate(f.agent_cdi_paths.empty() ? kDefaultCdiOutput : f.agent_cdi_paths.front()) +
             "), or run the agent with --cdi-spec " + visible.front()->path});
  }
}

}  // namespace

CdiSpec ParseCdiSpec(const std::string& text, const std::string& path) {
  CdiSpec spec;
  spec.path = path;
  // yaml-cpp reports bad text and wrongly shaped nodes by throwing: caught here.
  try {
    const YAML::Node root = YAML::Load(text);
    if (!root.IsMap()) {
      spec.error = "not a CDI spec (expected a map with kind and devices)";
      return spec;
    }
    const YAML::Node kind = root["kind"];
    if (!kind || !kind.IsScalar()) {
      spec.error = "not a CDI spec (no kind)";
      return spec;
    }
    spec.kind = kind.Scalar();
    AddHostPaths(root["containerEdits"], &spec.host_paths);
    const YAML::Node devices = root["devices"];
    if (devices && devices.IsSequence()) {
      for (const YAML::Node& d : devices) {
        if (!d.IsMap()) continue;
        const YAML::Node name = d["name"];
        if (name && name.IsScalar()) spec.device_names.push_back(name.Scalar());
        AddHostPaths(d["containerEdits"], &spec.host_paths);
      }
    }
  } catch (const YAML::Exception& e) {
    spec = CdiSpec{path, "", {}, "not YAML or JSON: " + std::string(e.what()), {}, {}};
  }
  return spec;
}

bool VersionAtLeast(const std::string& version, const std::string& floor) {
  auto have = VersionParts(version);
  auto want = VersionParts(floor);
  if (!have || !want) return false;
  const size_t n = std::max(have->size(), want->size());
  have->resize(n, 0);
  want->resize(n, 0);
  return *have >= *want;
}

std::vector<GpuCheck> CheckGpuChain(const GpuChainFacts& facts) {
  std::vector<GpuCheck> out;
  CheckNvml(facts, &out);
  if (facts.nvml != NvmlState::kReady || facts.gpus.empty()) return out;
  CheckDriver(facts, &out);
  CheckCdi(facts, &out);
  return out;
}

}  // namespace idlegrid::agent
