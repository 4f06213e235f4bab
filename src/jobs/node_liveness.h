#pragma once
// One node's heartbeat record as this coordinator saw it, and the failure
// detector's state for it: the bookkeeping around the pure rules of
// jobs/liveness.h, in one place. A value without a lock of its own: the
// coordinator keeps one per node in its node table, under NodeTable::mu_.
// No clock reads: every time is passed in.
#include <cstdint>

#include "jobs/liveness.h"

namespace idlegrid::jobs {

class NodeLiveness {
 public:
  // Counts the node's silence from `now_ms` (a restarted coordinator's grace
  // period for every known node, or a node that just connected).
  void Restart(int64_t now_ms);
  // A heartbeat at `now_ms`. While the node is online its gap since the
  // previous heartbeat feeds the jitter statistics (the detector's timeout),
  // the lateness average (reliability) and the longest gap (metrics); early
  // heartbeats count as on time.
  void OnHeartbeat(int64_t now_ms, bool online, int interval_ms);
  // What the heartbeat said of the link (the physical-work handshake): its
  // sequence number (1, 2, ... per agent run: a gap is heartbeats the agent
  // sent that never arrived; a smaller one, an agent that restarted) and the
  // round trip of the previous call as the agent timed it (0: none).
  void OnHandshake(uint64_t sequence, uint32_t last_rtt_us);
  // Any authenticated message at `now_ms` (heartbeat, report, logs, stream
  // open): a sign of life, which clears suspicion.
  void HeardFrom(int64_t now_ms);

  // The detector's verdict at `now_ms` for a check running `check_lag_ms`
  // late, recorded: a node found past its timeout stays suspect until heard
  // from; one found offline starts over (not suspect).
  jobs::LivenessVerdict Check(const jobs::LivenessParams& params, int64_t now_ms, int64_t check_lag_ms);
  // The verdict at `now_ms` without recording it (for listings).
  jobs::LivenessVerdict Peek(const jobs::LivenessParams& params, int64_t now_ms) const;

  int64_t last_heartbeat_ms() const { return last_heartbeat_ms_; }
  int64_t last_heard_ms() const { return last_heard_ms_; }
  // Suspect since the check that found it silent past its timeout: no new work.
  bool suspect() const { return suspect_since_ms_ != 0; }
  int64_t max_gap_ms() const { return max_gap_ms_; }
  // Average lateness of its heartbeats (EWMA, fraction of an interval, 0..1).
  double lateness() const { return lateness_; }
  // Standard deviation of its heartbeat gaps, ms.
  double jitter_ms() const;
  // Heartbeats lost on the way (EWMA of the lost fraction, 0..1).
  double loss() const { return loss_; }
  // Round trip as the agent measured it (EWMA), ms; 0 until reported.
  double rtt_ms() const { return rtt_ms_; }
  // Gaps over twice the interval while online: the host stalled.
  uint32_t stalls() const { return stalls_; }

 private:
  jobs::LivenessInputs InputsAt(int64_t now_ms) const;

  int64_t last_heartbeat_ms_ = 0;
  int64_t last_heard_ms_ = 0;
  int64_t suspect_since_ms_ = 0;  // 0: not suspect
  jobs::HeartbeatStats gaps_;
  int64_t max_gap_ms_ = 0;  // while online
  double lateness_ = 0;
  uint64_t last_sequence_ = 0;
  double loss_ = 0;
  double rtt_ms_ = 0;
  uint32_t stalls_ = 0;
};

}  // namespace idlegrid::jobs
