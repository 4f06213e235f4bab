// The standing stage of the pipeline (sched/standing.h): unproven provider
// accounts together hold at most their share of the verified work.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "sched/pipeline.h"
#include "sched_fixtures.h"

namespace idlegrid::sched {
namespace {

using testing::PNode;
using testing::PTask;

constexpr char kImage[] = "sha256:aa";

// One proven provider "P" (one node) and four unproven ones, 16 cores each.
std::vector<NodeView> Fleet(double p_cpu_free = 16) {
  std::vector<NodeView> nodes;
  NodeView p = PNode("np", 0);
  p.provider = "P";
  p.cpu_free = p_cpu_free;
  nodes.push_back(p);
  for (int i = 1; i <= 4; ++i) {
    NodeView u = PNode("nu" + std::to_string(i), 0);
    u.provider = "U" + std::to_string(i);
    nodes.push_back(u);
  }
  return nodes;
}

// `n` verified CPU tasks (2 cores each) of kImage.
std::vector<TaskView> Verified(int n, bool verified = true) {
  std::vector<TaskView> tasks;
  for (int i = 0; i < n; ++i) {
    TaskView t = PTask("j", i, 0);
    t.image = kImage;
    t.verified = verified;
    tasks.push_back(t);
  }
  return tasks;
}

AccountState Standing(double share, uint64_t verified_in_flight = 0, uint64_t unproven_in_flight = 0) {
  AccountState a;
  a.standing.unproven_share = share;
  a.standing.proven[kImage] = {"P"};
  a.standing.verified_in_flight = verified_in_flight;
  a.standing.unproven_in_flight = unproven_in_flight;
  return a;
}

struct Split {
  int proven = 0;
  int unproven = 0;
};

Split SplitOf(const Plan& plan) {
  Split s;
  for (const auto& p : plan.placements) (p.node_id == "np" ? s.proven : s.unproven)++;
  return s;
}

TEST(Standing, NoCapPlacesEverything) {
  Plan plan = NewPipelineScheduler()->Schedule(Fleet(), Verified(20), Standing(1));
  EXPECT_EQ(plan.placements.size(), 20u);
  EXPECT_GT(SplitOf(plan).unproven, 10) << "one proven node holds 8";
}

TEST(Standing, UnprovenAccountsHoldAtMostTheirShare) {
  // At 25%: the first unproven placement is free (none held yet), the
  // second needs 8 in flight; the proven node fills at 8, so the rest wait
  // for it rather than go to unproven accounts.
  Plan plan = NewPipelineScheduler()->Schedule(Fleet(), Verified(20), Standing(0.25));
  const Split s = SplitOf(plan);
  EXPECT_EQ(s.proven, 8);
  EXPECT_EQ(s.unproven, 2);
  ASSERT_EQ(plan.waiting.size(), 10u);
  for (const auto& [key, why] : plan.waiting) {
    EXPECT_NE(why.summary.find("held for a proven provider: unproven providers hold 2 of 10 verified tasks"),
              std::string::npos)
        << key << ": " << why.summary;
  }
}

TEST(Standing, WorkInFlightCountsAndABusyProvenProviderStillHoldsTheWork) {
  // 1 of 100 in flight on unproven accounts; the proven node is full. At 2%
  // one more fits (2 of 101), the next does not (3 of 102).
  Plan plan = NewPipelineScheduler()->Schedule(Fleet(/*p_cpu_free=*/0), Verified(2), Standing(0.02, 100, 1));
  EXPECT_EQ(SplitOf(plan).unproven, 1);
  EXPECT_EQ(plan.placements.size(), 1u);
  ASSERT_EQ(plan.waiting.size(), 1u);
  EXPECT_NE(plan.waiting.begin()->second.summary.find("held for a proven provider"), std::string::npos);
}

TEST(Standing, WithNoProvenAccountNewcomersRunEverything) {
  AccountState a = Standing(0.02, 100, 50);
  a.standing.proven.clear();
  Plan plan = NewPipelineScheduler()->Schedule(Fleet(), Verified(20), a);
  EXPECT_EQ(plan.placements.size(), 20u);

  // Proven for another image only: the same.
  a.standing.proven["sha256:other"] = {"P"};
  plan = NewPipelineScheduler()->Schedule(Fleet(), Verified(20), a);
  EXPECT_EQ(plan.placements.size(), 20u);
}

TEST(Standing, AProvenProviderTheTaskExcludesDoesNotHoldIt) {
  // A replica its proven provider already ran can go nowhere proven.
  std::vector<TaskView> tasks = Verified(3);
  for (auto& t : tasks) t.excluded_nodes.insert(std::string(kProviderExclusion) + "P");
  Plan plan = NewPipelineScheduler()->Schedule(Fleet(), tasks, Standing(0.02, 100, 50));
  EXPECT_EQ(SplitOf(plan).unproven, 3);
  EXPECT_TRUE(plan.waiting.empty());
}

TEST(Standing, AProvenNodeTooSmallForTheTaskDoesNotHoldIt) {
  // The proven node offers 2 cores in all; the tasks need 4: it could never
  // take them, so they are not held for it.
  std::vector<NodeView> nodes = Fleet();
  nodes[0].cpu_free = nodes[0].cpu_total = 2;
  std::vector<TaskView> tasks = Verified(3);
  for (auto& t : tasks) t.resources.set_cpu(4);
  Plan plan = NewPipelineScheduler()->Schedule(nodes, tasks, Standing(0.02, 100, 50));
  EXPECT_EQ(SplitOf(plan).unproven, 3);
  EXPECT_TRUE(plan.waiting.empty()) << plan.waiting.begin()->second.summary;
}

TEST(Standing, UnverifiedWorkAndKnownAnswerChecksAreNotCapped) {
  Plan plan = NewPipelineScheduler()->Schedule(Fleet(/*p_cpu_free=*/0), Verified(5, /*verified=*/false),
                                               Standing(0.02, 100, 50));
  EXPECT_EQ(SplitOf(plan).unproven, 5);

  // A known-answer check is meant for its provider, proven or not.
  std::vector<TaskView> check = Verified(1);
  check[0].excluded_nodes.insert(std::string(kOnlyProvider) + "U3");
  plan = NewPipelineScheduler()->Schedule(Fleet(), check, Standing(0.02, 100, 50));
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].node_id, "nu3");
}

TEST(Standing, AProvenProviderTakesWorkTheCapHolds) {
  // Far over the cap: everything goes to the proven node while it has room.
  Plan plan = NewPipelineScheduler()->Schedule(Fleet(), Verified(8), Standing(0.02, 100, 50));
  EXPECT_EQ(SplitOf(plan).proven, 8);
  EXPECT_EQ(SplitOf(plan).unproven, 0);
}

TEST(StandingProperty, EveryUnprovenPlacementKeepsTheShareInPlanOrder) {
  // Random fleets of 10 provider accounts, some proven; verified tasks of
  // random sizes. Replaying each plan in order, an unproven placement is
  // the first one or keeps unproven accounts within the share (counting the
  // work in flight before the plan); nothing is over-allocated.
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<NodeView> nodes;
    const int n = 2 + static_cast<int>(rng() % 30);
    for (int i = 0; i < n; ++i) {
      NodeView v = PNode("n" + std::to_string(i), 0);
      v.provider = "P" + std::to_string(rng() % 10);
      v.cpu_free = v.cpu_total = double(1 + rng() % 16);
      nodes.push_back(v);
    }
    const double shares[] = {0.02, 0.1, 0.3};
    AccountState a;
    a.standing.unproven_share = shares[rng() % 3];
    for (int p = 0; p < 10; ++p) {
      if (rng() % 3 == 0) a.standing.proven[kImage].insert("P" + std::to_string(p));
    }
    a.standing.verified_in_flight = rng() % 50;
    a.standing.unproven_in_flight = a.standing.verified_in_flight ? rng() % a.standing.verified_in_flight : 0;
    std::vector<TaskView> tasks = Verified(static_cast<int>(rng() % 120));
    for (auto& t : tasks) {
      t.resources.set_cpu(double(1 + rng() % 4));
      // Some are replicas a provider already ran, proven or not.
      if (rng() % 4 == 0) t.excluded_nodes.insert(std::string(kProviderExclusion) + "P" + std::to_string(rng() % 10));
    }
    const Plan plan = NewPipelineScheduler({{}, static_cast<uint64_t>(round)})->Schedule(nodes, tasks, a);

    std::map<std::string, NodeView> by_id;
    for (const auto& v : nodes) by_id[v.id] = v;
    uint64_t all = a.standing.verified_in_flight, unproven = a.standing.unproven_in_flight;
    // A proven node the task did not exclude and that is big enough for it.
    const auto any_proven = [&](const TaskView& task) {
      return std::any_of(nodes.begin(), nodes.end(), [&](const NodeView& v) {
        return a.standing.proven[kImage].count(v.provider) > 0 &&
               !task.excluded_nodes.count(std::string(kProviderExclusion) + v.provider) &&
               v.cpu_total >= task.resources.cpu();
      });
    };
    for (const auto& p : plan.placements) {
      NodeView& node = by_id.at(p.node_id);
      const TaskView& task = tasks[p.index];
      ASSERT_TRUE(ApplyPlacement(&node, task, p).ok()) << "round " << round;
      const bool is_unproven = !a.standing.proven[kImage].count(node.provider);
      if (is_unproven && any_proven(task)) {
        EXPECT_TRUE(unproven == 0 || double(unproven + 1) <= a.standing.unproven_share * double(all + 1) + 1e-9)
            << "round " << round << ": " << unproven << " of " << all << " at share " << a.standing.unproven_share;
      }
      ++all;
      unproven += is_unproven;
    }
    // Nothing waits while a proven node it did not exclude has room for it:
    // the proven nodes' heap lost no entry.
    for (const auto& [key, why] : plan.waiting) {
      const TaskView& task = tasks[std::stoul(key.substr(key.find('/') + 1))];
      for (const auto& [id, node] : by_id) {
        if (!a.standing.proven[kImage].count(node.provider)) continue;
        if (task.excluded_nodes.count(std::string(kProviderExclusion) + node.provider)) continue;
        NodeView copy = node;
        Placement p;
        p.node_id = id;
        EXPECT_FALSE(ApplyPlacement(&copy, task, p).ok())
            << "round " << round << ": " << key << " waits (" << why.summary << ") while proven " << id << " has room";
      }
    }
  }
}

}  // namespace
}  // namespace idlegrid::sched
