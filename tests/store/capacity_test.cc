// The capacity guard of CommitAssignments (capacity/batch_admission.h), on every
// backend: the rules one by one; coordinators planning from stale snapshots
// at the same time (8 threads on SQLite, 3 processes on PostgreSQL) never
// grant a slot or a device twice; and a coordinator killed in the middle of
// one large batch commit leaves no half-applied allocation. Everything is
// checked from the database, not from what the store returned.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "store/store.h"
#include "store/store_fixture.h"

namespace idlegrid::store {
namespace {

using namespace backends;  // NOLINT: the shared fixture and helpers

constexpr uint64_t kGiB = uint64_t{1} << 30;
const std::string kActive = "(" + std::to_string(v1::ASSIGNED) + ", " + std::to_string(v1::RUNNING) + ")";

struct SimDevice {
  std::string uuid;
  uint64_t vram = 40 * kGiB;
};

// A registered node as the store keeps it: cores and memory in its info,
// devices and the owner's reserves in its advertisement.
NodeRecord SimNode(const std::string& id, uint32_t cores, uint64_t memory, const std::vector<SimDevice>& devices = {},
                   double reserved_cpu = 0, uint64_t reserved_vram = 0) {
  NodeRecord n;
  n.id = id;
  n.name = id;
  n.info.set_hostname(id);
  n.info.set_cpu_cores(cores);
  n.info.set_memory_bytes(memory);
  n.info.add_runtimes("runc");
  n.registered_ms = 100;
  n.last_sequence = 1;
  n.advertisement.set_node_id(id);
  n.advertisement.set_sequence(1);
  n.advertisement.mutable_policy()->set_reserved_cpu(reserved_cpu);
  n.advertisement.mutable_policy()->set_reserved_gpu_memory_bytes(reserved_vram);
  n.advertisement.mutable_policy()->set_allow_gpu_sharing(true);
  for (size_t i = 0; i < devices.size(); ++i) {
    v1::GpuDevice* d = n.advertisement.mutable_inventory()->mutable_gpus()->add_devices();
    d->set_index(static_cast<uint32_t>(i));
    d->set_uuid(devices[i].uuid);
    d->set_name("NVIDIA A100-SXM4-40GB");
    d->set_memory_total_bytes(devices[i].vram);
    d->set_simulated(true);
  }
  return n;
}

struct TaskShape {
  double cpu = 1;
  uint64_t memory = 1 << 20;
  uint32_t gpus = 0;
  uint64_t gpu_memory = 0;  // per GPU; > 0 with gpus 1: a VRAM slice
  uint32_t gpu_milli = 0;   // 1..999: a compute share
};

v1::JobSpec ShapedSpec(const TaskShape& s, uint32_t count) {
  v1::JobSpec spec = Spec({.array_count = count, .cpu = s.cpu, .memory = s.memory, .gpus = s.gpus});
  spec.mutable_resources()->set_gpu_memory_bytes(s.gpu_memory);
  spec.mutable_resources()->set_gpu_milli(s.gpu_milli);
  return spec;
}

// What the placement records for a shape: the share, 0 for a VRAM slice,
// 1000 for whole devices (as the pipeline scheduler does).
uint32_t PlacedMilli(const TaskShape& s) {
  if (s.gpus == 0) return 0;
  if (s.gpu_milli > 0 && s.gpu_milli < 1000) return s.gpu_milli;
  return s.gpu_memory > 0 ? 0 : 1000;
}

NewAttempt Attempt(const std::string& id, const std::string& job, uint32_t index, const std::string& node,
                   std::vector<std::string> devices = {}, uint32_t milli = 0) {
  NewAttempt a{id, job, index, node, 2000, std::move(devices)};
  a.placement.set_gpu_milli(milli);
  return a;
}

class CapacityGuardTest : public StoreFixture, public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override { CreateDatabase(GetParam()); }

  void AddNode(const NodeRecord& n) {
    Status st = store_->UpsertNode(n, "tok-" + n.id);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  void CreateShaped(const std::string& id, const TaskShape& s, uint32_t count) {
    Status st = store_->CreateJob(id, ShapedSpec(s, count), "sha256:spec-" + id, 1000);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  // The attempt ids CommitAssignments says it committed.
  std::vector<std::string> Commit(const std::vector<NewAttempt>& batch) {
    auto r = store_->CommitAssignments(batch);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    std::vector<std::string> ids;
    if (r.ok()) {
      for (const auto& a : *r) ids.push_back(a.attempt_id);
    }
    return ids;
  }
  int64_t ActiveOn(const std::string& node) {
    return QueryInt("SELECT COUNT(*) FROM attempts WHERE node_id = '" + node + "' AND state IN " + kActive);
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, CapacityGuardTest, ::testing::Values(BackendKind::kSqlite, BackendKind::kPostgres),
                         [](const auto& info) { return backends::BackendName(info.param); });

using Ids = std::vector<std::string>;

// --- the rules ------------------------------------------------------------------

TEST_P(CapacityGuardTest, CoresLessTheOwnersReserveBoundABatchAndLaterBatches) {
  AddNode(SimNode("n1", 4, 64 * kGiB, {}, /*reserved_cpu=*/1));
  AddNode(SimNode("n2", 2, 64 * kGiB));
  CreateShaped("j", {.cpu = 1}, 7);
  // n1 offers 3 cores: the first three of the batch fit, the fourth is
  // skipped (not an error) while n2's attempt in the same batch commits.
  Ids done = Commit({Attempt("a0", "j", 0, "n1"), Attempt("a1", "j", 1, "n1"), Attempt("a2", "j", 2, "n1"),
                     Attempt("a3", "j", 3, "n1"), Attempt("a4", "j", 4, "n2")});
  EXPECT_EQ(done, (Ids{"a0", "a1", "a2", "a4"}));
  EXPECT_EQ(ActiveOn("n1"), 3);
  EXPECT_EQ(TaskOf("j", 3).state(), v1::QUEUED) << "a skipped attempt leaves its task queued";
  // A later batch sees what the first holds.
  EXPECT_EQ(Commit({Attempt("b3", "j", 3, "n1"), Attempt("b5", "j", 5, "n2")}), (Ids{"b5"}));
  EXPECT_EQ(Commit({Attempt("c6", "j", 6, "n2")}), Ids{});
  // An attempt that ends gives its cores back.
  ReportOk("n1", Report("a0", v1::EXITED, 0));
  EXPECT_EQ(Commit({Attempt("d3", "j", 3, "n1")}), (Ids{"d3"}));
}

TEST_P(CapacityGuardTest, TheSameTaskTwiceInABatchGoesToTheFirstPlacementThatFits) {
  AddNode(SimNode("small", 1, 64 * kGiB));
  AddNode(SimNode("big", 8, 64 * kGiB));
  CreateShaped("j", {.cpu = 2}, 1);
  EXPECT_EQ(Commit({Attempt("a", "j", 0, "small"), Attempt("b", "j", 0, "big"), Attempt("c", "j", 0, "big")}),
            (Ids{"b"}));
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM attempts"), 1);
}

TEST_P(CapacityGuardTest, MemoryBoundsANode) {
  AddNode(SimNode("n1", 16, 1 * kGiB));
  CreateShaped("j", {.cpu = 1, .memory = 400ull << 20}, 3);
  EXPECT_EQ(Commit({Attempt("a0", "j", 0, "n1"), Attempt("a1", "j", 1, "n1"), Attempt("a2", "j", 2, "n1")}),
            (Ids{"a0", "a1"}));
}

TEST_P(CapacityGuardTest, NodesWithoutStoredCapacityAreNotChecked) {
  NodeRecord bare;  // registered, nothing advertised yet
  bare.id = "bare";
  bare.name = "bare";
  AddNode(bare);
  CreateShaped("j", {.cpu = 8}, 4);
  EXPECT_EQ(Commit({Attempt("a0", "j", 0, "ghost"), Attempt("a1", "j", 1, "ghost"), Attempt("a2", "j", 2, "bare"),
                    Attempt("a3", "j", 3, "bare")}),
            (Ids{"a0", "a1", "a2", "a3"}));
}

TEST_P(CapacityGuardTest, AWholeDeviceTakesNoOtherTenant) {
  AddNode(SimNode("g", 32, 256 * kGiB, {{"GPU-0"}, {"GPU-1"}}));
  CreateShaped("whole", {.gpus = 1}, 3);
  CreateShaped("share", {.gpus = 1, .gpu_milli = 300}, 2);
  CreateShaped("slice", {.gpus = 1, .gpu_memory = 4 * kGiB}, 1);
  // Two attempts naming GPU-0 whole: the second is refused, GPU-1 is free.
  EXPECT_EQ(Commit({Attempt("w0", "whole", 0, "g", {"GPU-0"}, 1000), Attempt("w1", "whole", 1, "g", {"GPU-0"}, 0),
                    Attempt("w2", "whole", 2, "g", {"GPU-1"}, 1000)}),
            (Ids{"w0", "w2"}));
  // Neither a share nor a slice goes onto a device held whole.
  EXPECT_EQ(Commit({Attempt("s0", "share", 0, "g", {"GPU-0"}, 300), Attempt("v0", "slice", 0, "g", {"GPU-1"}, 0)}),
            Ids{});
  // Once the holder ends, the device is free again.
  ReportOk("g", Report("w0", v1::EXITED, 0));
  EXPECT_EQ(Commit({Attempt("s1", "share", 1, "g", {"GPU-0"}, 300)}), (Ids{"s1"}));
  // A whole device cannot join a share, nor a VRAM slice (which holds no compute).
  EXPECT_EQ(Commit({Attempt("v1", "slice", 0, "g", {"GPU-1"}, 0)}), Ids{}) << "GPU-1 is still held whole";
  ReportOk("g", Report("w2", v1::EXITED, 0));
  EXPECT_EQ(Commit({Attempt("v2", "slice", 0, "g", {"GPU-1"}, 0)}), (Ids{"v2"}));
  EXPECT_EQ(Commit({Attempt("w3", "whole", 1, "g", {"GPU-0"}, 1000)}), Ids{});
  EXPECT_EQ(Commit({Attempt("w4", "whole", 1, "g", {"GPU-1"}, 1000)}), Ids{});
}

// A whole device stays whole when the job names VRAM (two GPUs with
// gpuMemory, or exclusiveGpu: stored as milli 1000 with gpu_memory). The
// guard used to count it as a VRAM slice and let a slice without compute
// join it; the scheduler holds it whole, and so does the shared ledger now.
TEST_P(CapacityGuardTest, AWholeDeviceNamingVramTakesNoVramSlice) {
  AddNode(SimNode("g", 32, 256 * kGiB, {{"GPU-0"}, {"GPU-1"}}));
  CreateShaped("pair", {.gpus = 2, .gpu_memory = 8 * kGiB}, 1);
  CreateShaped("slice", {.gpus = 1, .gpu_memory = 4 * kGiB}, 1);
  EXPECT_EQ(Commit({Attempt("p0", "pair", 0, "g", {"GPU-0", "GPU-1"}, 1000)}), (Ids{"p0"}));
  EXPECT_EQ(Commit({Attempt("v0", "slice", 0, "g", {"GPU-0"}, 0)}), Ids{});
  ReportOk("g", Report("p0", v1::EXITED, 0));
  EXPECT_EQ(Commit({Attempt("v1", "slice", 0, "g", {"GPU-0"}, 0)}), (Ids{"v1"}));
}

TEST_P(CapacityGuardTest, ComputeSharesOfADeviceAddUpToAtMostOneGpu) {
  AddNode(SimNode("g", 32, 256 * kGiB, {{"GPU-0"}}));
  CreateShaped("share", {.gpus = 1, .gpu_milli = 400}, 3);
  CreateShaped("small", {.gpus = 1, .gpu_milli = 200}, 1);
  EXPECT_EQ(Commit({Attempt("s0", "share", 0, "g", {"GPU-0"}, 400), Attempt("s1", "share", 1, "g", {"GPU-0"}, 400),
                    Attempt("s2", "share", 2, "g", {"GPU-0"}, 400)}),
            (Ids{"s0", "s1"}));
  EXPECT_EQ(Commit({Attempt("m0", "small", 0, "g", {"GPU-0"}, 200)}), (Ids{"m0"}));
}

TEST_P(CapacityGuardTest, VramSlicesStayWithinTheDeviceLessTheOwnersReserve) {
  // 40 GiB less an 8 GiB reserve: 32 GiB of slices.
  AddNode(SimNode("g", 32, 256 * kGiB, {{"GPU-0", 40 * kGiB}}, 0, 8 * kGiB));
  CreateShaped("slice", {.gpus = 1, .gpu_memory = 12 * kGiB}, 3);
  CreateShaped("thin", {.gpus = 1, .gpu_memory = 8 * kGiB}, 2);
  EXPECT_EQ(Commit({Attempt("v0", "slice", 0, "g", {"GPU-0"}), Attempt("v1", "slice", 1, "g", {"GPU-0"}),
                    Attempt("v2", "slice", 2, "g", {"GPU-0"})}),
            (Ids{"v0", "v1"}));
  // 24 GiB held: another 8 GiB fits exactly, then nothing.
  EXPECT_EQ(Commit({Attempt("t0", "thin", 0, "g", {"GPU-0"}), Attempt("t1", "thin", 1, "g", {"GPU-0"})}), (Ids{"t0"}));
}

// --- races: coordinators planning from stale snapshots ------------------------------

// The simulated fleet of the race tests: CPU nodes with one core (one slot
// each) and GPU nodes with plenty of cores and one 40 GiB device (the device
// is the slot: one whole task, two 500-milli shares or two 16 GiB slices).
struct RaceFleet {
  int cpu_nodes = 0;
  int gpu_nodes = 0;
  static std::string CpuNode(int i) { return "cpu-" + std::to_string(1000 + i); }
  static std::string GpuNode(int i) { return "gpu-" + std::to_string(1000 + i); }
  static std::string Device(int i) { return "GPU-" + std::to_string(1000 + i); }
};

const TaskShape kCpuTask{.cpu = 1};
const TaskShape kWholeTask{.cpu = 1, .gpus = 1};
const TaskShape kShareTask{.cpu = 1, .gpus = 1, .gpu_milli = 500};
const TaskShape kSliceTask{.cpu = 1, .gpus = 1, .gpu_memory = 16 * kGiB};

void RegisterFleet(Store& store, const RaceFleet& fleet) {
  for (int i = 0; i < fleet.cpu_nodes; ++i) {
    ASSERT_TRUE(store.UpsertNode(SimNode(RaceFleet::CpuNode(i), 1, 4 * kGiB), "tok-c" + std::to_string(i)).ok());
  }
  for (int i = 0; i < fleet.gpu_nodes; ++i) {
    ASSERT_TRUE(store
                    .UpsertNode(SimNode(RaceFleet::GpuNode(i), 64, 256 * kGiB, {{RaceFleet::Device(i), 40 * kGiB}}),
                                "tok-g" + std::to_string(i))
                    .ok());
  }
}

// One coordinator's scheduling loop, deliberately naive and stale: read the
// queue and the active attempts, plan every task that looks like it fits
// (in this coordinator's own random order, onto the first node that looks
// free), then commit the plan in batches of 50 without looking again. Stops
// when a fresh snapshot plans nothing. Returns -1 on a store error, else the
// number of attempts it was told were committed.
int64_t StaleCoordinator(Store& store, const RaceFleet& fleet, const std::string& name, uint64_t seed) {
  std::mt19937_64 rng(seed);
  int64_t committed = 0;
  for (int round = 0; round < 500; ++round) {
    auto queued = store.QueuedTasks(100000);
    auto active = store.ActiveAttempts();
    if (!queued.ok() || !active.ok()) {
      std::fprintf(stderr, "%s: snapshot: %s %s\n", name.c_str(), queued.status().ToString().c_str(),
                   active.status().ToString().c_str());
      return -1;
    }
    // What looks held, from the snapshot.
    std::map<std::string, double> cpu_used;
    struct Dev {
      bool whole = false;
      uint32_t milli = 0;
      uint64_t vram = 0;
      int holders = 0;
    };
    std::map<std::string, Dev> devs;
    for (const auto& a : *active) {
      cpu_used[a.node_id] += a.cpu;
      for (const auto& d : a.device_uuids) {
        Dev& dev = devs[d];
        dev.whole |= a.gpu_memory_bytes == 0 && (a.gpu_milli == 0 || a.gpu_milli >= 1000);
        dev.milli += a.gpu_milli > 0 && a.gpu_milli < 1000 ? a.gpu_milli : a.gpu_memory_bytes > 0 ? 0 : 1000;
        dev.vram += a.gpu_memory_bytes;
        ++dev.holders;
      }
    }
    std::shuffle(queued->begin(), queued->end(), rng);
    // Each coordinator scans the nodes from its own place (as different
    // tie-breaks would), so the coordinators overlap without one of them
    // always leading the convoy.
    const int cpu_start = std::uniform_int_distribution<int>(0, fleet.cpu_nodes - 1)(rng);
    const int gpu_start = std::uniform_int_distribution<int>(0, std::max(fleet.gpu_nodes - 1, 0))(rng);
    std::vector<NewAttempt> plan;
    for (const auto& t : *queued) {
      const auto& r = t.spec.resources();
      TaskShape s{.cpu = r.cpu(), .gpus = r.gpus(), .gpu_memory = r.gpu_memory_bytes(), .gpu_milli = r.gpu_milli()};
      std::string id = name + "r" + std::to_string(round) + "-" + t.job_id + "-" + std::to_string(t.index);
      if (s.gpus == 0) {
        for (int k = 0; k < fleet.cpu_nodes; ++k) {
          std::string node = RaceFleet::CpuNode((cpu_start + k) % fleet.cpu_nodes);
          if (cpu_used[node] + s.cpu > 1 + 1e-9) continue;
          cpu_used[node] += s.cpu;
          plan.push_back(Attempt(id, t.job_id, t.index, node));
          break;
        }
        continue;
      }
      const bool whole = s.gpu_memory == 0 && (s.gpu_milli == 0 || s.gpu_milli >= 1000);
      const uint32_t milli = PlacedMilli(s);
      const uint32_t holds = s.gpu_milli > 0 && s.gpu_milli < 1000 ? s.gpu_milli : s.gpu_memory > 0 ? 0 : 1000;
      for (int k = 0; k < fleet.gpu_nodes; ++k) {
        const int i = (gpu_start + k) % fleet.gpu_nodes;
        Dev& dev = devs[RaceFleet::Device(i)];
        if (dev.whole || (whole && dev.holders > 0) || dev.milli + holds > 1000 ||
            dev.vram + s.gpu_memory > 40 * kGiB) {
          continue;
        }
        dev.whole |= whole;
        ++dev.holders;
        dev.milli += holds;
        dev.vram += s.gpu_memory;
        plan.push_back(Attempt(id, t.job_id, t.index, RaceFleet::GpuNode(i), {RaceFleet::Device(i)}, milli));
        break;
      }
    }
    if (plan.empty()) return committed;
    for (size_t i = 0; i < plan.size(); i += 50) {
      std::vector<NewAttempt> batch(plan.begin() + i, plan.begin() + std::min(plan.size(), i + 50));
      auto done = store.CommitAssignments(batch);
      if (!done.ok()) {
        std::fprintf(stderr, "%s: commit: %s\n", name.c_str(), done.status().ToString().c_str());
        return -1;
      }
      committed += static_cast<int64_t>(done->size());
    }
  }
  std::fprintf(stderr, "%s: no end after 500 rounds\n", name.c_str());
  return -1;
}

// Creates the race's 2,000 tasks: `cpu` CPU tasks and the rest GPU tasks in
// equal parts whole, shares and slices.
void CreateRaceJobs(Store& store, uint32_t cpu, uint32_t gpu) {
  ASSERT_TRUE(store.CreateJob("cpu", ShapedSpec(kCpuTask, cpu), "sha256:cpu", 1000).ok());
  if (gpu == 0) return;
  ASSERT_TRUE(store.CreateJob("whole", ShapedSpec(kWholeTask, gpu / 3), "sha256:whole", 1000).ok());
  ASSERT_TRUE(store.CreateJob("share", ShapedSpec(kShareTask, gpu / 3), "sha256:share", 1000).ok());
  ASSERT_TRUE(store.CreateJob("slice", ShapedSpec(kSliceTask, gpu - 2 * (gpu / 3)), "sha256:slice", 1000).ok());
}

// From the database: no slot or device granted twice, every task assigned
// (with exactly one active attempt) or queued, and the fleet full.
void ExpectNothingGrantedTwice(TestDatabase& db, const RaceFleet& fleet, int64_t told_committed) {
  auto q = [&](const std::string& sql) {
    auto v = db.QueryInt(sql);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : -1;
  };
  const std::string active = "FROM attempts WHERE state IN " + kActive;
  EXPECT_EQ(q("SELECT COUNT(*) FROM (SELECT node_id " + active +
              " AND node_id LIKE 'cpu-%' GROUP BY node_id HAVING COUNT(*) > 1) x"),
            0)
      << "a one-slot CPU node holds more than one attempt";
  EXPECT_EQ(q("SELECT COUNT(*) FROM (SELECT devices " + active +
              " AND devices <> '' GROUP BY devices HAVING COUNT(*) > 1 AND "
              "SUM(CASE WHEN gpu_memory = 0 AND gpu_milli IN (0, 1000) THEN 1 ELSE 0 END) > 0) x"),
            0)
      << "a device held whole was granted to another attempt too";
  EXPECT_EQ(q("SELECT COUNT(*) FROM (SELECT devices " + active +
              " AND devices <> '' GROUP BY devices HAVING SUM(CASE WHEN gpu_milli > 0 AND gpu_milli < 1000 THEN "
              "gpu_milli WHEN gpu_memory > 0 THEN 0 ELSE 1000 END) > 1000) x"),
            0)
      << "a device's compute shares add up to more than one GPU";
  EXPECT_EQ(q("SELECT COUNT(*) FROM (SELECT devices " + active +
              " AND devices <> '' GROUP BY devices "
              "HAVING SUM(gpu_memory) > " +
              std::to_string(40 * kGiB) + ") x"),
            0)
      << "a device's VRAM slices add up to more than the device";
  EXPECT_EQ(q("SELECT COUNT(*) FROM tasks WHERE state NOT IN (" + std::to_string(v1::QUEUED) + ", " +
              std::to_string(v1::ASSIGNED) + ")"),
            0);
  const int64_t assigned = q("SELECT COUNT(*) FROM tasks WHERE state = " + std::to_string(v1::ASSIGNED));
  EXPECT_EQ(q("SELECT COUNT(*) " + active), assigned);
  EXPECT_EQ(q("SELECT COUNT(*) FROM attempts"), assigned) << "an attempt of a task not assigned";
  EXPECT_EQ(q("SELECT COUNT(*) FROM (SELECT job_id, idx FROM attempts GROUP BY job_id, idx HAVING COUNT(*) > 1) x"), 0);
  EXPECT_EQ(told_committed, assigned) << "what the coordinators were told differs from the database";
  // Nobody stopped early: every slot is taken.
  EXPECT_EQ(q("SELECT COUNT(DISTINCT node_id) " + active), fleet.cpu_nodes + fleet.gpu_nodes);
}

TEST(CapacityRaceTest, SqliteEightStaleCoordinatorThreadsNeverGrantASlotTwice) {
  auto db = CreateTestDatabase(BackendKind::kSqlite);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  const RaceFleet fleet{.cpu_nodes = 400, .gpu_nodes = 100};
  {
    auto store = OpenStore((*db)->location());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    RegisterFleet(**store, fleet);
    CreateRaceJobs(**store, 1500, 500);
  }
  // Each thread is a coordinator with its own connection to the file.
  std::atomic<int64_t> told{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      auto store = OpenStore((*db)->location());
      if (!store.ok()) {
        ++failed;
        return;
      }
      int64_t n = StaleCoordinator(**store, fleet, "t" + std::to_string(t), 1000 + t);
      if (n < 0)
        ++failed;
      else
        told += n;
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(failed, 0);
  ExpectNothingGrantedTwice(**db, fleet, told);
}

TEST(CapacityRaceTest, PostgresThreeStaleCoordinatorProcessesNeverGrantASlotOrDeviceTwice) {
  // Every trial is checked in full; trials repeat (up to 5) only until one in
  // which more than one process won slots, so the race surely happened even
  // when a loaded machine lets one process finish before the others start.
  int64_t winners = 0;
  for (int trial = 0; trial < 5 && winners <= 1; ++trial) {
    auto db = CreateTestDatabase(BackendKind::kPostgres);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    const RaceFleet fleet{.cpu_nodes = 250, .gpu_nodes = 250};
    const std::string url = (*db)->location();
    {
      auto store = OpenStore(url);
      ASSERT_TRUE(store.ok()) << store.status().ToString();
      RegisterFleet(**store, fleet);
      CreateRaceJobs(**store, 1100, 900);
    }
    int gate[2], counts[2];
    ASSERT_EQ(::pipe(gate), 0);
    ASSERT_EQ(::pipe(counts), 0);
    std::vector<pid_t> pids;
    for (int p = 0; p < 3; ++p) {
      pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        // A coordinator process: its own store (connection pool), two
        // scheduling threads, started together with the others.
        ::close(gate[1]);
        ::close(counts[0]);
        auto store = OpenStore(url);
        if (!store.ok() || !(*store)->QueuedTasks(1).ok()) ::_exit(1);  // connected before the start
        char c;
        (void)::read(gate[0], &c, 1);
        std::atomic<int64_t> n{0};
        std::atomic<bool> bad{false};
        std::vector<std::thread> threads;
        for (int t = 0; t < 2; ++t) {
          threads.emplace_back([&, t] {
            int64_t k = StaleCoordinator(**store, fleet, "p" + std::to_string(p) + "t" + std::to_string(t),
                                         100 * p + t + 1000 * trial);
            if (k < 0)
              bad = true;
            else
              n += k;
          });
        }
        for (auto& t : threads) t.join();
        int64_t v = n;
        if (::write(counts[1], &v, sizeof v) != sizeof v) ::_exit(3);
        ::_exit(bad ? 2 : 0);
      }
      pids.push_back(pid);
    }
    ::close(gate[0]);
    ::close(gate[1]);  // go
    ::close(counts[1]);
    for (pid_t pid : pids) {
      int status = 0;
      ASSERT_EQ(::waitpid(pid, &status, 0), pid);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "coordinator process status " << status;
    }
    int64_t told = 0, v = 0;
    while (::read(counts[0], &v, sizeof v) == sizeof v) told += v;
    ::close(counts[0]);
    ExpectNothingGrantedTwice(**db, fleet, told);
    winners = *(*db)->QueryInt("SELECT COUNT(DISTINCT substr(id, 1, 2)) FROM attempts");
  }
  // The processes really raced: in some trial more than one of them won slots.
  EXPECT_GT(winners, 1);
}

// --- kill -9 in the middle of one large batch commit ------------------------------

constexpr int kKillNodes = 500;
constexpr uint32_t kKillCores = 4;
constexpr uint32_t kKillTasks = 2200;  // 200 more than the nodes hold: the guard skips some inside the batch

std::string KillNode(int trial, int i) { return "t" + std::to_string(trial) + "-n" + std::to_string(1000 + i); }

std::vector<NewAttempt> KillBatch(int trial, const std::string& tag) {
  std::vector<NewAttempt> batch;
  const std::string job = "k" + std::to_string(trial);
  for (uint32_t i = 0; i < kKillTasks; ++i) {
    batch.push_back(Attempt(tag + "-" + std::to_string(i), job, i, KillNode(trial, static_cast<int>(i % kKillNodes))));
  }
  return batch;
}

// In the forked child: one CommitAssignments of the whole batch, bracketed
// by messages to the parent (the commit's duration in microseconds after
// it). Then waits to be killed.
[[noreturn]] void CommitOneBatchUntilKilled(std::string location, int trial, int fd) {
  // Named on PostgreSQL, so the parent can wait for the server to drop it.
  auto opened = OpenStore(LocationForChild(location, ::getpid()));
  if (!opened.ok()) ::_exit(2);
  std::vector<NewAttempt> batch = KillBatch(trial, "x" + std::to_string(trial));
  int64_t mark = 0;
  if (::write(fd, &mark, sizeof mark) != sizeof mark) ::_exit(3);
  auto start = std::chrono::steady_clock::now();
  auto r = (*opened)->CommitAssignments(batch);
  mark = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
  if (!r.ok() || r->size() != kKillNodes * kKillCores) ::_exit(4);
  if (::write(fd, &mark, sizeof mark) != sizeof mark) ::_exit(5);
  for (;;) ::pause();
}

TEST_P(CapacityGuardTest, KilledInTheMiddleOfALargeBatchCommitLeavesNoHalfAppliedAllocation) {
  // Trial 0 measures the commit; then at least 4 kills at random moments
  // within it, more (up to 12, aiming earlier) until one lands before the
  // commit completed.
  constexpr int kMinTrials = 5;
  constexpr int kMaxTrials = 12;
  std::mt19937 rng(7);
  int64_t commit_us = 0;
  int64_t max_delay_us = 0;
  int killed_before_commit = 0;
  for (int trial = 0; trial < kMinTrials || (killed_before_commit == 0 && trial < kMaxTrials); ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const std::string job = "k" + std::to_string(trial);
    // Each trial has its own nodes (exactly full once all its tasks that fit are placed).
    for (int i = 0; i < kKillNodes; ++i) AddNode(SimNode(KillNode(trial, i), kKillCores, 64 * kGiB));
    CreateShaped(job, {.cpu = 1}, kKillTasks);
    store_.reset();  // no connection crosses fork()
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      CommitOneBatchUntilKilled(path_, trial, fds[1]);
    }
    ::close(fds[1]);
    int64_t mark = -1;
    ASSERT_EQ(::read(fds[0], &mark, sizeof mark), static_cast<ssize_t>(sizeof mark));  // committing now
    if (trial == 0) {
      ASSERT_EQ(::read(fds[0], &mark, sizeof mark), static_cast<ssize_t>(sizeof mark));
      commit_us = std::max<int64_t>(mark, 1000);
      max_delay_us = commit_us * 9 / 10;
    } else {
      // Somewhere inside the commit.
      std::this_thread::sleep_for(
          std::chrono::microseconds(std::uniform_int_distribution<int64_t>(0, max_delay_us)(rng)));
    }
    ::kill(pid, SIGKILL);
    int wstatus = 0;
    ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
    ::close(fds[0]);
    ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL) << "the child failed on its own: " << wstatus;
    WaitForSessionGone(pid);
    if (HasFatalFailure()) return;

    auto integrity = db_->IntegrityOk();
    ASSERT_TRUE(integrity.ok()) << integrity.status().ToString();
    EXPECT_TRUE(*integrity);
    // Restart: a new coordinator opens the database.
    Open();
    const std::string of_job = " AND job_id = '" + job + "'";
    const int64_t assigned =
        QueryInt("SELECT COUNT(*) FROM tasks WHERE state = " + std::to_string(v1::ASSIGNED) + of_job);
    const int64_t queued = QueryInt("SELECT COUNT(*) FROM tasks WHERE state = " + std::to_string(v1::QUEUED) + of_job);
    // All or nothing, and nothing lost.
    EXPECT_TRUE(assigned == 0 || assigned == kKillNodes * kKillCores) << assigned << " assigned";
    EXPECT_EQ(assigned + queued, kKillTasks);
    EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM attempts WHERE state IN " + kActive + of_job), assigned);
    EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM attempts WHERE 1 = 1" + of_job), assigned);
    EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM tasks t WHERE t.state = " + std::to_string(v1::ASSIGNED) +
                       " AND t.job_id = '" + job +
                       "' AND (SELECT COUNT(*) FROM attempts a WHERE a.job_id = t.job_id "
                       "AND a.idx = t.idx AND a.state IN " +
                       kActive + ") <> 1"),
              0)
        << "an assigned task without exactly one active attempt";
    if (assigned == 0) ++killed_before_commit;
    if (trial > 0 && assigned > 0) max_delay_us /= 2;  // that one came too late: aim earlier
    // The restarted coordinator finishes the job's allocation: the nodes end
    // exactly full whatever the kill left.
    auto rest = store_->CommitAssignments(KillBatch(trial, "y" + std::to_string(trial)));
    ASSERT_TRUE(rest.ok()) << rest.status().ToString();
    EXPECT_EQ(static_cast<int64_t>(rest->size()), kKillNodes * kKillCores - assigned);
    EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM (SELECT node_id FROM attempts WHERE state IN " + kActive + of_job +
                       " GROUP BY node_id HAVING COUNT(*) <> " + std::to_string(kKillCores) + ") x"),
              0)
        << "a node not exactly full";
  }
  // At least one kill landed before the commit completed.
  EXPECT_GT(killed_before_commit, 0);
}

}  // namespace
}  // namespace idlegrid::store
