#pragma once
// The failure detector's rules: when is a silent node suspect, and when is it
// confirmed offline (only then are its attempts failed as node_lost). Pure:
// plain values in, a verdict out; the coordinator keeps the per-node state.
//
// Why not a fixed timeout alone: a node busy with the jobs we gave it sends
// late heartbeats, and a coordinator on a loaded host reads them late. A
// false "offline" fails every attempt on the node and frees its capacity for
// new work while the old containers still run — the collapse seen under load.
// So: any authenticated message counts as a sign of life (not heartbeats
// only); the timeout stretches to the node's own measured heartbeat jitter
// (in the spirit of phi-accrual: mean gap plus a multiple of its deviation,
// never below interval × margin and at most twice that); a node past its
// timeout is first only suspect (no new work), and is confirmed offline when
// it is still silent at a later check at least one confirmation period on;
// and a check that runs late because this coordinator itself stalled is no
// evidence against anyone.
#include <cstdint>
#include <string>

namespace idlegrid::jobs {

// Exponentially weighted mean and variance of a node's heartbeat gaps.
struct HeartbeatStats {
  double mean_gap_ms = 0;
  double var_gap_ms2 = 0;
  uint32_t samples = 0;
};
// Folds in one gap (ms between two heartbeats as this coordinator read them).
void ObserveHeartbeatGap(HeartbeatStats& stats, double gap_ms);

struct LivenessParams {
  int64_t interval_ms = 5000;  // the heartbeat interval agents are told
  int margin = 3;              // base timeout = interval × margin
};

// interval × margin, or mean + 6σ of the node's own gaps when that is larger
// (with enough samples), capped at twice interval × margin.
int64_t SilenceTimeoutMs(const LivenessParams& params, const HeartbeatStats& stats);
// How long a suspect node must stay silent before it is confirmed offline:
// one interval, at least 500 ms.
int64_t ConfirmPeriodMs(const LivenessParams& params);

enum class Liveness { kOnline, kLate, kSuspect, kOffline };
const char* LivenessName(Liveness l);  // "online", "late", "suspect", "offline"

struct LivenessInputs {
  int64_t now_ms = 0;
  int64_t last_heard_ms = 0;     // latest authenticated message of any kind
  int64_t suspect_since_ms = 0;  // when a check first found it past its timeout; 0: not suspect
  HeartbeatStats stats;
  // How late this check runs beyond its schedule: the coordinator's own stall.
  int64_t check_lag_ms = 0;
};

struct LivenessVerdict {
  Liveness state = Liveness::kOnline;
  int64_t timeout_ms = 0;        // the silence allowed this node
  int64_t suspect_since_ms = 0;  // to keep for the next check
};

// kLate: a heartbeat is overdue (1.5 intervals) but within the timeout —
// shown, nothing else changes. kSuspect: past the timeout; takes no new work.
// kOffline: suspect and still silent one confirmation period later, judged by
// a check that did not itself run late (lag over half an interval).
LivenessVerdict JudgeLiveness(const LivenessParams& params, const LivenessInputs& in);

}  // namespace idlegrid::jobs
