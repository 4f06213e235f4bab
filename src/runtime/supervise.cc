#include "runtime/supervise.h"

#include <algorithm>
#include <optional>

namespace idlegrid::runtime {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

Supervised Supervise(Subprocess& child, int wake_fd, milliseconds timeout, const StreamSink& sink,
                     const std::function<bool()>& kill_requested, const std::function<void()>& send_kill,
                     StopTiming timing) {
  Supervised out;
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = timeout.count() > 0 ? start + timeout : Clock::time_point::max();
  std::optional<Clock::time_point> stopping_since;
  Clock::time_point next_kill;
  milliseconds wait = std::chrono::ceil<milliseconds>(deadline - start);
  while (!child.Pump(wait, wake_fd, sink)) {
    ResetEventFd(wake_fd);
    const Clock::time_point now = Clock::now();
    if (!stopping_since) {
      if (kill_requested()) {
        out.killed = true;
      } else if (now >= deadline) {
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
    const Clock::time_point wake_at = stopping_since ? next_kill : deadline;
    wait = std::chrono::ceil<milliseconds>(wake_at - std::min(wake_at, Clock::now()));
  }
  // Kill() may have won the race: its removal of the container ended the
  // process before this loop saw the request.
  if (!out.stopping() && kill_requested()) out.killed = true;
  return out;
}

}  // namespace idlegrid::runtime
