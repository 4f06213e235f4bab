// bench_verification: the cheating simulator (simulator.h). Prints the
// figures docs/PERFORMANCE.md ("Verification") quotes; asserts nothing.
//   bench_verification [--tasks N] [--seed S]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

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
  std::printf("%-34s accepted %7llu  wrong %5llu (%.2e)  settled wrong %.2e  overhead %5.1f%%  replicated %5.1f%%  "
              "reverified %5llu  no-quorum %llu  ledger %s\n",
              name, (unsigned long long)r.accepted, (unsigned long long)r.accepted_wrong, r.AcceptedWrongFraction(),
              r.SettledWrongFraction(),
              100 * r.Overhead(), r.accepted ? 100.0 * double(r.replicated) / double(r.accepted) : 0,
              (unsigned long long)r.reverified, (unsigned long long)r.failed_verification,
              r.ledger_sum == r.ledger_deposits ? "balanced" : "UNBALANCED");
}

void PrintClasses(const SimReport& r) {
  std::printf("  %-10s %8s %8s %7s %7s %6s %9s %10s %10s %10s %12s %10s\n", "class", "accounts", "runs", "wrong",
              "caught", "susp.", "runs2catch", "earned", "slashed", "kept-wrong", "net", "net/run");
  for (const ClassReport& c : r.classes) {
    std::printf("  %-10s %8llu %8llu %7llu %7llu %6llu %9.1f %10.1f %10.1f %10.1f %12.1f %10.3f\n", c.name.c_str(),
                (unsigned long long)c.accounts, (unsigned long long)c.runs, (unsigned long long)c.wrong,
                (unsigned long long)c.caught, (unsigned long long)c.suspended, c.mean_runs_to_catch,
                Credits(c.earned), Credits(c.slashed), Credits(c.kept_for_wrong), Credits(c.net),
                c.runs ? Credits(c.net) / double(c.runs) : 0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  uint64_t tasks = 200'000, seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--tasks")) tasks = std::strtoull(argv[i + 1], nullptr, 10);
    if (!std::strcmp(argv[i], "--seed")) seed = std::strtoull(argv[i + 1], nullptr, 10);
  }
  SimConfig base = Target(tasks, seed);
  // A shorter dispute window than the ledger's default day (86400 tasks at
  // one a second), so that a run of a few windows shows what settles wrong.
  base.ledger.dispute_window_ms = 20'000'000;
  std::printf("verification policy: adaptive, trust threshold %u, audit floor %.2f, %u replicas (+%u tie-breakers, lead of %u), "
              "reliability penalty %u/1000, suspended below %u; ledger: slash %.1f credits (%.0f%% to the requester), "
              "dispute window %lld tasks, price 1 credit/run, compute cost %.1f, stake %.0f\n",
              base.policy.trust_threshold, base.policy.audit_floor, base.policy.replicas, base.policy.extra_runs,
              base.policy.dispute_margin,
              base.policy.reliability_penalty, base.suspend_below, Credits(base.ledger.slash_micro),
              double(base.ledger.slash_to_requester_ppm) / 1e4, (long long)(base.ledger.dispute_window_ms / 1000),
              Credits(base.compute_cost), Credits(base.stake));
  std::printf("\n== 1. target: 100 providers, 20 colluding (10%% of results), 5 honest newcomers at half time; %llu tasks\n",
              (unsigned long long)tasks);
  SimReport target = Simulate(base);
  PrintHeadline("adaptive (policy default)", target);
  PrintClasses(target);
  std::printf("  newcomers trusted: %llu of %u, after at most %u verified results\n",
              (unsigned long long)target.classes[2].trusted, (unsigned)target.classes[2].accounts,
              target.classes[2].max_verified_to_trust);

  std::printf("\n== 2. the same fleet under other verification choices\n");
  struct Variant {
    const char* name;
    void (*edit)(SimConfig*);
  } variants[] = {
      {"none", [](SimConfig* c) { c->mode = verify::Mode::kNone; }},
      {"replicate 2 (always)", [](SimConfig* c) { c->mode = verify::Mode::kReplicate; }},
      {"adaptive, BOINC 1/count (no floor)", [](SimConfig* c) { c->policy.audit_floor = 0; }},
      {"adaptive, backtrack since last ok",
       [](SimConfig* c) { c->backtrack = verify::Backtrack::kSinceLastVerified; }},
      {"adaptive, backtrack whole window", [](SimConfig* c) { c->backtrack = verify::Backtrack::kWholeWindow; }},
      {"adaptive, no suspension", [](SimConfig* c) { c->suspend_below = 0; }},
      {"adaptive + 5% challenges", [](SimConfig* c) { c->challenge_rate = 0.05; }},
      {"adaptive, floor 0.05", [](SimConfig* c) { c->policy.audit_floor = 0.05; }},
      {"adaptive, floor 0.25", [](SimConfig* c) { c->policy.audit_floor = 0.25; }},
      {"adaptive, suspended on 2nd catch", [](SimConfig* c) { c->policy.reliability_penalty = 500; c->suspend_below = 500; }},
      {"adaptive, no whitewash", [](SimConfig* c) { c->whitewash = false; }},
      {"adaptive, margin 1 (+2 runs)", [](SimConfig* c) { c->policy.dispute_margin = 1; c->policy.extra_runs = 2; }},
  };
  for (const Variant& v : variants) {
    SimConfig c = base;
    v.edit(&c);
    PrintHeadline(v.name, Simulate(c));
  }

  std::printf("\n== 3. does cheating pay? 80 honest, 10 lazy and 10 colluding at each cheat rate\n");
  std::printf("  %-6s %-10s %10s %10s %12s %12s %10s %10s  %s\n", "rate", "class", "slashed", "kept-wrong",
              "compute-saved", "gain-cheat", "net/run", "honest/run", "verdict");
  for (double rate : {0.01, 0.02, 0.05, 0.10, 0.20, 0.50, 1.00}) {
    SimConfig c = base;
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
  return 0;
}
