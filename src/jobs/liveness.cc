#include "jobs/liveness.h"

#include <algorithm>
#include <cmath>

namespace idlegrid::jobs {

namespace {
constexpr double kAlpha = 0.1;       // EWMA weight of a new gap
constexpr uint32_t kMinSamples = 8;  // before the node's own jitter is trusted
constexpr double kDeviations = 6;    // mean + 6σ: a false alarm is rare, a real loss still quick
constexpr int64_t kMaxStretch = 2;   // never more than twice the base timeout
}  // namespace

void ObserveHeartbeatGap(HeartbeatStats& stats, double gap_ms) {
  if (!(gap_ms >= 0)) return;  // NaN or negative (clock step): ignore
  if (stats.samples == 0) {
    stats.mean_gap_ms = gap_ms;
    stats.var_gap_ms2 = 0;
  } else {
    double diff = gap_ms - stats.mean_gap_ms;
    stats.mean_gap_ms += kAlpha * diff;
    stats.var_gap_ms2 = (1 - kAlpha) * (stats.var_gap_ms2 + kAlpha * diff * diff);
  }
  if (stats.samples < UINT32_MAX) ++stats.samples;
}

int64_t SilenceTimeoutMs(const LivenessParams& params, const HeartbeatStats& stats) {
  const int64_t base = params.interval_ms * std::max(params.margin, 1);
  if (stats.samples < kMinSamples) return base;
  double adaptive = stats.mean_gap_ms + kDeviations * std::sqrt(std::max(stats.var_gap_ms2, 0.0));
  if (!std::isfinite(adaptive)) return base * kMaxStretch;
  return std::clamp(static_cast<int64_t>(adaptive), base, base * kMaxStretch);
}

int64_t ConfirmPeriodMs(const LivenessParams& params) { return std::max<int64_t>(params.interval_ms, 500); }

const char* LivenessName(Liveness l) {
  switch (l) {
    case Liveness::kOnline:
      return "online";
    case Liveness::kLate:
      return "late";
    case Liveness::kSuspect:
      return "suspect";
    case Liveness::kOffline:
      return "offline";
  }
  return "unknown";
}

LivenessVerdict JudgeLiveness(const LivenessParams& params, const LivenessInputs& in) {
  LivenessVerdict v;
  v.timeout_ms = SilenceTimeoutMs(params, in.stats);
  const int64_t silence = in.now_ms - in.last_heard_ms;
  if (silence <= v.timeout_ms) {
    v.state = silence > params.interval_ms * 3 / 2 ? Liveness::kLate : Liveness::kOnline;
    return v;
  }
  // Past the timeout. Suspect from the first check that sees it (not from
  // when the timeout ran out: a check that comes late must not confirm at once).
  v.suspect_since_ms = in.suspect_since_ms != 0 ? in.suspect_since_ms : in.now_ms;
  v.state = Liveness::kSuspect;
  const bool stalled = in.check_lag_ms > params.interval_ms / 2;
  if (!stalled && in.now_ms - v.suspect_since_ms >= ConfirmPeriodMs(params)) v.state = Liveness::kOffline;
  return v;
}

}  // namespace idlegrid::jobs
