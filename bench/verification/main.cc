// bench_verification: the cheating simulator (simulator.h). Prints the
// figures docs/PERFORMANCE.md ("Verification") quotes; asserts nothing.
//   bench_verification [--tasks N] [--seed S] [--seeds K] [--strategies-only]
// --seeds K runs the strategies (section 1) with seeds S..S+K-1 and prints
// each run and their spread, to show the figures are stable.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "bench/verification/simulator.h"

using idlegrid::bench::Behaviour;
using idlegrid::bench::ClassReport;
using idlegrid::bench::SimConfig;
using idlegrid::bench::SimReport;
using idlegrid::bench::Simulate;
using idlegrid::ledger::kMicrosPerCredit;
namespace verify = idlegrid::verify;

namespace {

double Credits(int64_t micros) { return double(micros) / double(kMicrosPerCredit); }

SimConfig Target(uint64_t tasks, uint64_t seed) {
  SimConfig c;
  c.tasks = tasks;
  c.seed = seed;
  c.classes = {{"honest", Behaviour::kHonest, 75, 0, 0},
               {"colluding", Behaviour::kColluding, 20, 0.10, 0},
               {"newcomer", Behaviour::kHonest, 5, 0, 0.5}};
  return c;
}

void PrintHeadline(const char* name, const SimReport& r) {
  std::printf(
      "%-34s accepted %7llu  wrong %5llu (%.2e)  settled wrong %.2e  overhead %5.1f%%  replicated %5.1f%%  "
      "reverified %5llu  no-quorum %llu  ledger %s\n",
      name, (unsigned long long)r.accepted, (unsigned long long)r.accepted_wrong, r.AcceptedWrongFraction(),
      r.SettledWrongFraction(), 100 * r.Overhead(), r.accepted ? 100.0 * double(r.replicated) / double(r.accepted) : 0,
      (unsigned long long)r.reverified, (unsigned long long)r.failed_verification,
      r.ledger_sum == r.ledger_deposits ? "balanced" : "UNBALANCED");
}

// One strategy on the target fleet, as docs/PERFORMANCE.md's table has it.
void PrintStrategyRow(const char* name, const SimReport& r) {
  const ClassReport* colluding = nullptr;
  const ClassReport* honest = nullptr;
  const ClassReport* newcomer = nullptr;
  for (const ClassReport& c : r.classes) {
    if (c.name == "colluding") colluding = &c;
    if (c.name == "honest") honest = &c;
    if (c.name == "newcomer") newcomer = &c;
  }
  const auto per_run = [](const ClassReport* c) { return c && c->runs ? Credits(c->net) / double(c->runs) : 0.0; };
  std::printf(
      "| %s | %.2e | %.2e | %.1f%% | %.1f | %llu | %.3f | %.3f | %.3f | %llu/%llu, mean %.1f, max %u | %llu checks, "
      "%llu failed, %llu against a wrong answer |\n",
      name, r.AcceptedWrongFraction(), r.SettledWrongFraction(), 100 * r.Overhead(),
      colluding ? colluding->mean_runs_to_catch : 0.0, honest ? (unsigned long long)honest->caught : 0ull,
      per_run(honest), per_run(colluding), per_run(newcomer), newcomer ? (unsigned long long)newcomer->trusted : 0ull,
      newcomer ? (unsigned long long)newcomer->accounts : 0ull,
      newcomer && newcomer->trusted ? double(newcomer->trust_verified_sum) / double(newcomer->trusted) : 0.0,
      newcomer ? newcomer->max_verified_to_trust : 0u, (unsigned long long)r.known_answer_checks,
      (unsigned long long)r.known_answer_failed, (unsigned long long)r.known_answer_wrong);
}

void PrintClasses(const SimReport& r) {
  std::printf("  %-10s %8s %8s %7s %7s %6s %9s %10s %10s %10s %12s %10s\n", "class", "accounts", "runs", "wrong",
              "caught", "susp.", "runs2catch", "earned", "slashed", "kept-wrong", "net", "net/run");
  for (const ClassReport& c : r.classes) {
    std::printf("  %-10s %8llu %8llu %7llu %7llu %6llu %9.1f %10.1f %10.1f %10.1f %12.1f %10.3f\n", c.name.c_str(),
                (unsigned long long)c.accounts, (unsigned long long)c.runs, (unsigned long long)c.wrong,
                (unsigned long long)c.caught, (unsigned long long)c.suspended, c.mean_runs_to_catch, Credits(c.earned),
                Credits(c.slashed), Credits(c.kept_for_wrong), Credits(c.net),
                c.runs ? Credits(c.net) / double(c.runs) : 0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  uint64_t tasks = 200'000, seed = 1, seeds = 1;
  bool strategies_only = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--strategies-only")) strategies_only = true;
    if (i + 1 >= argc) continue;
    if (!std::strcmp(argv[i], "--tasks")) tasks = std::strtoull(argv[i + 1], nullptr, 10);
    if (!std::strcmp(argv[i], "--seed")) seed = std::strtoull(argv[i + 1], nullptr, 10);
    if (!std::strcmp(argv[i], "--seeds")) seeds = std::max<uint64_t>(1, std::strtoull(argv[i + 1], nullptr, 10));
  }
  SimConfig base = Target(tasks, seed);
  // A shorter dispute window than the ledger's default day (86400 tasks at
  // one a second), so that a run of a few windows shows what settles wrong.
  base.ledger.dispute_window_ms = 20'000'000;
  std::printf(
      "verification policy: adaptive, trust threshold %u, audit floor %.2f, %u replicas (+%u tie-breakers, lead of "
      "%u), "
      "challenge rate %.2f, reliability penalty %u/1000, suspended below %u; ledger: slash %.1f credits (%.0f%% to "
      "the requester), dispute window %lld tasks, price 1 credit/run, compute cost %.1f, stake %.0f\n",
      base.policy.trust_threshold, base.policy.audit_floor, base.policy.replicas, base.policy.extra_runs,
      base.policy.dispute_margin, base.policy.challenge_rate, base.policy.reliability_penalty, base.suspend_below,
      Credits(base.ledger.slash_micro), double(base.ledger.slash_to_requester_ppm) / 1e4,
      (long long)(base.ledger.dispute_window_ms / 1000), Credits(base.compute_cost), Credits(base.stake));

  struct Variant {
    const char* name;
    void (*edit)(SimConfig*);
  };
  // The strategies docs/PERFORMANCE.md tabulates, on the target fleet.
  const Variant strategies[] = {
      {"none", [](SimConfig* c) { c->mode = verify::Mode::kNone; }},
      {"replicate 2 (always)", [](SimConfig* c) { c->mode = verify::Mode::kReplicate; }},
      {"adaptive alone (floor 0.12)", [](SimConfig*) {}},
      {"challenge (the coordinator's mode)",
       [](SimConfig* c) {
         c->mode = verify::Mode::kChallenge;
         c->known_answer_rate = c->policy.challenge_rate;
       }},
      {"adaptive + known answers",
       [](SimConfig* c) {
         c->known_answer_rate = c->policy.challenge_rate;
         c->policy.audit_floor = 0;
       }},
      {"adaptive + known answers, floor kept",
       [](SimConfig* c) {
         c->known_answer_rate = c->policy.challenge_rate;
         c->keep_floor_with_known_answers = true;
       }},
      {"adaptive, unproven placed at 1/10", [](SimConfig* c) { c->unproven_weight = 0.10; }},
      {"adaptive + known answers, unproven placed at 1/10",
       [](SimConfig* c) {
         c->known_answer_rate = c->policy.challenge_rate;
         c->policy.audit_floor = 0;
         c->unproven_weight = 0.10;
       }},
      {"adaptive, no whitewash", [](SimConfig* c) { c->whitewash = false; }},
      {"adaptive + known answers, no whitewash",
       [](SimConfig* c) {
         c->known_answer_rate = c->policy.challenge_rate;
         c->policy.audit_floor = 0;
         c->whitewash = false;
       }},

      // Challenge mode as it was: nothing replicated once the job had one
      // known answer (kept last: section 3 picks strategies by index).
      {"challenge, no known-answer supply",
       [](SimConfig* c) {
         c->mode = verify::Mode::kChallenge;
         c->known_answer_rate = c->policy.challenge_rate;
         c->policy.audit_floor = 0;
       }},
      // Placement by standing as a cap on unproven accounts' share of the
      // work (verify/standing.h), the form a scheduler stage can apply.
      {"adaptive, unproven share capped at 5%", [](SimConfig* c) { c->unproven_share = 0.05; }},
      {"adaptive + known answers, unproven share capped at 5%",
       [](SimConfig* c) {
         c->known_answer_rate = c->policy.challenge_rate;
         c->policy.audit_floor = 0;
         c->unproven_share = 0.05;
       }},
      {"adaptive + known answers, unproven share capped at 2%",
       [](SimConfig* c) {
         c->known_answer_rate = c->policy.challenge_rate;
         c->policy.audit_floor = 0;
         c->unproven_share = 0.02;
       }},
      // What a coordinator's adaptive mode does unless told otherwise
      // (verify::VerificationPolicy): known-answer checks after results
      // taken on a trusted provider's word, its audit floor until the job
      // has a known answer (then the checks take its place), and the
      // standing cap its scheduler applies (sched/standing.h).
      {"adaptive, the coordinator's defaults",
       [](SimConfig* c) {
         c->known_answer_rate = c->policy.known_answer_rate;
         c->unproven_share = c->policy.unproven_share;
       }},
      {"adaptive, the coordinator's defaults, floor kept",
       [](SimConfig* c) {
         c->known_answer_rate = c->policy.known_answer_rate;
         c->unproven_share = c->policy.unproven_share;
         c->keep_floor_with_known_answers = true;
       }},
      {"adaptive, the coordinator's defaults, unproven share 1%",
       [](SimConfig* c) {
         c->known_answer_rate = c->policy.known_answer_rate;
         c->unproven_share = 0.01;
       }},
      {"adaptive, the coordinator's defaults, known answers 0.10",
       [](SimConfig* c) {
         c->known_answer_rate = 0.10;
         c->unproven_share = c->policy.unproven_share;
       }},
  };
  std::printf(
      "\n== 1. strategies on the target fleet: 100 providers, 20 colluding (10%% of results), 5 honest newcomers "
      "at half time; %llu tasks, seeds %llu..%llu\n",
      (unsigned long long)tasks, (unsigned long long)seed, (unsigned long long)(seed + seeds - 1));
  std::printf(
      "| strategy | accepted wrong | settled wrong | overhead | colluder runs to catch | honest caught | "
      "net/run honest | net/run colluding | net/run newcomer | newcomers trusted (verified results) | "
      "known-answer checks |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::vector<std::vector<SimReport>> runs(std::size(strategies));
  for (uint64_t s = seed; s < seed + seeds; ++s) {
    for (size_t k = 0; k < std::size(strategies); ++k) {
      SimConfig c = base;
      c.seed = s;
      strategies[k].edit(&c);
      runs[k].push_back(Simulate(c));
      const std::string name = std::string(strategies[k].name) + (seeds > 1 ? ", seed " + std::to_string(s) : "");
      PrintStrategyRow(name.c_str(), runs[k].back());
    }
  }
  if (seeds > 1) {
    std::printf("\nspread over %llu seeds: accepted wrong mean [min, max]; overhead mean [min, max]\n",
                (unsigned long long)seeds);
    for (size_t k = 0; k < std::size(strategies); ++k) {
      double w = 0, wmin = 1, wmax = 0, o = 0, omin = 1e9, omax = 0;
      for (const SimReport& r : runs[k]) {
        w += r.AcceptedWrongFraction();
        wmin = std::min(wmin, r.AcceptedWrongFraction());
        wmax = std::max(wmax, r.AcceptedWrongFraction());
        o += r.Overhead();
        omin = std::min(omin, r.Overhead());
        omax = std::max(omax, r.Overhead());
      }
      std::printf("  %-42s %.2e [%.2e, %.2e]  %5.1f%% [%5.1f%%, %5.1f%%]\n", strategies[k].name, w / double(seeds),
                  wmin, wmax, 100 * o / double(seeds), 100 * omin, 100 * omax);
    }
  }
  std::printf("\nper class, first seed:\n");
  for (size_t k = 0; k < std::size(strategies); ++k) {
    PrintHeadline(strategies[k].name, runs[k].front());
    PrintClasses(runs[k].front());
  }
  if (strategies_only) return 0;

  std::printf("\n== 2. the same fleet under other verification choices (seed %llu)\n", (unsigned long long)seed);
  const Variant variants[] = {
      {"adaptive, BOINC 1/count (no floor)", [](SimConfig* c) { c->policy.audit_floor = 0; }},
      {"adaptive, backtrack since last ok", [](SimConfig* c) { c->backtrack = verify::Backtrack::kSinceLastVerified; }},
      {"adaptive, backtrack whole window", [](SimConfig* c) { c->backtrack = verify::Backtrack::kWholeWindow; }},
      {"adaptive, no suspension", [](SimConfig* c) { c->suspend_below = 0; }},
      {"adaptive + 5% operator challenges", [](SimConfig* c) { c->challenge_rate = 0.05; }},
      {"adaptive, floor 0.05", [](SimConfig* c) { c->policy.audit_floor = 0.05; }},
      {"adaptive, floor 0.25", [](SimConfig* c) { c->policy.audit_floor = 0.25; }},
      {"adaptive, suspended on 2nd catch",
       [](SimConfig* c) {
         c->policy.reliability_penalty = 500;
         c->suspend_below = 500;
       }},
      {"adaptive, margin 1 (+2 runs)",
       [](SimConfig* c) {
         c->policy.dispute_margin = 1;
         c->policy.extra_runs = 2;
       }},
      {"adaptive + known answers 0.02",
       [](SimConfig* c) {
         c->known_answer_rate = 0.02;
         c->policy.audit_floor = 0;
       }},
      {"adaptive + known answers 0.10",
       [](SimConfig* c) {
         c->known_answer_rate = 0.10;
         c->policy.audit_floor = 0;
       }},
      {"adaptive + known answers 0.20",
       [](SimConfig* c) {
         c->known_answer_rate = 0.20;
         c->policy.audit_floor = 0;
       }},
      {"adaptive + known answers, whole window",
       [](SimConfig* c) {
         c->known_answer_rate = c->policy.challenge_rate;
         c->policy.audit_floor = 0;
         c->backtrack = verify::Backtrack::kWholeWindow;
       }},
      {"adaptive + known answers, suspended on 2nd catch",
       [](SimConfig* c) {
         c->known_answer_rate = c->policy.challenge_rate;
         c->policy.audit_floor = 0;
         c->policy.reliability_penalty = 500;
         c->suspend_below = 500;
       }},
      {"adaptive + known answers, threshold 20",
       [](SimConfig* c) {
         c->known_answer_rate = c->policy.challenge_rate;
         c->policy.audit_floor = 0;
         c->policy.trust_threshold = 20;
       }},
      {"adaptive + known answers, unproven placed at 1/4",
       [](SimConfig* c) {
         c->known_answer_rate = c->policy.challenge_rate;
         c->policy.audit_floor = 0;
         c->unproven_weight = 0.25;
       }},
      {"adaptive, unproven placed at 1/4", [](SimConfig* c) { c->unproven_weight = 0.25; }},
      {"adaptive + known answers 0.02, unproven placed at 1/10",
       [](SimConfig* c) {
         c->known_answer_rate = 0.02;
         c->policy.audit_floor = 0;
         c->unproven_weight = 0.10;
       }},
      {"adaptive, floor 0.05, unproven placed at 1/10",
       [](SimConfig* c) {
         c->policy.audit_floor = 0.05;
         c->unproven_weight = 0.10;
       }},
      {"challenge, known answers 0.20",
       [](SimConfig* c) {
         c->mode = verify::Mode::kChallenge;
         c->known_answer_rate = 0.20;
       }},
  };
  for (const Variant& v : variants) {
    SimConfig c = base;
    v.edit(&c);
    PrintHeadline(v.name, Simulate(c));
  }
  // Does cheating pay, under the default and under known answers?
  for (const Variant& strategy : {strategies[2], strategies[4], strategies[7]}) {
    std::printf("\n== 3. does cheating pay under %s? 80 honest, 10 lazy and 10 colluding at each cheat rate\n",
                strategy.name);
    std::printf("  %-6s %-10s %10s %10s %12s %12s %10s %10s  %s\n", "rate", "class", "slashed", "kept-wrong",
                "compute-saved", "gain-cheat", "net/run", "honest/run", "verdict");
    for (double rate : {0.01, 0.02, 0.05, 0.10, 0.20, 0.50, 1.00}) {
      SimConfig c = base;
      strategy.edit(&c);
      c.classes = {{"honest", Behaviour::kHonest, 80, 0, 0},
                   {"lazy", Behaviour::kLazy, 10, rate, 0},
                   {"colluding", Behaviour::kColluding, 10, rate, 0}};
      SimReport r = Simulate(c);
      const ClassReport& honest = r.classes[0];
      const double honest_per_run = honest.runs ? Credits(honest.net) / double(honest.runs) : 0;
      for (size_t k = 1; k < r.classes.size(); ++k) {
        const ClassReport& x = r.classes[k];
        const double gain = Credits(x.kept_for_wrong + x.compute_saved - x.slashed);
        std::printf("  %5.0f%% %-10s %10.1f %10.1f %12.1f %12.1f %10.3f %10.3f  %s\n", rate * 100, x.name.c_str(),
                    Credits(x.slashed), Credits(x.kept_for_wrong), Credits(x.compute_saved), gain,
                    x.runs ? Credits(x.net) / double(x.runs) : 0, honest_per_run, gain < 0 ? "loses" : "PAYS");
      }
    }
  }
  return 0;
}
