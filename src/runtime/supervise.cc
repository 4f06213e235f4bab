#include "runtime/supervise.h"

#include <algorithm>
#include <optional>

namespace idlegrid::runtime {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

Supervised Supervise(Subprocess& child, const RunControl& control, milliseconds timeout, const StreamSink& sink,
                     const std::function<void()>& send_kill, StopTiming timing) {
  Supervised out;
  const Clock::time_point start = Clock::now();
  std::optional<Clock::time_point> stopping_since;
  Clock::time_point next_kill;
  milliseconds wait = std::chrono::ceil<milliseconds>(control.Deadline(start, timeout) - start);
  while (!child.Pump(wait, control.wake_fd, sink)) {
    ResetEventFd(control.wake_fd);
    const Clock::time_point now = Clock::now();
    if (!stopping_since) {
      if (control.kill_requested()) {
        out.killed = true;
      } else if (now >= control.Deadline(start, timeout)) {
        out.timed_out = true;
      }
      if (out.stopping()) stopping_since = next_kill = now;
    }
    if (stopping_since && now >= next_kill) {
      if (now - *stopping_since > timing.force_after) {
        child.Kill();
      } else {
        send_kill();
      }
      next_kill = Clock::now() + timing.retry;
    }
    const Clock::time_point wake_at = stopping_since ? next_kill : control.Deadline(start, timeout);
    wait = std::chrono::ceil<milliseconds>(wake_at - std::min(wake_at, Clock::now()));
  }
  // Kill() may have won the race: its removal of the container ended the
  // process before this loop saw the request.
  if (!out.stopping() && control.kill_requested()) out.killed = true;
  return out;
}

}  // namespace idlegrid::runtime
