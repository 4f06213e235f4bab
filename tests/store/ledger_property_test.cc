// Properties of the ledger's books on both backends (issue 13): after any
// random sequence of deposits, submissions (escrow), attempt results
// (charges), releases, disputes (clawback and slash), cancels (refunds),
// stakes, stale plans and crashes, the sum over every account but world
// equals deposits minus withdrawals, no account but world is negative, every
// balance equals the sum of its entries, and the books equal a MemoryBook fed
// the same postings. And a settlement killed with SIGKILL leaves the books
// balanced and finishes when redone.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ledger/book.h"
#include "ledger/plans.h"
#include "store/settlement_runner.h"
#include "store/store.h"
#include "store/store_fixture.h"

namespace idlegrid::ledger {
// How gtest prints an account in a failed comparison.
inline void PrintTo(const AccountKey& key, std::ostream* os) { *os << AccountName(key); }
}  // namespace idlegrid::ledger

namespace idlegrid::store {
namespace {

using backends::BackendKind;
using backends::StoreFixture;
using ledger::AccountKey;
using ledger::Kind;
using ledger::Micros;
using ledger::Posting;

constexpr Micros C = ledger::kMicrosPerCredit;

std::map<AccountKey, Micros> NonZero(const std::map<AccountKey, Micros>& balances) {
  std::map<AccountKey, Micros> out;
  for (const auto& [k, v] : balances) {
    if (v != 0) out[k] = v;
  }
  return out;
}

class LedgerPropertyTest : public StoreFixture, public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override { CreateDatabase(GetParam()); }

  std::map<AccountKey, Micros> Balances(const std::optional<std::string>& owner = std::nullopt) {
    auto b = store_->LedgerBalances(owner);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? *b : std::map<AccountKey, Micros>{};
  }
  Micros BalanceOf(const AccountKey& key) {
    auto b = Balances(key.owner);
    auto it = b.find(key);
    return it == b.end() ? 0 : it->second;
  }
  Micros TotalOf(const std::string& owner, Kind kind) {
    Micros total = 0;
    for (const auto& [k, v] : Balances(owner)) {
      if (k.kind == kind) total += v;
    }
    return total;
  }

  // The invariants, with `net_deposits` = deposits - withdrawals applied.
  void CheckBooks(Micros net_deposits) {
    Micros except_world = 0;
    for (const auto& [key, balance] : Balances()) {
      if (key.kind == Kind::kWorld) {
        EXPECT_EQ(balance, -net_deposits);
      } else {
        EXPECT_GE(balance, 0) << ledger::AccountName(key);
        except_world += balance;
      }
    }
    EXPECT_EQ(except_world, net_deposits);
    EXPECT_EQ(QueryInt("SELECT COALESCE(SUM(amount), 0) FROM ledger_entries"), 0);
    EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM ledger_balances b WHERE b.balance <> (SELECT COALESCE(SUM(e.amount), 0) "
                       "FROM ledger_entries e WHERE e.owner = b.owner AND e.kind = b.kind AND e.scope = b.scope)"),
              0)
        << "a balance differs from the sum of its entries";
    EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM ledger_postings p WHERE (SELECT COALESCE(SUM(e.amount), 0) FROM "
                       "ledger_entries e WHERE e.seq = p.seq) <> 0"),
              0)
        << "an unbalanced posting";
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, LedgerPropertyTest, ::testing::Values(BackendKind::kSqlite, BackendKind::kPostgres),
                         [](const auto& info) { return backends::BackendName(info.param); });

TEST_P(LedgerPropertyTest, AnySequenceKeepsTheBooksBalanced) {
  const std::vector<std::string> requesters = {"r0", "r1", "r2"};
  const std::vector<std::string> providers = {"p0", "p1", "p2"};
  ledger::LedgerPolicy policy;
  policy.fee_ppm = 50'000;
  policy.dispute_window_ms = 100;
  policy.slash_micro = 7 * C;
  policy.slash_to_requester_ppm = 400'000;
  for (uint32_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    if (seed > 1) CreateDatabase(GetParam());  // each sequence starts from empty books, as its model does
    if (HasFatalFailure()) return;
    std::mt19937 rng(seed);
    const auto pick = [&](const std::vector<std::string>& from) {
      return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
    };
    const auto amount = [&](Micros max) { return std::uniform_int_distribution<Micros>(1, max)(rng); };
    ledger::MemoryBook model;
    Micros net_deposits = 0;
    int64_t now_ms = 1000;
    int refused = 0, applied_total = 0, crashes = 0, ops = 0;
    std::map<std::string, std::string> job_requester;  // every job ever submitted
    std::vector<std::string> open_jobs;
    std::vector<Posting> last_plan;
    const std::string tag = "s" + std::to_string(seed) + "-";
    // Applies a plan as the coordinator would; records it in the model.
    const auto apply = [&](const std::vector<Posting>& plan) -> bool {
      auto r = store_->ApplyPostings(plan, now_ms);
      if (!r.ok()) {
        EXPECT_EQ(r.status().code(), Code::kFailedPrecondition) << r.status().ToString();
        ++refused;
        return false;
      }
      for (const Posting& p : plan) {
        const bool fresh = !p.empty() && !model.Applied(p.key);
        EXPECT_TRUE(model.Apply(p).ok()) << p.key;
        if (fresh && p.reason == ledger::Reason::kDeposit) net_deposits += p.entries[1].amount;
        if (fresh && p.reason == ledger::Reason::kWithdraw) net_deposits -= p.entries[1].amount;
      }
      applied_total += *r;
      last_plan = plan;
      return true;
    };
    for (int step = 0; step < 300; ++step, ++ops) {
      now_ms += std::uniform_int_distribution<int64_t>(1, 60)(rng);
      const std::string id = tag + std::to_string(step);
      switch (std::uniform_int_distribution<int>(0, 10)(rng)) {
        case 0: {  // deposit
          std::string owner = rng() % 2 ? pick(requesters) : pick(providers);
          apply({*ledger::Deposit(owner, amount(60 * C), id)});
          break;
        }
        case 1: {  // withdraw, sometimes more than there is (the plan refuses)
          std::string owner = rng() % 2 ? pick(requesters) : pick(providers);
          Micros available = BalanceOf(ledger::Available(owner));
          auto plan = ledger::Withdraw(owner, amount(available + C), available, id);
          if (plan.ok()) apply({*plan});
          break;
        }
        case 2: {  // submit: escrow the cost cap, refused when short
          std::string requester = pick(requesters);
          auto plan =
              ledger::EscrowForJob(requester, "j" + id, amount(40 * C), BalanceOf(ledger::Available(requester)));
          if (plan.ok() && apply({*plan})) {
            job_requester["j" + id] = requester;
            open_jobs.push_back("j" + id);
          }
          break;
        }
        case 3:
        case 4: {  // an attempt ends: charged only when verified
          if (open_jobs.empty()) break;
          std::string job = pick(open_jobs);
          const std::string& requester = job_requester[job];
          auto price = ledger::ChargeFor(amount(20 * C), std::uniform_int_distribution<int64_t>(0, 7'200'000)(rng));
          ASSERT_TRUE(price.ok());
          auto end = static_cast<ledger::AttemptEnd>(std::uniform_int_distribution<int>(0, 4)(rng));
          auto plan = ledger::Charge(
              {requester, job, pick(providers), "a" + id, *price, BalanceOf(ledger::Escrow(requester, job)), end});
          ASSERT_TRUE(plan.ok()) << plan.status().ToString();
          if (end != ledger::AttemptEnd::kVerified) {
            EXPECT_TRUE(plan->empty());
          }
          apply({*plan});
          break;
        }
        case 5: {  // releases past the dispute window, one transaction
          auto due = store_->PendingCharges(now_ms - policy.dispute_window_ms, 100);
          ASSERT_TRUE(due.ok()) << due.status().ToString();
          std::vector<Posting> plan;
          for (const PendingCharge& c : *due) {
            auto p = ledger::Release(c.provider, c.attempt_id, c.pending, c.charged_ms, now_ms, policy);
            ASSERT_TRUE(p.ok()) << p.status().ToString();
            plan.push_back(*p);
          }
          apply(plan);
          break;
        }
        case 6: {  // a dispute upheld: clawback and slash together
          auto pending = store_->PendingCharges(INT64_MAX, 100);
          ASSERT_TRUE(pending.ok());
          if (pending->empty()) break;
          const PendingCharge& c = (*pending)[rng() % pending->size()];
          const std::string& requester = job_requester[c.job_id];
          auto back = ledger::Clawback(requester, c.job_id, c.provider, c.attempt_id, c.pending);
          auto slash = ledger::Slash(c.provider, requester, c.job_id, c.attempt_id,
                                     BalanceOf(ledger::Stake(c.provider)), policy);
          ASSERT_TRUE(back.ok() && slash.ok());
          apply({*back, *slash});
          break;
        }
        case 7: {  // a job ends (done or cancelled): refund what is left
          if (open_jobs.empty()) break;
          size_t i = rng() % open_jobs.size();
          std::string job = open_jobs[i];
          const std::string& requester = job_requester[job];
          auto plan = ledger::Refund(requester, job, BalanceOf(ledger::Escrow(requester, job)));
          ASSERT_TRUE(plan.ok());
          if (apply({*plan})) open_jobs.erase(open_jobs.begin() + static_cast<long>(i));
          break;
        }
        case 8: {  // stake or unstake
          std::string provider = pick(providers);
          if (rng() % 2) {
            auto plan = ledger::StakeFunds(provider, amount(10 * C), BalanceOf(ledger::Available(provider)), id);
            if (plan.ok()) apply({*plan});
          } else {
            auto plan = ledger::Unstake(provider, amount(5 * C), BalanceOf(ledger::Stake(provider)),
                                        TotalOf(provider, Kind::kPending), id);
            if (plan.ok()) apply({*plan});
          }
          break;
        }
        case 9: {  // a stale plan: made from a balance that is no longer true
          std::string owner = pick(requesters);
          Micros available = BalanceOf(ledger::Available(owner));
          auto plan = ledger::Withdraw(owner, available + 1, available + 1, id);
          ASSERT_TRUE(plan.ok());
          EXPECT_FALSE(apply({*plan}));
          break;
        }
        case 10: {  // crash: a new coordinator opens the books and replays its last plan
          Reopen();
          ++crashes;
          auto r = store_->ApplyPostings(last_plan, now_ms);
          ASSERT_TRUE(r.ok()) << r.status().ToString();
          EXPECT_EQ(*r, 0) << "a replay applied something twice";
          break;
        }
      }
      if (HasFatalFailure()) return;
      if (step % 10 == 9) CheckBooks(net_deposits);
      EXPECT_EQ(NonZero(Balances()), NonZero(model.balances()));
    }
    CheckBooks(net_deposits);
    EXPECT_GT(applied_total, 40) << "the sequence did too little to test anything";
    EXPECT_GT(refused, 0);
    EXPECT_GT(crashes, 0);
  }
}

// --- kill -9 in the middle of settlement -------------------------------------

constexpr int kSettleJobs = 120;
constexpr int kAttemptsPerJob = 3;

std::string SettleJob(int trial, int j) { return "t" + std::to_string(trial) + "-j" + std::to_string(j); }
std::string SettleAttempt(int trial, int j, int a) { return SettleJob(trial, j) + "-a" + std::to_string(a); }
std::string SettleRequester(int j) { return "r" + std::to_string(j % 4); }
std::string SettleProvider(int j, int a) { return "p" + std::to_string((j + a) % 5); }

ledger::LedgerPolicy SettlePolicy() {
  ledger::LedgerPolicy policy;
  policy.fee_ppm = 100'000;
  policy.dispute_window_ms = 0;
  return policy;
}

// Settles every job of the trial: per job, one transaction of its attempts'
// releases and its refund, planned from the balances now; then exports the
// settled postings to the built-in sink. What the coordinator does when
// jobs end, and what a restarted one redoes.
Status SettleAll(Store& store, int trial, int64_t now_ms, int progress_fd) {
  const ledger::LedgerPolicy policy = SettlePolicy();
  for (int j = 0; j < kSettleJobs; ++j) {
    std::vector<Posting> plan;
    for (int a = 0; a < kAttemptsPerJob; ++a) {
      const std::string provider = SettleProvider(j, a);
      IG_ASSIGN_OR_RETURN(auto balances, store.LedgerBalances(provider));
      Micros pending = balances[ledger::Pending(provider, SettleAttempt(trial, j, a))];
      IG_ASSIGN_OR_RETURN(Posting p, ledger::Release(provider, SettleAttempt(trial, j, a), pending, 0, now_ms, policy));
      plan.push_back(std::move(p));
    }
    IG_ASSIGN_OR_RETURN(auto mine, store.LedgerBalances(SettleRequester(j)));
    IG_ASSIGN_OR_RETURN(Posting refund, ledger::Refund(SettleRequester(j), SettleJob(trial, j),
                                                       mine[ledger::Escrow(SettleRequester(j), SettleJob(trial, j))]));
    plan.push_back(std::move(refund));
    IG_RETURN_IF_ERROR(store.ApplyPostings(plan, now_ms).status());
    if (j == 0 && progress_fd >= 0) {
      char started = 1;
      if (::write(progress_fd, &started, 1) != 1) return Status::Internal("pipe");
    }
  }
  ledger::LedgerSettlement books;
  for (;;) {
    IG_ASSIGN_OR_RETURN(ledger::SettledBatch batch, ExportSettledBatch(store, books, 50));
    if (batch.last_seq == batch.after_seq) break;
  }
  return Status::Ok();
}

TEST_P(LedgerPropertyTest, KilledInTheMiddleOfSettlementLeavesTheBooksBalanced) {
  constexpr int kTrials = 5;
  std::mt19937 rng(13);
  int64_t settle_us = 0;
  int killed_midway = 0;
  Micros net_deposits = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    // Open jobs with charged attempts, the state settlement starts from.
    std::vector<Posting> setup;
    for (int r = 0; r < 4; ++r) {
      setup.push_back(
          *ledger::Deposit("r" + std::to_string(r), 1000 * C, "t" + std::to_string(trial) + "-d" + std::to_string(r)));
      net_deposits += 1000 * C;
    }
    ASSERT_TRUE(store_->ApplyPostings(setup, 1000).ok());
    for (int j = 0; j < kSettleJobs; ++j) {
      std::vector<Posting> plan = {*ledger::EscrowForJob(SettleRequester(j), SettleJob(trial, j), 5 * C, 1000 * C)};
      Micros escrow_left = 5 * C;
      for (int a = 0; a < kAttemptsPerJob; ++a) {
        plan.push_back(
            *ledger::Charge({SettleRequester(j), SettleJob(trial, j), SettleProvider(j, a), SettleAttempt(trial, j, a),
                             C + a, escrow_left, ledger::AttemptEnd::kVerified}));
        escrow_left -= C + a;
      }
      auto r = store_->ApplyPostings(plan, 1000);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
    }
    store_.reset();  // no connection crosses fork()
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    auto start = std::chrono::steady_clock::now();
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      auto opened = OpenStore(backends::LocationForChild(path_, ::getpid()));
      if (!opened.ok()) ::_exit(2);
      if (Status st = SettleAll(**opened, trial, 2000, fds[1]); !st.ok()) {
        std::fprintf(stderr, "settlement: %s\n", st.ToString().c_str());
        ::_exit(3);
      }
      char done = 2;
      if (::write(fds[1], &done, 1) != 1) ::_exit(4);
      for (;;) ::pause();
    }
    ::close(fds[1]);
    char mark = 0;
    ASSERT_EQ(::read(fds[0], &mark, 1), 1);  // settling now
    if (trial == 0) {
      ASSERT_EQ(::read(fds[0], &mark, 1), 1);  // the first trial measures a whole settlement
      ASSERT_EQ(mark, 2);
      settle_us =
          std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
    } else {
      std::this_thread::sleep_for(
          std::chrono::microseconds(std::uniform_int_distribution<int64_t>(0, settle_us * 8 / 10)(rng)));
    }
    ::kill(pid, SIGKILL);
    int wstatus = 0;
    ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
    ::close(fds[0]);
    ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL) << "the child failed on its own: " << wstatus;
    WaitForSessionGone(pid);
    if (HasFatalFailure()) return;
    auto integrity = db_->IntegrityOk();
    ASSERT_TRUE(integrity.ok() && *integrity);
    Open();
    CheckBooks(net_deposits);
    // Each job settled wholly or not at all (one transaction per job).
    int settled = 0;
    for (int j = 0; j < kSettleJobs; ++j) {
      const std::string job = SettleJob(trial, j);
      const bool refunded = QueryInt("SELECT COUNT(*) FROM ledger_postings WHERE key = 'refund:" + job + "'") == 1;
      const int64_t released = QueryInt("SELECT COUNT(*) FROM ledger_postings WHERE key LIKE 'release:" + job + "-a%'");
      EXPECT_EQ(released, refunded ? kAttemptsPerJob : 0) << job;
      settled += refunded ? 1 : 0;
    }
    if (settled < kSettleJobs) ++killed_midway;
    // The restarted coordinator redoes settlement from what is there.
    ASSERT_TRUE(SettleAll(*store_, trial, 3000, -1).ok());
    CheckBooks(net_deposits);
    for (int j = 0; j < kSettleJobs; ++j) {
      EXPECT_EQ(BalanceOf(ledger::Escrow(SettleRequester(j), SettleJob(trial, j))), 0);
    }
    for (int p = 0; p < 5; ++p) EXPECT_EQ(TotalOf("p" + std::to_string(p), Kind::kPending), 0);
    EXPECT_EQ(*store_->SettlementCursor("ledger"), QueryInt("SELECT MAX(seq) FROM ledger_postings"));
  }
  // What was charged and released, less 10% fees, is the providers'; the
  // rest came back to the requesters.
  Micros providers = 0;
  for (int p = 0; p < 5; ++p) providers += BalanceOf(ledger::Available("p" + std::to_string(p)));
  Micros charged_per_job = 0;
  for (int a = 0; a < kAttemptsPerJob; ++a) charged_per_job += C + a;
  Micros fees = 0;
  for (int a = 0; a < kAttemptsPerJob; ++a) fees += ledger::PartsPerMillion(C + a, 100'000);
  EXPECT_EQ(providers, kTrials * kSettleJobs * (charged_per_job - fees));
  EXPECT_EQ(BalanceOf(ledger::Fees()), kTrials * kSettleJobs * fees);
  EXPECT_GT(killed_midway, 0) << "no kill landed before settlement finished";
}

}  // namespace
}  // namespace idlegrid::store
