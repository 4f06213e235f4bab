#pragma once
// What happens to a provider proven wrong (a lost vote, a failed challenge,
// a malformed output): its trust counts reset (adaptive.h; the caller resets
// every image of the provider, not only the one it cheated on), its
// reliability lowered, and the results it had accepted without a check
// since its last verified one re-verified (backtracking). Slashing its stake
// is the ledger's business (src/ledger); this says only that it is due.
#include <cstdint>
#include <string>
#include <vector>

#include "verify/spec.h"

namespace idlegrid::verify {

enum class Check {
  kUnverified,       // accepted on one run's word (an adaptive sample not drawn)
  kReplicated,       // accepted by a quorum it was part of
  kChallengePassed,  // a known-answer task it got right
};

// One accepted result, as the caller's history holds it. The history the
// caller passes is the window still open to re-verification (results whose
// payment has not settled past the dispute window), in acceptance order.
struct AcceptedResult {
  std::string result_id;  // the attempt id
  std::string provider;
  Check check = Check::kUnverified;
  std::vector<std::string> vouched_by;  // kReplicated: the OTHER providers whose runs agreed
};

// How far back to re-verify a caught provider's unverified results.
enum class Backtrack {
  kSinceLastVerified,  // issue 13's rule: only those after its last verified result
  kWholeWindow,        // all of them in the window: a cheater that cheats on a
                       // fraction of its work passes most checks, so "last
                       // verified" proves little about the results before it
  kEscalating,         // since last verified on a first catch in the window,
                       // the whole window on a repeat: an honest provider
                       // outvoted once by colluders costs little to re-check,
                       // a cheater caught twice has all of its work re-checked
};

struct CaughtOutcome {
  uint32_t consecutive_valid = 0;  // the new count: always 0
  uint32_t reliability = 0;        // per mille, after the penalty
  uint32_t reliability_lost = 0;
  // The provider's own results accepted on its word alone (per `backtrack`),
  // oldest first: each is re-verified by running it again elsewhere and
  // comparing with what it returned (its answer is the claim under test).
  std::vector<std::string> reverify;
  // Replicated results whose quorum it was part of, its own or another's: its
  // vote is worth nothing now, so the caller drops it and the result rests on
  // the other voters' word, as if accepted unverified from them (re-verified
  // if one of THEM is caught). Running them again now would cost a run for
  // every result a cheater ever agreed with, most of them right.
  std::vector<std::string> demote;
};

// Applies the policy to `provider`, whose reliability (per mille) was
// `reliability` and who was proven wrong `caught_before` times earlier in the
// window, given the accepted-results window `history`.
CaughtOutcome OnCaught(const std::string& provider, uint32_t reliability, uint32_t caught_before,
                       const VerificationPolicy& policy, Backtrack backtrack,
                       const std::vector<AcceptedResult>& history);

// Reliability after a verified-valid result: recovers one per mille, up to 1000.
uint32_t ReliabilityAfterValid(uint32_t reliability);

}  // namespace idlegrid::verify
