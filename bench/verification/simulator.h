#pragma once
// The cheating simulator: simulated providers (honest, lazy, colluding,
// newcomers) run a stream of tasks whose results are checked by the REAL
// verification core (src/verify) and paid, clawed back and slashed through
// the REAL ledger core (src/ledger plans applied to a ledger::MemoryBook).
// Only the providers and the scheduler's pick are simulated.
//
// Time is one task per second; the dispute window is the ledger policy's.
#include <cstdint>
#include <string>
#include <vector>

#include "ledger/accounts.h"
#include "ledger/plans.h"
#include "verify/caught.h"
#include "verify/spec.h"

namespace idlegrid::bench {

enum class Behaviour {
  kHonest,     // always right
  kLazy,       // returns garbage (unique to the run) on `cheat_rate` of its runs
  kColluding,  // the group agrees on which tasks to fake (`cheat_rate` of them) and fakes them alike
};

struct ProviderClass {
  std::string name;
  Behaviour behaviour = Behaviour::kHonest;
  uint32_t count = 0;
  double cheat_rate = 0;
  double joins_at = 0;  // fraction of the run after which they appear (newcomers)
};

struct SimConfig {
  std::vector<ProviderClass> classes;
  uint64_t tasks = 200'000;
  uint64_t seed = 1;
  verify::Mode mode = verify::Mode::kAdaptive;
  verify::VerificationPolicy policy;
  verify::Backtrack backtrack = verify::Backtrack::kEscalating;
  double challenge_rate = 0;  // operator-held known answers (always right) mixed into every stream
  // Known-answer checks as the coordinator sends them (verify/challenge.h,
  // coordinator/verification.cc): after a result accepted on its run's word,
  // at this rate, the provider runs a task of the same job that it never ran
  // and that two providers already agreed on; the agreed result is the
  // answer, judged by verify::JudgeChallenge (so a colluder cannot outvote
  // it, but an answer the group itself got accepted is wrong, and an honest
  // provider checked against it is convicted). Under Mode::kChallenge (the
  // coordinator's challenge mode) every result is taken on its word once the
  // job has a known answer, except a caught provider's until one of its
  // results is verified again; under kAdaptive the checks are added to the
  // adaptive rule (newcomers replicated; policy.audit_floor 0 leaves BOINC's
  // 1/count as the only audit replicas).
  double known_answer_rate = 0;
  // Placement by standing (a scheduler policy the coordinator does not
  // have): a provider with fewer than trust_threshold verified results in a
  // row is offered work with this weight relative to the others (1: uniform).
  double unproven_weight = 1;
  // Placement by standing as a cap (verify/standing.h, the rule a scheduler
  // stage would apply): unproven accounts may hold at most this share of the
  // work, counted over the last kStandingWindow runs (the simulator has no
  // work in flight: one task a second). 1: no cap.
  double unproven_share = 1;
  // Adaptive with known-answer checks: keep the audit floor even once the
  // job has a known answer (the coordinator lets it give way, AuditFloor).
  bool keep_floor_with_known_answers = false;
  uint32_t suspend_below = 250;  // reliability (per mille) under which a provider gets no work
  bool whitewash = true;         // a suspended provider returns as a new account (a new stake)
  ledger::LedgerPolicy ledger;
  ledger::Micros price = ledger::kMicrosPerCredit;       // per run
  ledger::Micros compute_cost = 400'000;                 // a provider's cost of a real run
  ledger::Micros stake = 20 * ledger::kMicrosPerCredit;  // staked on joining and topped up to
  ledger::Micros min_stake = 10 * ledger::kMicrosPerCredit;
};

struct ClassReport {
  std::string name;
  uint64_t accounts = 0;  // including whitewashed comebacks
  uint64_t runs = 0;
  uint64_t wrong = 0;   // wrong results it returned
  uint64_t caught = 0;  // results proven wrong
  uint64_t suspended = 0;
  double mean_runs_to_catch = 0;  // own runs from a first uncaught wrong result to being caught
  ledger::Micros earned = 0;      // released + still pending charges
  ledger::Micros slashed = 0;
  ledger::Micros kept_for_wrong = 0;   // charges for wrong results never clawed back
  ledger::Micros compute_saved = 0;    // cost of the real runs it skipped
  ledger::Micros net = 0;              // earned - slashed - compute spent
  uint32_t max_verified_to_trust = 0;  // newcomers: verified results before first trusted
  uint64_t trusted = 0;                // providers of the class that became trusted
  uint64_t trust_verified_sum = 0;     // verified results before first trusted, summed over the
                                       // `trusted` providers (their mean: the class's trust time)
};

struct SimReport {
  uint64_t accepted = 0;
  uint64_t accepted_wrong = 0;  // at the end, after every re-verification
  uint64_t settled = 0;         // accepted results whose dispute window has closed
  uint64_t settled_wrong = 0;   // of those, wrong: for good
  uint64_t failed_verification = 0;
  uint64_t executions = 0;  // every run: firsts, replicas, tie-breakers, challenges, re-verifications
  uint64_t replicated = 0;
  uint64_t reverified = 0;
  uint64_t challenges = 0;
  uint64_t known_answer_checks = 0;
  uint64_t known_answer_failed = 0;
  uint64_t known_answer_wrong = 0;     // checks whose "known" answer was itself a wrong accepted result
  ledger::Micros ledger_sum = 0;       // sum over all accounts but world
  ledger::Micros ledger_deposits = 0;  // must equal ledger_sum
  std::vector<ClassReport> classes;

  double AcceptedWrongFraction() const { return accepted ? double(accepted_wrong) / double(accepted) : 0; }
  double SettledWrongFraction() const { return settled ? double(settled_wrong) / double(settled) : 0; }
  double Overhead() const { return accepted ? double(executions) / double(accepted) - 1 : 0; }
};

SimReport Simulate(const SimConfig& config);

}  // namespace idlegrid::bench
