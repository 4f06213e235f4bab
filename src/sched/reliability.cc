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
  // A provider proven to return wrong results is worth less, whatever its
  // machines' uptime: the score carries verification's penalty.
  score *= std::min(in.provider_verification, 1000u) / 1000.0;
  char detail[200];
  int n = std::snprintf(detail, sizeof detail, "%u ok, %u lost, %u failed; heartbeats %.0f%% late; %u throttled",
                        in.succeeded, in.node_lost, in.node_failed, lateness * 100, in.throttle_reports);
  if (in.provider_caught > 0 && n > 0 && static_cast<size_t>(n) < sizeof detail) {
    std::snprintf(detail + n, sizeof detail - static_cast<size_t>(n), "; provider caught %u time(s) with a wrong result (%u/1000)",
                  in.provider_caught, in.provider_verification);
  }
  return {std::clamp(score, 0.0, 1.0), detail};
}

}  // namespace idlegrid::sched
