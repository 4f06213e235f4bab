#pragma once
// Node reliability: one score in [0, 1] from a rolling window of what a
// node did, for `idlegrid nodes` and the scheduler's reliability scorer. Pure.
#include <cstdint>
#include <string>

namespace idlegrid::sched {

struct ReliabilityInputs {
  uint32_t succeeded = 0;    // attempts that ran to success in the window
  uint32_t node_lost = 0;    // leases lost: the node vanished mid-attempt
  uint32_t node_failed = 0;  // platform failures and unacknowledged assignments
  // Exponentially weighted lateness of heartbeats, as a fraction of the
  // interval (0: always on time; 1: typically a whole interval late).
  double heartbeat_lateness = 0;
  uint32_t throttle_reports = 0;  // advertisements with GPUs thermally/power throttled
  // The rest of the physical-work handshake (docs/scheduling.md, Reliability):
  // heartbeat gap jitter (standard deviation, as a fraction of the interval),
  // heartbeats lost on the way (fraction, EWMA), the round trip the agent
  // measured, and stalls (gaps over twice the interval while online: the
  // host froze or suspended without saying so).
  double heartbeat_jitter = 0;
  double heartbeat_loss = 0;
  double rtt_ms = 0;
  uint32_t stalls = 0;
  // Pauses the owner asked for (pauseWhen, heat, power): shown, never held
  // against the node — lending a machine must not cost its owner the use of it.
  uint32_t owner_pauses = 0;
  int64_t owner_paused_ms = 0;
  // Its provider's record under verification (verify/caught.h): per mille
  // (1000: never proven wrong), and how often it was proven wrong.
  uint32_t provider_verification = 1000;
  uint32_t provider_caught = 0;
};

struct Reliability {
  double score = 0.5;
  std::string detail = "no history yet";  // "12 ok, 1 lost, 0 failed; heartbeats 3% late; 0 throttled"
};

// The score is a smoothed success ratio with a prior of one success and one
// failure (so a node with no history scores 0.5, like an unknown), where a
// lost lease weighs 3 failures (the grid pays detection time and redone work)
// and a platform failure 2; then heartbeat lateness takes off up to half and
// throttling up to 30%, lost heartbeats up to half, jitter up to 20%, a slow
// round trip up to 10% (1% per 100 ms) and stalls up to 30% (5% each). The
// job's own failures and the owner's pauses are not the node's and do not count.
Reliability ScoreReliability(const ReliabilityInputs& in);

// The NVML throttle-reason bits that mean the device is slowed by heat or power.
inline constexpr uint64_t kThermalOrPowerThrottle = 0x8 | 0x20 | 0x40 | 0x80;

}  // namespace idlegrid::sched
