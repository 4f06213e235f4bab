#include "sched/reliability.h"

#include <algorithm>
#include <cstdio>

namespace idlegrid::sched {

Reliability ScoreReliability(const ReliabilityInputs& in) {
  double good = in.succeeded + 1.0;
  double bad = 1.0 + 3.0 * in.node_lost + 2.0 * in.node_failed;
  double score = good / (good + bad);
  double lateness = std::clamp(in.heartbeat_lateness, 0.0, 1.0);
  score *= 1.0 - 0.5 * lateness;
  score *= 1.0 - std::min(0.3, 0.05 * in.throttle_reports);
  const double loss = std::clamp(in.heartbeat_loss, 0.0, 1.0);
  const double jitter = std::max(in.heartbeat_jitter, 0.0);
  const double rtt_ms = std::max(in.rtt_ms, 0.0);
  score *= 1.0 - std::min(0.5, loss);
  score *= 1.0 - std::min(0.2, 0.2 * jitter);
  score *= 1.0 - std::min(0.1, rtt_ms / 10000.0);
  score *= 1.0 - std::min(0.3, 0.05 * in.stalls);
  // A provider proven to return wrong results is worth less, whatever its
  // machines' uptime: the score carries verification's penalty.
  score *= std::min(in.provider_verification, 1000u) / 1000.0;
  char buf[200];
  std::snprintf(buf, sizeof buf, "%u ok, %u lost, %u failed; heartbeats %.0f%% late; %u throttled", in.succeeded,
                in.node_lost, in.node_failed, lateness * 100, in.throttle_reports);
  std::string detail = buf;
  // The handshake's other parts only when they weigh something: the common
  // case stays one short line.
  if (loss >= 0.005) {
    std::snprintf(buf, sizeof buf, "; %.0f%% of heartbeats lost", loss * 100);
    detail += buf;
  }
  if (jitter >= 0.05) {
    std::snprintf(buf, sizeof buf, "; jitter %.0f%% of the interval", jitter * 100);
    detail += buf;
  }
  if (rtt_ms >= 100) {
    std::snprintf(buf, sizeof buf, "; round trip %.0f ms", rtt_ms);
    detail += buf;
  }
  if (in.stalls > 0) detail += "; " + std::to_string(in.stalls) + " stall(s)";
  if (in.owner_pauses > 0) {
    detail += "; paused by its owner " + std::to_string(in.owner_pauses) + " time(s) (not held against it)";
  }
  if (in.provider_caught > 0) {
    std::snprintf(buf, sizeof buf, "; provider caught %u time(s) with a wrong result (%u/1000)", in.provider_caught,
                  in.provider_verification);
    detail += buf;
  }
  return {std::clamp(score, 0.0, 1.0), detail};
}

}  // namespace idlegrid::sched
