// The coordinator with --ledger (issue 13): a job's maxCost escrowed at
// submit (refused when funds are short), its succeeded attempt charged to the
// provider's pending balance, the rest refunded when it ends, the pending
// balance released after the dispute window less the fee; a platform failure
// never charged; without --ledger nothing changes. Driven through the public
// API on a manual clock.
//
// The node asks 3600 per core-hour: one credit per second of a 1-core task.
#include <gtest/gtest.h>

#include <string>

#include "coordinator/pipeline_support.h"
#include "ledger/plans.h"

namespace idlegrid::coordinator::testing {
namespace {

constexpr ledger::Micros C = ledger::kMicrosPerCredit;

Options LedgerOn() {
  Options o;
  o.ledger.enabled = true;
  o.ledger.policy.fee_ppm = 100'000;  // 10%
  o.ledger.policy.dispute_window_ms = 60'000;
  return o;
}

ledger::Micros Balance(Coordinator& c, const ledger::AccountKey& key) {
  auto all = c.store()->LedgerBalances(key.owner);
  EXPECT_TRUE(all.ok()) << all.status().ToString();
  if (!all.ok()) return -1;
  auto it = all->find(key);
  return it == all->end() ? 0 : it->second;
}

ledger::Micros SumExceptWorld(Coordinator& c) {
  auto all = c.store()->LedgerBalances(std::nullopt);
  EXPECT_TRUE(all.ok());
  ledger::Micros sum = 0;
  for (const auto& [key, balance] : *all) {
    EXPECT_TRUE(key.kind == ledger::Kind::kWorld || balance >= 0) << ledger::AccountName(key);
    if (key.kind != ledger::Kind::kWorld) sum += balance;
  }
  return sum;
}

v1::JobSpec CappedJob(double max_cost) {
  v1::JobSpec spec = CpuJob("metered");
  spec.set_run_timeout_seconds(10);
  spec.set_max_cost(max_cost);
  return spec;
}

TEST(LedgerWiringTest, EscrowChargeRefundAndRelease) {
  PipelineHarness h(LedgerOn());
  ASSERT_TRUE(h.Init().ok());
  auto node = h.AddNode("node-a", /*cpu_ask=*/3600);
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  Coordinator& c = h.coordinator();

  // A job must say what it may cost, and be funded.
  auto uncapped = h.Submit(CpuJob("uncapped"));
  ASSERT_FALSE(uncapped.ok());
  EXPECT_EQ(uncapped.status().code(), Code::kInvalidArgument);
  EXPECT_NE(uncapped.status().message().find("maxCost"), std::string::npos) << uncapped.status().message();
  auto unfunded = h.Submit(CappedJob(15));
  ASSERT_FALSE(unfunded.ok());
  EXPECT_EQ(unfunded.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(unfunded.status().message().find("insufficient funds: operator has 0.000000 credits available"),
            std::string::npos)
      << unfunded.status().message();
  EXPECT_NE(unfunded.status().message().find("needs 15.000000 (its cost cap)"), std::string::npos);
  auto jobs = c.jobs().List("");
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->jobs_size(), 0) << "a refused job is not stored";

  ASSERT_TRUE(c.store()->ApplyPostings({*ledger::Deposit("operator", 100 * C, "d1")}, 0).ok());
  auto job = h.Submit(CappedJob(15));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(Balance(c, ledger::Available("operator")), 85 * C);
  EXPECT_EQ(Balance(c, ledger::Escrow("operator", *job)), 15 * C);

  c.Tick();
  auto task = h.Task(*job);
  ASSERT_TRUE(task.ok());
  ASSERT_EQ(task->attempts_size(), 1);
  const std::string attempt = task->attempts(0).id();
  ASSERT_TRUE(h.Accept(*node, attempt).ok());
  ASSERT_TRUE(h.Start(*node, attempt).ok());
  for (int s = 0; s < 5; ++s) ASSERT_TRUE(h.Pass(1000, {*node}).ok());
  ASSERT_TRUE(h.Exit(*node, attempt, 0).ok());

  // 5 s at 1 credit/s, to the provider's pending balance; the other 10 back.
  EXPECT_EQ(Balance(c, ledger::Pending("operator", attempt)), 5 * C);
  EXPECT_EQ(Balance(c, ledger::Escrow("operator", *job)), 0);
  EXPECT_EQ(Balance(c, ledger::Available("operator")), 95 * C);
  EXPECT_EQ(SumExceptWorld(c), 100 * C);

  // Inside the dispute window nothing moves; past it, released less 10%.
  ASSERT_TRUE(h.Pass(30'000, {*node}).ok());
  EXPECT_EQ(Balance(c, ledger::Pending("operator", attempt)), 5 * C);
  ASSERT_TRUE(h.Pass(31'000, {*node}).ok());
  EXPECT_EQ(Balance(c, ledger::Pending("operator", attempt)), 0);
  EXPECT_EQ(Balance(c, ledger::Available("operator")), 95 * C + 4'500'000);
  EXPECT_EQ(Balance(c, ledger::Fees()), 500'000);
  EXPECT_EQ(SumExceptWorld(c), 100 * C);
  // The built-in settlement sink took the release and the refund.
  auto cursor = c.store()->SettlementCursor("ledger");
  ASSERT_TRUE(cursor.ok());
  EXPECT_GT(*cursor, 0);
}

// Cancelling some tasks settles as a whole cancel does: the escrow stays
// while others can run, and comes back when the job ends. A retry runs within
// the escrow the job still holds, and is refused once it was refunded.
TEST(LedgerWiringTest, SomeTasksCancelledKeepTheEscrowAndARetryNeedsEscrowLeft) {
  PipelineHarness h(LedgerOn());
  ASSERT_TRUE(h.Init().ok());
  Coordinator& c = h.coordinator();
  ASSERT_TRUE(c.store()->ApplyPostings({*ledger::Deposit("operator", 100 * C, "d1")}, 0).ok());
  v1::JobSpec spec = CappedJob(15);
  spec.set_array_count(2);
  auto job = h.Submit(spec);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(Balance(c, ledger::Escrow("operator", *job)), 30 * C);

  v1::CancelJobRequest some;
  some.set_job_id(*job);
  some.add_task_indices(1);
  auto partly = c.jobs().Cancel(some);
  ASSERT_TRUE(partly.ok()) << partly.status().ToString();
  EXPECT_EQ(partly->tasks(0).state(), v1::QUEUED);
  EXPECT_EQ(partly->tasks(1).state(), v1::CANCELLED);
  EXPECT_EQ(Balance(c, ledger::Escrow("operator", *job)), 30 * C) << "held while task 0 can still run";

  v1::RetryJobRequest again;
  again.set_job_id(*job);
  again.add_task_indices(1);
  auto retried = c.jobs().Retry(again);
  ASSERT_TRUE(retried.ok()) << retried.status().ToString();
  EXPECT_EQ(retried->tasks(1).state(), v1::QUEUED);

  ASSERT_TRUE(c.jobs().Cancel(*job).ok());
  EXPECT_EQ(Balance(c, ledger::Escrow("operator", *job)), 0);
  EXPECT_EQ(Balance(c, ledger::Available("operator")), 100 * C) << "all of it refunded when the job ended";
  auto refused = c.jobs().Retry(again);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("has no escrow left"), std::string::npos) << refused.status().message();
  EXPECT_EQ(c.jobs().Get(*job)->tasks(1).state(), v1::CANCELLED) << "nothing was requeued";
  EXPECT_EQ(SumExceptWorld(c), 100 * C);
}

TEST(LedgerWiringTest, PlatformFailureIsNeverCharged) {
  PipelineHarness h(LedgerOn());
  ASSERT_TRUE(h.Init().ok());
  auto node = h.AddNode("node-a", /*cpu_ask=*/3600);
  ASSERT_TRUE(node.ok());
  Coordinator& c = h.coordinator();
  ASSERT_TRUE(c.store()->ApplyPostings({*ledger::Deposit("operator", 20 * C, "d1")}, 0).ok());
  auto job = h.Submit(CappedJob(15));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  c.Tick();
  auto task = h.Task(*job);
  ASSERT_TRUE(task.ok());
  ASSERT_EQ(task->attempts_size(), 1);
  const std::string attempt = task->attempts(0).id();
  ASSERT_TRUE(h.Accept(*node, attempt).ok());
  ASSERT_TRUE(h.Start(*node, attempt).ok());
  // The node goes silent for good: its attempt is lost (a platform failure).
  for (int s = 0; s < 40; ++s) ASSERT_TRUE(h.Pass(1000, {}).ok());
  task = h.Task(*job);
  ASSERT_TRUE(task.ok());
  ASSERT_NE(task->attempts(0).state(), v1::SUCCEEDED);
  ASSERT_NE(task->attempts(0).state(), v1::RUNNING) << task->DebugString();
  auto cancelled = c.jobs().Cancel(*job);
  ASSERT_TRUE(cancelled.ok() || cancelled.status().code() == Code::kFailedPrecondition)
      << cancelled.status().ToString();
  ASSERT_TRUE(h.Pass(3000, {}).ok());  // the sweep settles whatever the job's end was
  EXPECT_EQ(Balance(c, ledger::Pending("operator", attempt)), 0);
  EXPECT_EQ(Balance(c, ledger::Escrow("operator", *job)), 0);
  EXPECT_EQ(Balance(c, ledger::Available("operator")), 20 * C) << "everything refunded";
  EXPECT_EQ(SumExceptWorld(c), 20 * C);
}

TEST(LedgerWiringTest, WithoutTheLedgerNothingIsEscrowedOrCharged) {
  PipelineHarness h;
  ASSERT_TRUE(h.Init().ok());
  auto job = h.Submit(CpuJob("free"));  // no maxCost, no funds: as before
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(h.coordinator().ledger(), nullptr);
  auto books = h.coordinator().store()->LedgerBalances(std::nullopt);
  ASSERT_TRUE(books.ok());
  EXPECT_TRUE(books->empty());
}

TEST(LedgerWiringTest, RequesterOperationsMoveMoneyByRequestId) {
  PipelineHarness off;
  ASSERT_TRUE(off.Init().ok());
  EXPECT_EQ(off.coordinator().ledger_requests().Balance("operator").status().code(), Code::kFailedPrecondition);

  PipelineHarness h(LedgerOn());
  ASSERT_TRUE(h.Init().ok());
  Coordinator& c = h.coordinator();
  EXPECT_EQ(c.ledger_requests().Balance("nobody").status().code(), Code::kNotFound);
  v1::LedgerTransferRequest deposit;
  deposit.set_account("operator");
  deposit.set_micros(20 * C);
  deposit.set_request_id("r1");
  auto after = c.ledger_requests().Transfer(deposit, /*deposit=*/true);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->available_micros(), 20 * C);
  after = c.ledger_requests().Transfer(deposit, true);  // the same request again: no second deposit
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->available_micros(), 20 * C);

  v1::LedgerStakeRequest stake;
  stake.set_account("operator");
  stake.set_micros(5 * C);
  stake.set_request_id("s1");
  after = c.ledger_requests().Stake(stake);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->available_micros(), 15 * C);
  EXPECT_EQ(after->stake_micros(), 5 * C);

  v1::LedgerTransferRequest withdraw;
  withdraw.set_account("operator");
  withdraw.set_micros(16 * C);
  withdraw.set_request_id("w1");
  auto refused = c.ledger_requests().Transfer(withdraw, /*deposit=*/false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("has 15.000000 credits available, the withdrawal needs 16.000000"),
            std::string::npos)
      << refused.status().message();

  auto history = c.ledger_requests().History("operator", 0, 0);
  ASSERT_TRUE(history.ok()) << history.status().ToString();
  ASSERT_EQ(history->postings_size(), 2);
  EXPECT_EQ(history->postings(0).reason(), "deposit");
  EXPECT_EQ(history->postings(1).reason(), "stake");
  EXPECT_EQ(history->postings(1).entries_size(), 2);
  auto later = c.ledger_requests().History("operator", history->postings(0).seq(), 0);
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later->postings_size(), 1);
}

}  // namespace
}  // namespace idlegrid::coordinator::testing
