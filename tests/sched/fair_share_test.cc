// Fair share between accounts (weighted DRF): the order alone
// (FairShareOrder), and the pipeline placing in it round by round — a tenant
// with 2,000 queued tasks does not starve one with 20.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "sched/fair_share.h"
#include "sched/pipeline.h"
#include "sched_fixtures.h"

namespace idlegrid::sched {
namespace {

using testing::kGiB;
using testing::PNode;
using testing::PTask;

TaskView Owned(const std::string& account, const std::string& job, uint32_t index) {
  TaskView t = PTask(job, index);
  t.account = account;
  return t;
}

// `count` one-GPU tasks of `account`, job "<account>-job".
std::vector<TaskView> Queue(const std::string& account, uint32_t count) {
  std::vector<TaskView> out;
  for (uint32_t i = 0; i < count; ++i) out.push_back(Owned(account, account + "-job", i));
  return out;
}

std::vector<TaskView> Concat(std::vector<TaskView> a, const std::vector<TaskView>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The accounts of `tasks` in `order`, one letter each (the first of the name; "" is '-').
std::string Accounts(const std::vector<TaskView>& tasks, const std::vector<size_t>& order) {
  std::string out;
  for (size_t i : order) out += tasks[i].account.empty() ? '-' : tasks[i].account[0];
  return out;
}

// A fleet where GPUs are the scarce resource: 1000 GPUs, 16000 cores, 64000 GiB.
const ResourceAmounts kBigFleet{16000, 64000.0 * kGiB, 1000};

ResourceAmounts Gpus(double gpus) {
  // What `gpus` PTasks hold: 2 cores and 4 GiB each.
  return {2 * gpus, 4.0 * kGiB * gpus, gpus};
}

TEST(FairShareTest, OneAccountKeepsTheQueueOrder) {
  for (const std::string account : {"", "alice"}) {
    std::vector<TaskView> tasks = Queue(account, 50);
    tasks[7].resources.set_gpus(4);  // demands differ: still queue order
    AccountState accounts;
    accounts.account_weights[account] = 3;
    accounts.account_allocation[account] = Gpus(10);
    const std::vector<size_t> order = FairShareOrder(tasks, accounts, kBigFleet);
    ASSERT_EQ(order.size(), tasks.size());
    for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], i) << "account '" << account << "'";
  }
}

TEST(FairShareTest, WeightsTwoToOneInterleaveTwoToOne) {
  const std::vector<TaskView> tasks = Concat(Queue("a", 60), Queue("b", 60));
  AccountState accounts;
  accounts.account_weights = {{"a", 2}, {"b", 1}};
  const std::vector<size_t> order = FairShareOrder(tasks, accounts, kBigFleet);
  // Equal at 0: "a" by name; then "a" at 1 GPU / 2 ties "b" at 1 GPU / 1 only every third pick.
  EXPECT_EQ(Accounts(tasks, order).substr(0, 12), "abaabaabaaba");
  size_t a = 0, b = 0;
  for (size_t k = 0; k < 90; ++k) {
    (tasks[order[k]].account == "a" ? a : b) += 1;
    EXPECT_LE(a, 2 * b + 2) << "after " << k + 1 << " picks";
    EXPECT_GE(a + 1, 2 * b) << "after " << k + 1 << " picks";
  }
  EXPECT_EQ(a, 60u);
  EXPECT_EQ(b, 30u);
}

TEST(FairShareTest, EachAccountKeepsItsOwnQueueOrder) {
  const std::vector<TaskView> tasks = Concat(Queue("a", 20), Queue("b", 20));
  const std::vector<size_t> order = FairShareOrder(tasks, {}, kBigFleet);
  std::map<std::string, uint32_t> next;
  for (size_t i : order) EXPECT_EQ(tasks[i].index, next[tasks[i].account]++);
}

TEST(FairShareTest, TiesGoToTheSmallerNameWhateverTheQueueOrder) {
  // "bob" was queued first; equal shares: "alice" still picks first, and
  // interleaving the queue differently changes nothing.
  const std::vector<TaskView> grouped = Concat(Queue("bob", 4), Queue("alice", 4));
  std::vector<TaskView> mixed;
  for (uint32_t i = 0; i < 4; ++i) {
    mixed.push_back(grouped[i]);
    mixed.push_back(grouped[4 + i]);
  }
  auto keys = [](const std::vector<TaskView>& tasks) {
    std::vector<std::string> out;
    for (size_t i : FairShareOrder(tasks, {}, kBigFleet)) out.push_back(TaskKey(tasks[i].job_id, tasks[i].index));
    return out;
  };
  const std::vector<std::string> expected = {"alice-job/0", "bob-job/0", "alice-job/1", "bob-job/1",
                                             "alice-job/2", "bob-job/2", "alice-job/3", "bob-job/3"};
  EXPECT_EQ(keys(grouped), expected);
  EXPECT_EQ(keys(mixed), expected);
}

TEST(FairShareTest, EmptyAccountNameIsAnAccount) {
  const std::vector<TaskView> tasks = Concat(Queue("", 3), Queue("zed", 3));
  // Equal: "" sorts first.
  EXPECT_EQ(Accounts(tasks, FairShareOrder(tasks, {}, kBigFleet)), "-z-z-z");
  // "" holds 2 GPUs already: "zed" catches up first, then wins no tie.
  AccountState accounts;
  accounts.account_allocation[""] = Gpus(2);
  EXPECT_EQ(Accounts(tasks, FairShareOrder(tasks, accounts, kBigFleet)), "zz-z--");
}

TEST(FairShareTest, DominantShareIsTheLargestFractionOfTheFleet) {
  const ResourceAmounts fleet{16, 64.0 * kGiB, 4};
  struct Row {
    const char* name;
    ResourceAmounts held;
    double share;
    std::string resource;
  };
  const Row rows[] = {
      {"nothing", {}, 0, ""},
      {"gpu dominant", {2, 4.0 * kGiB, 1}, 0.25, "gpu"},
      {"cpu dominant", {8, 4.0 * kGiB, 1}, 0.5, "cpu"},
      {"memory dominant", {1, 48.0 * kGiB, 0}, 0.75, "memory"},
      {"equal: gpu named", {4, 16.0 * kGiB, 1}, 0.25, "gpu"},
  };
  for (const Row& r : rows) {
    const DominantShare d = DominantShareOf(r.held, fleet);
    EXPECT_DOUBLE_EQ(d.share, r.share) << r.name;
    EXPECT_EQ(d.resource, r.resource) << r.name;
  }
  // A resource the fleet has none of is not weighed.
  EXPECT_EQ(DominantShareOf({2, 0, 1}, {16, 64.0 * kGiB, 0}).resource, std::string("cpu"));
}

TEST(FairShareTest, DemandCountsSharesAndFleetCountsOnlineNodes) {
  TaskView share = PTask();
  share.gpu_milli = 250;
  EXPECT_DOUBLE_EQ(DemandOf(share).gpus, 0.25);
  EXPECT_DOUBLE_EQ(DemandOf(PTask("j", 0, 2)).gpus, 2);
  EXPECT_DOUBLE_EQ(DemandOf(PTask()).cpu, 2);
  EXPECT_DOUBLE_EQ(DemandOf(PTask()).memory_bytes, 4.0 * kGiB);

  NodeView busy = PNode("busy", 2);
  busy.cpu_free = 1;  // totals, not what is free
  busy.memory_free = kGiB;
  busy.memory_total = 64 * kGiB;
  NodeView down = PNode("down", 8);
  down.online = false;
  const ResourceAmounts fleet = FleetTotals({busy, PNode("idle", 1), down});
  EXPECT_DOUBLE_EQ(fleet.gpus, 3);
  EXPECT_DOUBLE_EQ(fleet.cpu, 32);
  EXPECT_DOUBLE_EQ(fleet.memory_bytes, 128.0 * kGiB);
}

TEST(FairShareTest, WeightsThatAreNotPositiveCountAsOne) {
  AccountState accounts;
  accounts.account_weights = {{"zero", 0}, {"negative", -2}, {"two", 2}};
  EXPECT_EQ(WeightOf(accounts, "zero"), 1);
  EXPECT_EQ(WeightOf(accounts, "negative"), 1);
  EXPECT_EQ(WeightOf(accounts, "missing"), 1);
  EXPECT_EQ(WeightOf(accounts, "two"), 2);
}

// --- the pipeline, round by round ---

// Four one-GPU nodes; `running` holds whose attempts occupy the first nodes,
// in node order. Returns the nodes and what each account holds.
struct Round {
  std::vector<NodeView> nodes;
  AccountState accounts;
};
Round FleetWith(const std::vector<std::string>& running) {
  Round r;
  for (size_t i = 0; i < 4; ++i) {
    NodeView n = PNode("n" + std::to_string(i));
    if (i < running.size()) {
      n.cpu_free -= 2;
      n.memory_free -= 4 * kGiB;
      n.memory_total = 64 * kGiB;
      n.gpus[0].set_allocatable_memory_bytes(0);
      n.gpu_free_milli = {0};
      r.accounts.account_allocation[running[i]] += Gpus(1);
    }
    r.nodes.push_back(n);
  }
  return r;
}

std::map<std::string, int> PlacedPerAccount(const Plan& plan, const std::vector<TaskView>& tasks) {
  std::map<std::string, std::string> account_of;
  for (const auto& t : tasks) account_of[TaskKey(t.job_id, t.index)] = t.account;
  std::map<std::string, int> out;
  for (const auto& p : plan.placements) ++out[account_of.at(TaskKey(p.job_id, p.index))];
  return out;
}

TEST(FairSharePipelineTest, SmallTenantStartsWithinOneRoundOfASlotOpening) {
  // "big" queued 2,000 tasks before "small" queued 20; the queue (as the
  // store returns it) lists all of big's first. Each row is one scheduling
  // round: who runs on the 4 one-GPU nodes when it starts.
  const std::vector<TaskView> queue = Concat(Queue("big", 2000), Queue("small", 20));
  struct Row {
    const char* name;
    std::vector<std::string> running;
    int big_placed;
    int small_placed;
  };
  const Row rows[] = {
      {"one slot opens, big holds the other 3", {"big", "big", "big"}, 0, 1},
      {"the next slot: small still holds less", {"big", "big", "small"}, 0, 1},
      {"small holds more: big's turn", {"big", "small", "small"}, 1, 0},
      {"two slots, equal shares: one each", {"big", "small"}, 1, 1},
      {"an empty fleet splits evenly", {}, 2, 2},
      {"all busy: nothing to place", {"big", "big", "big", "big"}, 0, 0},
  };
  auto scheduler = NewPipelineScheduler();
  for (const Row& row : rows) {
    Round r = FleetWith(row.running);
    const Plan plan = scheduler->Schedule(r.nodes, queue, r.accounts);
    std::map<std::string, int> placed = PlacedPerAccount(plan, queue);
    EXPECT_EQ(placed["big"], row.big_placed) << row.name;
    EXPECT_EQ(placed["small"], row.small_placed) << row.name;
    if (row.small_placed > 0) {
      // small's own tasks still go in its queue order.
      bool found = false;
      for (const auto& p : plan.placements) found |= p.job_id == "small-job" && p.index == 0;
      EXPECT_TRUE(found) << row.name;
    }
  }
}

TEST(FairSharePipelineTest, SmallTenantSimulatedOverRounds) {
  // Rounds on the same 4 nodes: every round the oldest attempt ends and the
  // scheduler fills the free slot from the queue. big filled the fleet first.
  std::vector<TaskView> big = Queue("big", 2000), small = Queue("small", 20);
  std::vector<std::string> running = {"big", "big", "big", "big"};
  size_t big_next = 4, small_next = 0;
  auto scheduler = NewPipelineScheduler();
  std::vector<std::string> started;
  for (int round = 0; round < 12; ++round) {
    running.erase(running.begin());
    std::vector<TaskView> queue(big.begin() + static_cast<long>(big_next), big.end());
    queue.insert(queue.end(), small.begin() + static_cast<long>(small_next), small.end());
    Round r = FleetWith(running);
    const Plan plan = scheduler->Schedule(r.nodes, queue, r.accounts);
    ASSERT_EQ(plan.placements.size(), 1u) << "round " << round;
    const bool is_small = plan.placements[0].job_id == "small-job";
    running.push_back(is_small ? "small" : "big");
    (is_small ? small_next : big_next) += 1;
    started.push_back(running.back());
  }
  // The first slot goes to small, the second too (it still holds less),
  // then the fleet stays split two and two.
  EXPECT_EQ(started[0], "small");
  EXPECT_EQ(started[1], "small");
  int small_running = 0;
  for (const auto& who : running) small_running += who == "small";
  EXPECT_EQ(small_running, 2);
}

TEST(FairSharePipelineTest, WeightsSplitTheFleet) {
  std::vector<NodeView> nodes;
  for (int i = 0; i < 6; ++i) nodes.push_back(PNode("n" + std::to_string(i)));
  const std::vector<TaskView> queue = Concat(Queue("b", 10), Queue("a", 10));
  AccountState accounts;
  accounts.account_weights = {{"a", 2}, {"b", 1}};
  std::map<std::string, int> placed = PlacedPerAccount(NewPipelineScheduler()->Schedule(nodes, queue, accounts), queue);
  EXPECT_EQ(placed["a"], 4);
  EXPECT_EQ(placed["b"], 2);
}

TEST(FairSharePipelineTest, TaskThatWaitsIsNotCharged) {
  // a's first task needs 8 GPUs and cannot be placed: it must not count
  // toward a's share, or b would take both slots.
  std::vector<NodeView> nodes = {PNode("n0"), PNode("n1")};
  std::vector<TaskView> queue = Concat(Queue("a", 3), Queue("b", 3));
  queue[0].resources.set_gpus(8);
  const Plan plan = NewPipelineScheduler()->Schedule(nodes, queue, {});
  std::map<std::string, int> placed = PlacedPerAccount(plan, queue);
  EXPECT_EQ(placed["a"], 1);
  EXPECT_EQ(placed["b"], 1);
  EXPECT_TRUE(plan.waiting.count("a-job/0"));
}

TEST(FairSharePipelineTest, OneAccountPlacesInQueueOrderAsWithoutAccounts) {
  std::vector<NodeView> nodes = {PNode("n0", 2), PNode("n1", 1), PNode("n2", 4)};
  std::vector<TaskView> queue;
  for (uint32_t i = 0; i < 12; ++i) {
    TaskView t = Owned("only", "j", i);
    t.resources.set_gpus(1 + i % 3);
    queue.push_back(t);
  }
  AccountState accounts;
  accounts.account_allocation["only"] = Gpus(5);
  accounts.account_weights["only"] = 0.5;
  auto scheduler = NewPipelineScheduler();
  const Plan with = scheduler->Schedule(nodes, queue, accounts);
  const Plan without = scheduler->Schedule(nodes, queue);
  ASSERT_EQ(with.placements.size(), without.placements.size());
  for (size_t k = 0; k < with.placements.size(); ++k) {
    EXPECT_EQ(TaskKey(with.placements[k].job_id, with.placements[k].index),
              TaskKey(without.placements[k].job_id, without.placements[k].index));
    EXPECT_EQ(with.placements[k].node_id, without.placements[k].node_id);
    if (k > 0) EXPECT_LT(with.placements[k - 1].index, with.placements[k].index);
  }
  EXPECT_EQ(with.waiting, without.waiting);
}

// --- explain ---

TEST(FairShareExplainTest, StandingNamesShareWeightAndPlaceInLine) {
  const std::vector<TaskView> queue = Concat(Queue("alice", 3), Queue("bob", 2));
  AccountState accounts;
  accounts.account_weights["alice"] = 2;
  accounts.account_allocation["alice"] = Gpus(2);  // of 4 GPUs: 0.5, / 2 = 0.25
  accounts.account_allocation["bob"] = Gpus(2);    // 0.5 / 1
  const FairShareStandings standings(queue, accounts, {64, 256.0 * kGiB, 4});
  EXPECT_EQ(FormatFairShare(standings.Of(queue[0])),
            "account alice: dominant share 0.50 (gpu) / weight 2 = 0.25; 2 accounts waiting; next in line");
  // alice 0 (at 0.25), alice 1 (0.375), alice 2 (0.5: ties bob, wins by name), then bob 0.
  EXPECT_EQ(FormatFairShare(standings.Of(queue[3])),
            "account bob: dominant share 0.50 (gpu) / weight 1 = 0.50; 2 accounts waiting; position 4 of 5 in line");
  TaskView elsewhere = Owned("", "other", 0);
  EXPECT_EQ(FormatFairShare(standings.Of(elsewhere)),
            "account (none): dominant share 0.00 (nothing held) / weight 1 = 0.00; 2 accounts waiting; "
            "not in the queue the scheduler reads now");

  Explanation e = Explain({PNode("n0")}, queue[0]);
  EXPECT_EQ(FormatExplanation(e).find("fair share"), std::string::npos);
  e.fair_share = FormatFairShare(standings.Of(queue[0]));
  EXPECT_NE(FormatExplanation(e).find("\n  fair share: account alice: "), std::string::npos);
}

}  // namespace
}  // namespace idlegrid::sched
