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

// The count after a verification of one of the provider's results: +1 when
// it was valid (saturating), 0 when it was proven wrong. Results accepted
// without verification leave it unchanged.
uint32_t CountAfterVerification(uint32_t consecutive_valid, bool valid);

}  // namespace idlegrid::verify
