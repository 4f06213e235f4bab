#pragma once
// ContainerRuntime backed by the podman CLI (rootless or root), started with
// posix_spawn: arguments never pass through a shell.
#include <memory>
#include <optional>
#include <string>

#include "runtime/container_runtime.h"

namespace idlegrid::runtime {

struct PodmanRuntimeOptions {
  std::string podman_binary = "podman";  // a path, or a name searched on PATH
  // Overrides the probed enforcement (tests; operators pinning behaviour).
  std::optional<v1::Enforcement> enforcement;
};

// Probes enforcement (ProbeEnforcement) and runtimes (ProbeRuntimes) once, now.
std::unique_ptr<ContainerRuntime> NewPodmanRuntime(std::string podman_binary = "podman");
std::unique_ptr<ContainerRuntime> NewPodmanRuntime(PodmanRuntimeOptions options);

}  // namespace idlegrid::runtime
