#pragma once
// Adaptive replication (BOINC's, improved): trust is earned per (provider
// account, image) by consecutive verified results. Below the threshold every
// result is replicated; above it a result is replicated with probability
// 1/count, but never less often than the policy's audit floor, so a provider
// with a long clean record is still checked (BOINC's 1/count alone tends to
// zero, which a patient cheater exploits). A wrong result resets the count.
//
// The random draw comes in as a parameter: the caller owns the random source.
#include <cstdint>

namespace idlegrid::verify {

struct AdaptiveRule {
  uint32_t trust_threshold = 10;
  double audit_floor = 0.12;
};

struct ReplicationChoice {
  bool replicate = true;
  double probability = 1;  // of replicating at this count
  bool trusted = false;    // count >= threshold: not always replicated any more
};

// Whether to replicate the next result of a provider whose consecutive
// verified count (for this image) is `consecutive_valid`. `uniform_draw` is
// uniform in [0, 1); it replicates when draw < probability.
ReplicationChoice ChooseReplication(const AdaptiveRule& rule, uint32_t consecutive_valid, double uniform_draw);

// The floor a trusted provider's lone result is held to: the policy's,
// except where known-answer checks reach the provider (checks on, and the
// job has a known answer the provider never ran): a check catches a patient cheater at one
// run where the floor's audits cost a run per result, so the floor gives
// way to the checks. bench/verification, with the standing cap, ten seeds:
// the 0.12 floor plus checks cost 21.9% overhead (3.5e-4 accepted wrong),
// the checks in its place 15.9% (7.1e-4; docs/PERFORMANCE.md). A provider no check can
// reach (a job of one task, none accepted by a quorum yet, or the provider
// voted in every one) keeps the floor.
inline double AuditFloor(double policy_floor, double known_answer_rate, bool check_can_reach) {
  return check_can_reach && known_answer_rate > 0 ? 0 : policy_floor;
}

// The count after a verification of one of the provider's results: +1 when
// it was valid (saturating), 0 when it was proven wrong. Results accepted
// without verification leave it unchanged.
uint32_t CountAfterVerification(uint32_t consecutive_valid, bool valid);

}  // namespace idlegrid::verify
