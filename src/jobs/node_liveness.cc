#include "jobs/node_liveness.h"

#include <algorithm>
#include <cmath>

namespace idlegrid::jobs {

void NodeLiveness::Restart(int64_t now_ms) {
  last_heartbeat_ms_ = now_ms;
  HeardFrom(now_ms);
}

void NodeLiveness::OnHeartbeat(int64_t now_ms, bool online, int interval_ms) {
  if (online && last_heartbeat_ms_ > 0) {
    const int64_t gap = now_ms - last_heartbeat_ms_;
    // Only lateness counts: agents send early heartbeats when something changed.
    const double interval = interval_ms;
    const double late = std::clamp((static_cast<double>(gap) - interval) / interval, 0.0, 1.0);
    lateness_ = 0.9 * lateness_ + 0.1 * late;
    jobs::ObserveHeartbeatGap(gaps_, static_cast<double>(gap));
    max_gap_ms_ = std::max(max_gap_ms_, gap);
    if (gap > 2 * static_cast<int64_t>(interval_ms)) ++stalls_;
  }
  last_heartbeat_ms_ = now_ms;
  HeardFrom(now_ms);
}

void NodeLiveness::OnHandshake(uint64_t sequence, uint32_t last_rtt_us) {
  if (sequence != 0) {
    // Only a step forward says anything: an agent that restarted counts from
    // 1 again, and an old agent sends no sequence at all.
    if (last_sequence_ != 0 && sequence > last_sequence_) {
      const double lost = static_cast<double>(sequence - last_sequence_ - 1);
      loss_ = 0.9 * loss_ + 0.1 * (lost / (lost + 1.0));
    }
    last_sequence_ = sequence;
  }
  if (last_rtt_us != 0) {
    const double rtt = last_rtt_us / 1000.0;
    rtt_ms_ = rtt_ms_ == 0 ? rtt : 0.8 * rtt_ms_ + 0.2 * rtt;
  }
}

double NodeLiveness::jitter_ms() const { return gaps_.samples < 2 ? 0.0 : std::sqrt(std::max(gaps_.var_gap_ms2, 0.0)); }

void NodeLiveness::HeardFrom(int64_t now_ms) {
  last_heard_ms_ = std::max(last_heard_ms_, now_ms);
  suspect_since_ms_ = 0;
}

jobs::LivenessInputs NodeLiveness::InputsAt(int64_t now_ms) const {
  jobs::LivenessInputs in;
  in.now_ms = now_ms;
  in.last_heard_ms = last_heard_ms_;
  in.suspect_since_ms = suspect_since_ms_;
  in.stats = gaps_;
  return in;
}

jobs::LivenessVerdict NodeLiveness::Check(const jobs::LivenessParams& params, int64_t now_ms, int64_t check_lag_ms) {
  jobs::LivenessInputs in = InputsAt(now_ms);
  in.check_lag_ms = std::max<int64_t>(check_lag_ms, 0);
  jobs::LivenessVerdict verdict = jobs::JudgeLiveness(params, in);
  suspect_since_ms_ = verdict.state == jobs::Liveness::kOffline ? 0 : verdict.suspect_since_ms;
  return verdict;
}

jobs::LivenessVerdict NodeLiveness::Peek(const jobs::LivenessParams& params, int64_t now_ms) const {
  return jobs::JudgeLiveness(params, InputsAt(now_ms));
}

}  // namespace idlegrid::jobs
