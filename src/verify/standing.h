#pragma once
// Placement by standing: an account whose results are not yet trusted for
// an image (fewer verified results in a row than the trust threshold,
// adaptive.h) is "unproven", and so is every fresh identity, a caught
// colluder come back under a new name included. Verification cannot make
// whitewashing cheap to undo (each comeback's unchecked work costs a run per
// result to re-verify); a cap on the share of work unproven accounts hold
// bounds it whatever the group's size. bench/verification measures it
// (docs/PERFORMANCE.md, "Verification"); the scheduler's standing stage
// (sched/standing.h) applies it. Pure: the caller counts what is in flight.
#include <cstdint>

namespace idlegrid::verify {

struct StandingRule {
  double unproven_share = 1;  // of the verified work in flight; 1: no cap
};

// Whether one more task of verified work may go to an unproven account when
// `unproven` of the `all` tasks in flight are on unproven accounts: while
// that keeps them within the share. Always when no proven account could
// take it (`any_proven` false: a grid of newcomers still runs, and earns its
// standing), and when none is on an unproven account yet.
inline bool UnprovenMayTake(const StandingRule& rule, uint64_t unproven, uint64_t all, bool any_proven) {
  if (rule.unproven_share >= 1 || !any_proven || unproven == 0) return true;
  return double(unproven + 1) <= rule.unproven_share * double(all + 1);
}

}  // namespace idlegrid::verify
