#pragma once
// The agent's runtime: a fast driver (runc started directly, runc_runtime.h)
// for the jobs it can run with the same sandbox, and podman (the reference
// driver) for everything else — gVisor (runsc), GPUs through CDI, and limits
// only podman can enforce on this host. Which one ran a container is
// remembered, so Kill and the orphan sweep reach the right one.
#include <memory>

#include "runtime/container_runtime.h"

namespace idlegrid::runtime {

// `fast` may be null or unusable (empty Runtimes()): then everything goes to
// `reference`. Images are loaded into both (once per node), so either can run
// any attempt. Enforcement() is the reference driver's; a job whose limits
// the fast driver cannot enforce runs under the reference one.
// `load_dir` (on the archives' filesystem, emptied at start): podman's load
// of a new image goes on in the background from a hard link there while a
// job on the fast driver starts; "" keeps every load synchronous.
std::unique_ptr<ContainerRuntime> NewRoutingRuntime(std::unique_ptr<ContainerRuntime> reference,
                                                    std::unique_ptr<ContainerRuntime> fast, std::string load_dir = "");

// Pure: whether an attempt goes to the fast driver, given what it offers.
bool UseFastDriver(const RunSpec& spec, const v1::Enforcement& fast_enforcement,
                   const std::vector<std::string>& fast_runtimes);

}  // namespace idlegrid::runtime
