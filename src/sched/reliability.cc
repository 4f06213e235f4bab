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
  char detail[160];
  std::snprintf(detail, sizeof detail, "%u ok, %u lost, %u failed; heartbeats %.0f%% late; %u throttled",
                in.succeeded, in.node_lost, in.node_failed, lateness * 100, in.throttle_reports);
  return {std::clamp(score, 0.0, 1.0), detail};
}

}  // namespace idlegrid::sched
