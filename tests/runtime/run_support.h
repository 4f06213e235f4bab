#pragma once
// Helpers shared by the runtime tests that run real containers.
#include <chrono>
#include <functional>
#include <map>
#include <string>

#include "common/probe_report.h"
#include "runtime/container_runtime.h"

namespace idlegrid::runtime {

struct Outcome {
  ExitInfo exit;
  std::string out, err;
  std::chrono::steady_clock::duration took{};
};

// Runs `spec` to completion, collecting both streams; a failed Run is a test
// failure (the Outcome then holds defaults).
Outcome MustRun(ContainerRuntime* runtime, const RunSpec& spec,
                std::chrono::milliseconds timeout = std::chrono::seconds(30),
                const std::function<void()>& on_started = {});

// Where the static sandbox probe is: the build's copy, or the one named by
// IDLEGRID_SANDBOX_PROBE (the rootless re-run copies it where its user can
// read it: a build tree under /root is closed to other users).
std::string SandboxProbePath();
inline constexpr char kSandboxProbeEnv[] = "IDLEGRID_SANDBOX_PROBE";

// The ContainerRuntime contract both drivers keep; each driver's suite runs
// these with its own runtime and a spec of a long sleep.
// A run past its timeout: timed out (not killed, no error), stopped well
// within 15 s, and no longer listed.
void ExpectTimeoutStopsAndRemoves(ContainerRuntime* runtime, const RunSpec& spec);
// Kill() from another thread once the container is listed: the run ends as
// killed within 10 s, nothing is left listed, and a second Kill is fine.
void ExpectKillFromAnotherThreadStops(ContainerRuntime* runtime, const RunSpec& spec);
// `spec` sleeps 3 s under a 6 s timeout and is frozen (Freeze) for 7 s as
// soon as it runs: it finishes with exit 0, not timed out, its paused_ms
// covering the freeze, because time frozen for the owner is no run time.
void ExpectFrozenTimeIsNotRunTime(ContainerRuntime* runtime, const RunSpec& spec);

using testing::ProbeReport;  // the sandbox probe's report

}  // namespace idlegrid::runtime
