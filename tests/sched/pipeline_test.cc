// The pipeline scheduler's placements: policies, fractional GPUs, and
// invariants over random fleets (fixed seeds): no over-allocation, no
// infeasible placement, determinism, and every waiting task truly unplaceable.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <random>

#include "sched/pipeline.h"
#include "sched_fixtures.h"

namespace idlegrid::sched {
namespace {

using testing::kGiB;
using testing::PNode;
using testing::PTask;

std::map<std::string, std::string> NodeOf(const Plan& plan) {
  std::map<std::string, std::string> out;
  for (const auto& p : plan.placements) out[TaskKey(p.job_id, p.index)] = p.node_id;
  return out;
}

TEST(PipelineTest, PlacesOnTheBestRankedNodeAndHoldsIt) {
  NodeView a = PNode("a");
  NodeView b = PNode("b");
  b.reliability = 0.99;
  a.reliability = 0.1;
  Plan plan = NewPipelineScheduler()->Schedule({a, b}, {PTask("j", 0), PTask("j", 1), PTask("j", 2)});
  ASSERT_EQ(plan.placements.size(), 2u);
  EXPECT_EQ(plan.placements[0].node_id, "b");
  EXPECT_EQ(plan.placements[1].node_id, "a");
  EXPECT_EQ(plan.placements[0].gpu_milli, 1000u);
  EXPECT_EQ(plan.placements[0].policy, "balanced");
  EXPECT_EQ(plan.waiting["j/2"].summary, "2 nodes: 2 no free GPU (need 1); waiting");
}

// Two tasks alike in all but their image's signatures are not one shape: a
// node that trusts only the first's signer must not take the second too.
TEST(PipelineTest, ASignedAndAnUnsignedTaskOfOneImageArePlacedApart) {
  NodeView picky = PNode("picky", 2);
  picky.trusted_image_keys = {"0a0a0a0a0a0a0a0a"};
  TaskView signed_task = PTask("signed", 0);
  TaskView unsigned_task = PTask("unsigned", 0);
  signed_task.image = unsigned_task.image = "sha256:" + std::string(64, 'a');
  signed_task.image_signers = {"0a0a0a0a0a0a0a0a"};
  Plan plan = NewPipelineScheduler()->Schedule({picky}, {unsigned_task, signed_task});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].job_id, "signed");
  EXPECT_NE(plan.waiting["unsigned/0"].summary.find("not signed by a key the node's owner trusts"), std::string::npos)
      << plan.waiting["unsigned/0"].summary;
}

TEST(PipelineTest, SpreadAndPackDisagree) {
  // Two 2-GPU nodes, two 1-GPU tasks: pack puts both on one node, spread one on each.
  std::vector<NodeView> nodes = {PNode("a", 2), PNode("b", 2)};
  std::vector<TaskView> tasks = {PTask("j", 0), PTask("j", 1)};
  for (auto& t : tasks) t.policy = "binpack";
  Plan pack = NewPipelineScheduler()->Schedule(nodes, tasks);
  ASSERT_EQ(pack.placements.size(), 2u);
  EXPECT_EQ(pack.placements[0].node_id, pack.placements[1].node_id);
  for (auto& t : tasks) t.policy = "spread";
  Plan spread = NewPipelineScheduler()->Schedule(nodes, tasks);
  ASSERT_EQ(spread.placements.size(), 2u);
  EXPECT_NE(spread.placements[0].node_id, spread.placements[1].node_id);
}

TEST(PipelineTest, CustomPolicyFromConfig) {
  auto config = ParsePolicyConfig(R"(
policies:
  - name: cache-first
    scorers:
      - {name: cache, weight: 10}
)");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  NodeView a = PNode("a");
  NodeView b = PNode("b");
  b.cached_images = {"sha256:i"};
  a.reliability = 1;
  TaskView t = PTask();
  t.image = "sha256:i";
  t.policy = "cache-first";
  Plan plan = NewPipelineScheduler({*config, 0})->Schedule({a, b}, {t});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].node_id, "b");
  EXPECT_EQ(plan.placements[0].policy, "cache-first");
}

TEST(PipelineTest, SharesFillOneDeviceUpTo1000Milli) {
  NodeView n = PNode("n", 1);
  std::vector<TaskView> tasks;
  for (uint32_t i = 0; i < 3; ++i) {
    TaskView t = PTask("s", i);
    t.gpu_milli = 400;
    tasks.push_back(t);
  }
  Plan plan = NewPipelineScheduler()->Schedule({n}, tasks);
  ASSERT_EQ(plan.placements.size(), 2u);
  EXPECT_EQ(plan.placements[0].device_uuids, plan.placements[1].device_uuids);
  EXPECT_EQ(plan.placements[1].gpu_milli, 400u);
  EXPECT_NE(plan.waiting["s/2"].summary.find("insufficient GPU share (need 400 milli)"), std::string::npos)
      << plan.waiting["s/2"].summary;
}

TEST(PipelineTest, VramSlicesNeverExceedAllocatable) {
  NodeView n = PNode("n", 1, "NVIDIA A10", 24 * kGiB);
  n.gpus[0].set_allocatable_memory_bytes(22 * kGiB);  // 2 GiB reserved by the owner
  std::vector<TaskView> tasks;
  for (uint32_t i = 0; i < 3; ++i) {
    TaskView t = PTask("v", i);
    t.vram_slice = true;
    t.resources.set_gpu_memory_bytes(10 * kGiB);
    tasks.push_back(t);
  }
  Plan plan = NewPipelineScheduler()->Schedule({n}, tasks);
  EXPECT_EQ(plan.placements.size(), 2u);
  EXPECT_EQ(plan.placements[0].gpu_memory_bytes, 10 * kGiB);
  EXPECT_NE(plan.waiting["v/2"].summary.find("insufficient VRAM (need 10 GiB)"), std::string::npos)
      << plan.waiting["v/2"].summary;
}

TEST(PipelineTest, SharesOnlyWhereTheOwnerAllowsAndNeverNextToAWholeTask) {
  NodeView closed = PNode("closed", 1);
  closed.allows_sharing = false;
  NodeView open = PNode("open", 1);
  TaskView whole = PTask("w");
  whole.policy = "spread";
  TaskView share = PTask("s");
  share.gpu_milli = 250;
  // The whole task is placed first; both nodes are alike for it. Whatever it
  // takes, the share must not land on a device it holds nor on "closed".
  Plan plan = NewPipelineScheduler()->Schedule({closed, open}, {whole, share});
  auto where = NodeOf(plan);
  if (where["w/0"] == "open") {
    EXPECT_EQ(where.count("s/0"), 0u);
    EXPECT_NE(plan.waiting["s/0"].summary.find("does not allow GPU sharing"), std::string::npos)
        << plan.waiting["s/0"].summary;
  } else {
    EXPECT_EQ(where["s/0"], "open");
  }
}

TEST(PipelineTest, RegistryImagesGoOnlyWhereTheOwnerAllowsTheirRegistry) {
  NodeView closed = PNode("closed", 0);
  NodeView open = PNode("open", 0);
  open.allowed_registries = {"127.0.0.1:5000"};
  // Same digest, same resources: only the registry tells these tasks apart,
  // so they must not share one feasibility verdict.
  TaskView pushed = PTask("pushed", 0, 0);
  pushed.image = "sha256:" + std::string(64, 'a');
  TaskView pulled = pushed;
  pulled.job_id = "pulled";
  pulled.registry = "127.0.0.1:5000";
  TaskView elsewhere = pushed;
  elsewhere.job_id = "elsewhere";
  elsewhere.registry = "127.0.0.1:5001";
  Plan plan = NewPipelineScheduler()->Schedule({closed, open}, {pulled, elsewhere, pushed});
  auto where = NodeOf(plan);
  EXPECT_EQ(where["pulled/0"], "open");
  EXPECT_EQ(where.count("pushed/0"), 1u);
  EXPECT_EQ(where.count("elsewhere/0"), 0u);
  EXPECT_NE(plan.waiting["elsewhere/0"].summary.find("registry 127.0.0.1:5001 not in the owner's allowedRegistries"),
            std::string::npos)
      << plan.waiting["elsewhere/0"].summary;
}

TEST(PipelineTest, ApplyPlacementRechecks) {
  NodeView n = PNode("n", 1);
  TaskView t = PTask();
  Plan plan = NewPipelineScheduler()->Schedule({n}, {t});
  ASSERT_EQ(plan.placements.size(), 1u);
  ASSERT_TRUE(ApplyPlacement(&n, t, plan.placements[0]).ok());
  EXPECT_EQ(n.gpu_free_milli, std::vector<uint32_t>{0});
  EXPECT_DOUBLE_EQ(n.cpu_free, 14);
  Status again = ApplyPlacement(&n, t, plan.placements[0]);
  EXPECT_EQ(again.code(), Code::kFailedPrecondition);
  EXPECT_NE(again.message().find("no free GPU"), std::string::npos) << again.message();
}

// --- properties over random fleets -----------------------------------------

const char* const kModels[] = {"NVIDIA A100", "NVIDIA T4", "NVIDIA L4"};
const char* const kPolicies[] = {"balanced", "cheapest", "binpack", "spread"};

std::vector<NodeView> RandomFleet(std::mt19937_64& rng, int count) {
  std::vector<NodeView> nodes;
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  for (int i = 0; i < count; ++i) {
    const char* model = kModels[pick(3)];
    NodeView n = PNode("n" + std::to_string(i), pick(5), model, (8 + pick(4) * 8) * kGiB);
    n.online = pick(10) != 0;
    if (pick(10) == 0) n.unschedulable_reason = "paused by its owner";
    n.cpu_free = n.cpu_total = 1 + pick(16);
    n.memory_free = (1 + pick(32)) * kGiB;
    n.region = pick(2) ? "eu-west" : "us-east";
    n.trust_tier = pick(3);
    n.allows_sharing = pick(2);
    n.asks[model] = 0.25 * pick(8);
    n.reliability = pick(100) / 100.0;
    for (size_t d = 0; d < n.gpus.size(); ++d) {
      n.gpu_free_milli.push_back(pick(3) == 0 ? 1000 - 100 * pick(11) : 1000);
      n.gpus[d].set_allocatable_memory_bytes(n.gpus[d].memory_total_bytes() * pick(5) / 4);
      n.gpus[d].set_simulated(pick(4) == 0);
      n.gpus[d].set_compute_capability(pick(2) ? "8.0" : "9.0");
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

std::vector<TaskView> RandomTasks(std::mt19937_64& rng, int count) {
  std::vector<TaskView> tasks;
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  for (int i = 0; i < count; ++i) {
    TaskView t = PTask("job" + std::to_string(i / 10), i % 10, pick(3));
    t.resources.set_cpu(0.5 * pick(6));
    t.resources.set_memory_bytes(pick(8) * kGiB);
    t.resources.set_gpu_memory_bytes(pick(3) * 8 * kGiB);
    const int kind = pick(6);
    if (kind == 0) t.gpu_milli = 100 * (1 + pick(9));
    if (kind == 1) {
      t.vram_slice = true;
      t.resources.set_gpu_memory_bytes((1 + pick(8)) * 2 * kGiB);
    }
    if (pick(4) == 0) t.regions = {"eu-west"};
    t.min_trust_tier = pick(3) == 0 ? 1 : 0;
    if (pick(4) == 0) t.gpu_models = {kModels[pick(3)]};
    if (pick(5) == 0) t.min_compute_capability = "9.0";
    if (pick(4) == 0) t.max_price_per_gpu_hour = 0.25 * pick(6);
    if (pick(8) == 0) t.excluded_nodes = {"n" + std::to_string(pick(30))};
    t.policy = kPolicies[pick(4)];
    tasks.push_back(std::move(t));
  }
  return tasks;
}

// An oracle written from the rules, not from the stage code.
std::string Violation(const NodeView& n, const TaskView& t, const Placement& p) {
  if (!n.online || !n.unschedulable_reason.empty()) return "offline or unschedulable node";
  if (!t.regions.empty() && !t.regions.count(n.region)) return "region";
  if (n.trust_tier < t.min_trust_tier) return "trust tier";
  if (t.excluded_nodes.count(n.id)) return "excluded node";
  const bool share = t.vram_slice || (t.gpu_milli > 0 && t.gpu_milli < 1000);
  if (share && !n.allows_sharing) return "share on a node that forbids it";
  const uint32_t want = share ? 1 : t.resources.gpus();
  if (p.device_uuids.size() != want) return "wrong device count";
  for (const auto& uuid : p.device_uuids) {
    const v1::GpuDevice* d = nullptr;
    for (const auto& g : n.gpus) d = g.uuid() == uuid ? &g : d;
    if (d == nullptr) return "unknown device";
    if (!t.gpu_models.empty() && !t.gpu_models.count(d->name())) return "model";
    if (t.min_compute_capability == "9.0" && d->compute_capability() != "9.0") return "compute capability";
    if (t.min_trust_tier >= 1 && (d->simulated() || !d->measured())) return "simulated device for trusted task";
    if (t.max_price_per_gpu_hour > 0 && n.asks.at(d->name()) > t.max_price_per_gpu_hour) return "over bid";
  }
  return "";
}

TEST(PipelinePropertyTest, RandomFleetsNeverOverAllocateOrPlaceInfeasibly) {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    std::vector<NodeView> fleet = RandomFleet(rng, 30);
    std::vector<TaskView> tasks = RandomTasks(rng, 120);
    PipelineOptions options;
    options.seed = seed;
    Plan plan = NewPipelineScheduler(options)->Schedule(fleet, tasks);
    EXPECT_EQ(plan.placements.size() + plan.waiting.size(), tasks.size());

    std::map<std::string, NodeView> state;
    for (const auto& n : fleet) state[n.id] = n;
    std::map<std::string, const TaskView*> by_key;
    for (const auto& t : tasks) by_key[TaskKey(t.job_id, t.index)] = &t;
    // Independent accounting: milli and VRAM per device, cores and memory per node.
    std::map<std::string, std::pair<int64_t, int64_t>> device_left;  // uuid -> milli, vram
    std::map<std::string, bool> tenant;                              // a device with a tenant is never whole again
    std::map<std::string, std::pair<double, int64_t>> node_left;
    for (const auto& n : fleet) {
      node_left[n.id] = {n.cpu_free, static_cast<int64_t>(n.memory_free)};
      for (size_t d = 0; d < n.gpus.size(); ++d) {
        // 999 free: a tenant holding no compute (capacity/ledger.h).
        const uint32_t free = n.gpu_free_milli[d];
        device_left[n.gpus[d].uuid()] = {free == 999 ? 1000 : free,
                                         static_cast<int64_t>(n.gpus[d].allocatable_memory_bytes())};
        tenant[n.gpus[d].uuid()] = free < 1000;
      }
    }
    for (const auto& p : plan.placements) {
      const TaskView& t = *by_key.at(TaskKey(p.job_id, p.index));
      const NodeView& n = state.at(p.node_id);
      EXPECT_EQ(Violation(n, t, p), "") << p.node_id << " " << TaskKey(p.job_id, p.index);
      const bool share = t.vram_slice || (t.gpu_milli > 0 && t.gpu_milli < 1000);
      for (const auto& uuid : p.device_uuids) {
        auto& [milli, vram] = device_left[uuid];
        if (share) {
          // Shares add up to at most one GPU, whatever order slices came in.
          milli -= t.gpu_milli;
          tenant[uuid] = true;
          vram -= static_cast<int64_t>(t.resources.gpu_memory_bytes());
        } else {
          EXPECT_TRUE(milli == 1000 && !tenant[uuid]) << "whole device " << uuid << " already had a tenant";
          EXPECT_GE(vram, static_cast<int64_t>(t.resources.gpu_memory_bytes()));
          milli = 0;
          vram = 0;
        }
        EXPECT_GE(milli, 0) << uuid;
        EXPECT_GE(vram, 0) << uuid;
      }
      auto& [cpu, mem] = node_left[p.node_id];
      cpu -= t.resources.cpu();
      mem -= static_cast<int64_t>(t.resources.memory_bytes());
      EXPECT_GE(cpu, -1e-9) << p.node_id;
      EXPECT_GE(mem, 0) << p.node_id;
      // The commit-time re-check agrees with the plan.
      Status applied = ApplyPlacement(&state.at(p.node_id), t, p);
      EXPECT_TRUE(applied.ok()) << applied.ToString();
    }
    // A task that waits cannot go anywhere once the plan holds its capacity.
    std::vector<NodeView> after;
    for (auto& [id, n] : state) after.push_back(n);
    for (const auto& [key, why] : plan.waiting) {
      const TaskView& t = *by_key.at(key);
      Explanation e = Explain(after, t, PolicyConfig{}, 1, seed);
      EXPECT_EQ(e.feasible_nodes, 0u) << key << ": " << e.summary;
      EXPECT_EQ(why.summary, e.summary) << key;
      EXPECT_EQ(why.feasible_nodes, e.feasible_nodes) << key;
      std::set<std::string> stages;
      for (const auto& f : e.filtered) {
        if (f.nodes > 0) stages.insert(f.stage);
      }
      EXPECT_EQ(why.filtered_by, stages) << key << ": the plan's facts are Explain's, after the plan";
    }
  }
}

TEST(PipelinePropertyTest, DeterministicForASnapshotAndSeed) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<NodeView> fleet = RandomFleet(rng, 40);
    std::vector<TaskView> tasks = RandomTasks(rng, 150);
    PipelineOptions options;
    options.seed = seed;
    Plan first = NewPipelineScheduler(options)->Schedule(fleet, tasks);
    std::vector<NodeView> shuffled = fleet;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);  // the snapshot is a set: order must not matter
    Plan second = NewPipelineScheduler(options)->Schedule(shuffled, tasks);
    ASSERT_EQ(first.placements.size(), second.placements.size()) << "seed " << seed;
    for (size_t i = 0; i < first.placements.size(); ++i) {
      EXPECT_EQ(first.placements[i].node_id, second.placements[i].node_id);
      EXPECT_EQ(first.placements[i].device_uuids, second.placements[i].device_uuids);
    }
    EXPECT_EQ(first.waiting, second.waiting);
  }
}

TEST(PipelinePropertyTest, ExplainRanksTheFirstTaskAsScheduleDoes) {
  int placed = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<NodeView> fleet = RandomFleet(rng, 40);
    std::vector<TaskView> tasks = RandomTasks(rng, 50);
    PipelineOptions options;
    options.seed = seed;
    Plan plan = NewPipelineScheduler(options)->Schedule(fleet, tasks);
    Explanation e = Explain(fleet, tasks[0], PolicyConfig{}, 1, seed, tasks);
    auto where = NodeOf(plan);
    const std::string key = TaskKey(tasks[0].job_id, tasks[0].index);
    if (where.count(key)) {
      ASSERT_FALSE(e.top.empty()) << "seed " << seed;
      EXPECT_EQ(e.top[0].node_id, where[key]) << "seed " << seed;
      EXPECT_EQ(e.top[0].device_uuids, plan.placements[0].device_uuids) << "seed " << seed;
      ++placed;
    } else {
      EXPECT_EQ(e.feasible_nodes, 0u) << "seed " << seed;
    }
  }
  EXPECT_GT(placed, 10);  // the property was exercised
}

TEST(PipelinePropertyTest, SeedOnlyBreaksTies) {
  // Identical nodes: the seed picks among them; a better node wins whatever the seed.
  std::vector<NodeView> nodes;
  for (int i = 0; i < 8; ++i) nodes.push_back(PNode("n" + std::to_string(i)));
  nodes[5].reliability = 1.0;
  std::set<std::string> firsts;
  for (uint64_t seed = 0; seed < 16; ++seed) {
    PipelineOptions options;
    options.seed = seed;
    Plan plan = NewPipelineScheduler(options)->Schedule(nodes, {PTask("a"), PTask("b")});
    ASSERT_EQ(plan.placements.size(), 2u);
    EXPECT_EQ(plan.placements[0].node_id, "n5");
    firsts.insert(plan.placements[1].node_id);
  }
  EXPECT_GT(firsts.size(), 1u);
}

}  // namespace
}  // namespace idlegrid::sched
