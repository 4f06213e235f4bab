#pragma once
// The one supervision loop of both drivers: waits for the process that runs a
// container (`podman run`, `runc run`), forwarding its output, and stops it
// when asked or when its time is up.
#include <chrono>
#include <functional>

#include "runtime/active_runs.h"
#include "runtime/subprocess.h"

namespace idlegrid::runtime {

struct StopTiming {
  // While stopping, the driver's kill is sent again this often: a kill may
  // land before the container exists.
  std::chrono::milliseconds retry{500};
  // Past this, the supervising process itself is SIGKILLed.
  std::chrono::milliseconds force_after{15'000};
};

struct Supervised {
  bool killed = false;     // kill_requested() said so (also when it won the race with the exit)
  bool timed_out = false;  // the timeout passed first
  bool stopping() const { return killed || timed_out; }
};

// Pumps `child` (output to `sink`) until it exits. `control.wake_fd` is the
// eventfd a Kill() writes; it is reset here. Once `control.kill_requested()`
// is true or `timeout` (<= 0: none) has passed, time spent frozen not
// counted, calls `send_kill()` every `timing.retry` and SIGKILLs `child`
// after `timing.force_after`.
Supervised Supervise(Subprocess& child, const RunControl& control, std::chrono::milliseconds timeout,
                     const StreamSink& sink, const std::function<void()>& send_kill, StopTiming timing = {});

}  // namespace idlegrid::runtime
