// The first-fit scheduler (sched/scheduler.h): the feasibility stage as a
// table, placement behaviour on small fleets, and invariants over random ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "sched/scheduler.h"

namespace idlegrid::sched {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

NodeView Node(const std::string& id, double cpu, uint64_t memory = 16 * kGiB, uint32_t gpus = 0) {
  NodeView n;
  n.id = id;
  n.online = true;
  n.cpu_free = cpu;
  n.memory_free = memory;
  for (uint32_t i = 0; i < gpus; ++i) {
    v1::GpuDevice d;
    d.set_uuid(id + "-gpu" + std::to_string(i));
    d.set_memory_total_bytes(24 * kGiB);
    d.set_allocatable_memory_bytes(24 * kGiB);
    n.gpus.push_back(d);
  }
  n.runtimes = {"runc"};
  n.enforcement.set_memory("cgroup");
  n.enforcement.set_cpu("cgroup");
  return n;
}

TaskView Task(const std::string& job, uint32_t index, double cpu, uint64_t memory = kGiB, uint32_t gpus = 0) {
  TaskView t;
  t.job_id = job;
  t.index = index;
  t.runtime = "runc";
  t.resources.set_cpu(cpu);
  t.resources.set_memory_bytes(memory);
  t.resources.set_gpus(gpus);
  return t;
}

TEST(InfeasibilityTest, Table) {
  struct Case {
    const char* name;
    std::function<void(NodeView&, TaskView&)> change;
    std::string want;  // "" = feasible; otherwise a part of the reason
  };
  const Case kCases[] = {
      {"fits", [](NodeView&, TaskView&) {}, ""},
      {"offline", [](NodeView& n, TaskView&) { n.online = false; }, "offline"},
      {"excluded", [](NodeView&, TaskView& t) { t.excluded_nodes = {"other", "n1"}; }, "rejected or lost"},
      {"excluded elsewhere only", [](NodeView&, TaskView& t) { t.excluded_nodes = {"n2"}; }, ""},
      {"runtime missing", [](NodeView&, TaskView& t) { t.runtime = "runsc"; }, "runtime runsc not available"},
      {"runtime present", [](NodeView& n, TaskView& t) { n.runtimes = {"runc", "runsc"}; t.runtime = "runsc"; }, ""},
      {"no memory enforcement", [](NodeView& n, TaskView&) { n.enforcement.set_memory(""); }, "memory limit"},
      {"rlimit memory enforcement is enough", [](NodeView& n, TaskView&) { n.enforcement.set_memory("rlimit"); }, ""},
      {"runsc needs cgroup memory limits",
       [](NodeView& n, TaskView& t) {
         n.runtimes = {"runc", "runsc"};
         n.enforcement.set_memory("rlimit");
         t.runtime = "runsc";
       },
       "runsc needs cgroup"},
      {"strictCpu without cpu enforcement",
       [](NodeView& n, TaskView& t) {
         n.enforcement.set_cpu("");
         t.resources.set_strict_cpu(true);
       },
       "strictCpu"},
      {"strictCpu with cpu enforcement", [](NodeView&, TaskView& t) { t.resources.set_strict_cpu(true); }, ""},
      {"no cpu enforcement is fine without strictCpu", [](NodeView& n, TaskView&) { n.enforcement.set_cpu(""); },
       ""},
      {"too many GPUs", [](NodeView&, TaskView& t) { t.resources.set_gpus(2); }, "insufficient GPUs"},
      {"exactly the free GPUs", [](NodeView&, TaskView& t) { t.resources.set_gpus(1); }, ""},
      {"too much CPU", [](NodeView&, TaskView& t) { t.resources.set_cpu(4.25); }, "insufficient CPU"},
      {"exactly the free CPU", [](NodeView&, TaskView& t) { t.resources.set_cpu(4); }, ""},
      {"too much memory", [](NodeView&, TaskView& t) { t.resources.set_memory_bytes(8 * kGiB + 1); },
       "insufficient memory"},
      {"exactly the free memory", [](NodeView&, TaskView& t) { t.resources.set_memory_bytes(8 * kGiB); }, ""},
      {"offline is reported before shortages",
       [](NodeView& n, TaskView& t) {
         n.online = false;
         t.resources.set_cpu(100);
         t.resources.set_memory_bytes(100 * kGiB);
       },
       "offline"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    NodeView node = Node("n1", 4, 8 * kGiB, 1);
    TaskView task = Task("j", 0, 1, kGiB);
    c.change(node, task);
    std::string why = Infeasibility(node, task);
    if (c.want.empty()) {
      EXPECT_EQ(why, "");
    } else {
      EXPECT_NE(why.find(c.want), std::string::npos) << "got \"" << why << "\"";
    }
  }
}

TEST(FirstFitTest, SpreadsOverNodesByFreeCpu) {
  auto sched = NewFirstFitScheduler();
  std::vector<TaskView> tasks;
  for (uint32_t i = 0; i < 6; ++i) tasks.push_back(Task("j", i, 1));
  Plan plan = sched->Schedule({Node("c", 2), Node("a", 2), Node("b", 3)}, tasks);
  std::vector<std::string> got;
  for (const auto& p : plan.placements) got.push_back(p.node_id);
  // b has most CPU; then ties break by id, and each placement lowers the
  // node's free CPU so the next task goes elsewhere.
  EXPECT_EQ(got, (std::vector<std::string>{"b", "a", "b", "c", "a", "b"}));
  EXPECT_TRUE(plan.waiting.empty());
}

TEST(FirstFitTest, NeverOverAllocatesAndExplainsWhatWaits) {
  auto sched = NewFirstFitScheduler();
  std::vector<TaskView> tasks;
  for (uint32_t i = 0; i < 5; ++i) tasks.push_back(Task("j", i, 1, 3 * kGiB));
  // 8 cores but memory for only two such tasks; 1 core for the other.
  Plan plan = sched->Schedule({Node("big", 8, 7 * kGiB), Node("small", 1, 64 * kGiB)}, tasks);
  std::map<std::string, int> per_node;
  for (const auto& p : plan.placements) per_node[p.node_id]++;
  EXPECT_EQ(per_node["big"], 2);
  EXPECT_EQ(per_node["small"], 1);
  ASSERT_EQ(plan.waiting.size(), 2u);
  for (uint32_t i : {3u, 4u}) {
    auto it = plan.waiting.find(TaskKey("j", i));
    ASSERT_NE(it, plan.waiting.end()) << "task " << i;
    EXPECT_EQ(it->second, "2 nodes: 1 insufficient CPU, 1 insufficient memory; waiting");
  }
}

TEST(FirstFitTest, SkipsExcludedAndUnsuitableNodes) {
  auto sched = NewFirstFitScheduler();
  TaskView t = Task("j", 0, 1);
  t.excluded_nodes = {"best"};
  NodeView offline = Node("offline", 32);
  offline.online = false;
  Plan plan = sched->Schedule({Node("best", 16), offline, Node("ok", 2)}, {t});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].node_id, "ok");
}

TEST(FirstFitTest, NoNodesMeansEverythingWaits) {
  auto sched = NewFirstFitScheduler();
  Plan plan = sched->Schedule({}, {Task("j", 0, 1), Task("j", 1, 1)});
  EXPECT_TRUE(plan.placements.empty());
  ASSERT_EQ(plan.waiting.size(), 2u);
  EXPECT_EQ(plan.waiting.at("j/0"), "0 nodes; waiting");
}

// --- properties over random fleets ------------------------------------------

struct Instance {
  std::vector<NodeView> nodes;
  std::vector<TaskView> tasks;
};

Instance RandomInstance(uint32_t seed) {
  std::mt19937 rng(seed);
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Instance in;
  int n_nodes = pick(0, 8);
  for (int i = 0; i < n_nodes; ++i) {
    // Tenths of a core: not exact in binary, so rounding is exercised too.
    NodeView n = Node("n" + std::to_string(i), pick(0, 160) / 10.0, uint64_t(pick(0, 64)) * kGiB / 2,
                      chance(0.3) ? pick(1, 4) : 0);
    n.online = chance(0.9);
    n.runtimes = chance(0.3) ? std::vector<std::string>{"runc", "runsc"} : std::vector<std::string>{"runc"};
    if (chance(0.1)) n.enforcement.set_memory("");
    if (chance(0.3)) n.enforcement.set_cpu("");
    in.nodes.push_back(n);
  }
  int n_tasks = pick(0, 40);
  for (int i = 0; i < n_tasks; ++i) {
    TaskView t = Task("j" + std::to_string(pick(0, 3)), static_cast<uint32_t>(i), pick(1, 40) / 10.0,
                      uint64_t(pick(0, 16)) * kGiB / 2, chance(0.15) ? pick(1, 2) : 0);
    if (chance(0.2)) t.runtime = "runsc";
    t.resources.set_strict_cpu(chance(0.2));
    for (const auto& n : in.nodes) {
      if (chance(0.1)) t.excluded_nodes.insert(n.id);
    }
    in.tasks.push_back(t);
  }
  return in;
}

bool SamePlan(const Plan& a, const Plan& b) {
  if (a.waiting != b.waiting || a.placements.size() != b.placements.size()) return false;
  for (size_t i = 0; i < a.placements.size(); ++i) {
    const auto &x = a.placements[i], &y = b.placements[i];
    if (x.job_id != y.job_id || x.index != y.index || x.node_id != y.node_id) return false;
  }
  return true;
}

TEST(FirstFitPropertyTest, PlansAreFeasibleDeterministicAndComplete) {
  auto sched = NewFirstFitScheduler();
  int placed = 0, waited = 0;
  for (uint32_t seed = 1; seed <= 400; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Instance in = RandomInstance(seed);
    Plan plan = sched->Schedule(in.nodes, in.tasks);

    // Same input, same plan; node order in the snapshot does not matter.
    EXPECT_TRUE(SamePlan(plan, NewFirstFitScheduler()->Schedule(in.nodes, in.tasks)));
    std::vector<NodeView> shuffled = in.nodes;
    std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(seed));
    EXPECT_TRUE(SamePlan(plan, sched->Schedule(shuffled, in.tasks)));

    // Replay the tasks in order against the remaining capacity.
    std::map<std::string, NodeView> left;
    for (const auto& n : in.nodes) left[n.id] = n;
    std::map<std::string, double> cpu_used;
    std::map<std::string, uint64_t> mem_used;
    std::map<std::string, uint32_t> gpus_used;
    size_t next = 0;
    for (const auto& t : in.tasks) {
      const std::string key = TaskKey(t.job_id, t.index);
      bool is_placed = next < plan.placements.size() && plan.placements[next].job_id == t.job_id &&
                       plan.placements[next].index == t.index;
      if (!is_placed) {
        // Unplaced: says why, and really fits nowhere at this point.
        ++waited;
        auto it = plan.waiting.find(key);
        ASSERT_NE(it, plan.waiting.end()) << key << " neither placed nor waiting";
        EXPECT_FALSE(it->second.empty());
        for (const auto& [id, n] : left) EXPECT_NE(Infeasibility(n, t), "") << key << " would fit on " << id;
        continue;
      }
      ++placed;
      EXPECT_EQ(plan.waiting.count(key), 0u) << key << " both placed and waiting";
      const std::string& node_id = plan.placements[next++].node_id;
      ASSERT_EQ(left.count(node_id), 1u) << "unknown node " << node_id;
      NodeView& chosen = left[node_id];
      EXPECT_EQ(Infeasibility(chosen, t), "") << key << " on " << node_id;
      // First fit by most free CPU: no feasible node ranks before the chosen one.
      for (const auto& [id, n] : left) {
        bool ranks_before = n.cpu_free > chosen.cpu_free || (n.cpu_free == chosen.cpu_free && id < node_id);
        if (ranks_before) {
          EXPECT_NE(Infeasibility(n, t), "") << key << ": " << id << " ranks before " << node_id;
        }
      }
      EXPECT_EQ(plan.placements[next - 1].device_uuids.size(), t.resources.gpus()) << key;
      Reserve(&chosen, t, plan.placements[next - 1].device_uuids);
      cpu_used[node_id] += t.resources.cpu();
      mem_used[node_id] += t.resources.memory_bytes();
      gpus_used[node_id] += t.resources.gpus();
    }
    EXPECT_EQ(next, plan.placements.size()) << "placements out of task order or for unknown tasks";
    EXPECT_EQ(plan.placements.size() + plan.waiting.size(), in.tasks.size());

    // Never over-allocates.
    for (const auto& n : in.nodes) {
      EXPECT_LE(cpu_used[n.id], n.cpu_free + 1e-6) << n.id;
      EXPECT_LE(mem_used[n.id], n.memory_free) << n.id;
      EXPECT_LE(gpus_used[n.id], n.gpus.size()) << n.id;
    }
  }
  // The generator produces both outcomes in bulk, or the checks above say little.
  EXPECT_GT(placed, 1000);
  EXPECT_GT(waited, 500);
}

}  // namespace
}  // namespace idlegrid::sched
