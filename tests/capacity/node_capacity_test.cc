// The node's capacity as both sides see it (capacity/node_capacity.h): the
// agent admits an assignment and advertises what is left by the same ledger
// the coordinator and the store use, built from the same facts.
#include "capacity/node_capacity.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

namespace idlegrid::capacity {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

v1::NodeInfo Info(uint32_t cores, uint64_t memory) {
  v1::NodeInfo info;
  info.set_cpu_cores(cores);
  info.set_memory_bytes(memory);
  return info;
}

v1::GpuDevice Gpu(const std::string& uuid, uint64_t total) {
  v1::GpuDevice d;
  d.set_uuid(uuid);
  d.set_memory_total_bytes(total);
  return d;
}

v1::LocalPolicy Policy(double reserved_cpu, uint64_t reserved_vram) {
  v1::LocalPolicy p;
  p.set_reserved_cpu(reserved_cpu);
  p.set_reserved_gpu_memory_bytes(reserved_vram);
  return p;
}

v1::JobSpec Spec(uint32_t gpus, uint64_t vram, uint32_t milli = 0, bool exclusive = false) {
  v1::JobSpec s;
  s.mutable_resources()->set_cpu(1);
  s.mutable_resources()->set_memory_bytes(kGiB);
  s.mutable_resources()->set_gpus(gpus);
  s.mutable_resources()->set_gpu_memory_bytes(vram);
  s.mutable_resources()->set_gpu_milli(milli);
  s.set_exclusive_gpu(exclusive);
  return s;
}

TEST(UsableVramTest, TotalLessTheReserveFlooredAtZero) {
  struct Case {
    uint64_t total, reserve, want;
  };
  const std::vector<Case> cases = {
      {24 * kGiB, 0, 24 * kGiB},
      {24 * kGiB, 4 * kGiB, 20 * kGiB},
      {8 * kGiB, 12 * kGiB, 0},
      {8 * kGiB, 8 * kGiB, 0},
      {0, 0, 0},
  };
  for (const Case& c : cases) EXPECT_EQ(UsableVram(c.total, c.reserve), c.want) << c.total << " - " << c.reserve;
}

// The agent derives from the spec the claim the scheduler placed: whole,
// compute share, or VRAM slice (sched/snapshot.cc MakeDemand).
TEST(HoldOfTest, TheClaimTheSchedulerPlacesForEachKindOfGpuJob) {
  struct Case {
    const char* name;
    v1::JobSpec spec;
    uint32_t want_milli;
    bool want_whole;
  };
  const std::vector<Case> cases = {
      {"no GPU", Spec(0, 0), 0, true},
      {"one whole GPU", Spec(1, 0), 1000, true},
      {"two whole GPUs with memory", Spec(2, 8 * kGiB), 1000, true},
      {"a VRAM slice", Spec(1, 8 * kGiB), 0, false},
      {"a compute share", Spec(1, 4 * kGiB, 250), 250, false},
      {"a compute share without gpus", Spec(0, 0, 500), 500, false},
      {"exclusive: one GPU with memory is whole", Spec(1, 8 * kGiB, 0, true), 1000, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const AttemptHold h = HoldOf(c.spec, {"GPU-0"});
    EXPECT_EQ(h.gpu_milli, c.want_milli);
    EXPECT_DOUBLE_EQ(h.cpu, 1);
    EXPECT_EQ(h.memory, kGiB);
    EXPECT_EQ(h.devices, std::vector<std::string>{"GPU-0"});
    if (c.spec.resources().gpus() > 0 || c.spec.resources().gpu_milli() > 0) {
      EXPECT_EQ(ClaimOf(h.gpu_milli, h.gpu_memory).whole, c.want_whole);
    }
  }
}

// The advert/ copy of the rule this replaces let a second job onto a GPU held
// whole: it only compared VRAM.
TEST(NodeCapacityAgentSideTest, AGpuHeldWholeTakesNoOtherJobOnTheNode) {
  NodeCapacity n = NodeCapacity::Offered(Info(8, 32 * kGiB), Policy(0, 0), {Gpu("GPU-a", 24 * kGiB)});
  n.Hold(HoldOf(Spec(1, 4 * kGiB, 0, true), {"GPU-a"}));  // whole, 4 GiB asked
  Status slice = n.Check(HoldOf(Spec(1, 4 * kGiB), {"GPU-a"}));
  EXPECT_EQ(slice.code(), Code::kFailedPrecondition);
  EXPECT_NE(slice.message().find("GPU-a"), std::string::npos) << slice.message();
  EXPECT_FALSE(n.Check(HoldOf(Spec(1, 0), {"GPU-a"})).ok());
  EXPECT_TRUE(n.Check(HoldOf(Spec(0, 0), {})).ok()) << "CPU work still fits";
}

TEST(NodeCapacityAgentSideTest, CoresMemoryAndVramRefusedNamingWhatIsShort) {
  NodeCapacity n = NodeCapacity::Offered(Info(4, 8 * kGiB), Policy(1, 2 * kGiB), {Gpu("GPU-a", 24 * kGiB)});
  // Twelve quarter cores fill the three offered exactly (sums of fractions must not round against us).
  for (int i = 0; i < 11; ++i) n.Hold({0.25, 0, 0, 0, {}});
  EXPECT_TRUE(n.Check({0.25, 0, 0, 0, {}}).ok());
  Status cpu = n.Check({0.5, 0, 0, 0, {}});
  EXPECT_NE(cpu.message().find("CPU"), std::string::npos) << cpu.message();
  Status mem = n.Check({0, 9 * kGiB, 0, 0, {}});
  EXPECT_NE(mem.message().find("memory"), std::string::npos) << mem.message();
  EXPECT_TRUE(n.Check({0, 0, 22 * kGiB, 0, {"GPU-a"}}).ok()) << "24 GiB less the 2 GiB reserve";
  EXPECT_FALSE(n.Check({0, 0, 22 * kGiB + 1, 0, {"GPU-a"}}).ok());
}

// What the advertisement shows per device after holds: the former
// ComputeAllocatable table, held by VRAM slices.
TEST(NodeCapacityAgentSideTest, DescribeShowsTheReserveAndWhatTheHoldsLeave) {
  struct Case {
    const char* name;
    uint64_t total, reserve;
    std::vector<uint64_t> slices;
    uint64_t want_reserved, want_allocatable;
  };
  const std::vector<Case> cases = {
      {"idle device", 24 * kGiB, 0, {}, 0, 24 * kGiB},
      {"24 GiB with 18 GiB held", 24 * kGiB, 0, {18 * kGiB}, 0, 6 * kGiB},
      {"owner reserve", 24 * kGiB, 4 * kGiB, {}, 4 * kGiB, 20 * kGiB},
      {"reserve and holds", 24 * kGiB, 2 * kGiB, {5 * kGiB, 3 * kGiB, 1 * kGiB}, 2 * kGiB, 13 * kGiB},
      {"holds past the total floor at 0", 24 * kGiB, 8 * kGiB, {18 * kGiB}, 8 * kGiB, 0},
      {"reserve larger than the device: capped", 8 * kGiB, 12 * kGiB, {}, 8 * kGiB, 0},
      {"exactly full", 24 * kGiB, 4 * kGiB, {20 * kGiB}, 4 * kGiB, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    v1::GpuDevice d = Gpu("GPU-a", c.total);
    NodeCapacity n = NodeCapacity::Offered(Info(8, 32 * kGiB), Policy(0, c.reserve), {d, Gpu("GPU-b", c.total)});
    for (uint64_t s : c.slices) n.Hold({0, 0, s, 0, {"GPU-a"}});
    n.Hold({0, 0, c.total, 0, {"GPU-b"}});  // holds on another device do not count here
    n.Describe(0, c.reserve, &d);
    EXPECT_EQ(d.reserved_memory_bytes(), c.want_reserved);
    EXPECT_EQ(d.allocatable_memory_bytes(), c.want_allocatable);
    EXPECT_EQ(d.memory_total_bytes(), c.total);
  }
  v1::GpuDevice whole = Gpu("GPU-a", 24 * kGiB);
  NodeCapacity n = NodeCapacity::Offered(Info(8, 32 * kGiB), Policy(0, 0), {whole});
  n.Hold({1, 0, 1, 1000, {"GPU-a"}});
  n.Describe(0, 0, &whole);
  EXPECT_EQ(whole.allocatable_memory_bytes(), 0u) << "a device held whole has nothing left to offer";
}

// The two constructors are one rule: the agent's (its own description, policy
// and devices) and the coordinator's (the same in an advertisement) agree.
TEST(NodeCapacityAgentSideTest, TheAgentsAndTheCoordinatorsLedgersAgree) {
  const v1::NodeInfo info = Info(16, 64 * kGiB);
  const v1::LocalPolicy policy = Policy(2.5, 3 * kGiB);
  const std::vector<v1::GpuDevice> devices = {Gpu("GPU-a", 24 * kGiB), Gpu("GPU-b", 80 * kGiB)};
  v1::Advertisement ad;
  *ad.mutable_policy() = policy;
  for (const auto& d : devices) *ad.mutable_inventory()->mutable_gpus()->add_devices() = d;
  NodeCapacity agent = NodeCapacity::Offered(info, policy, devices);
  NodeCapacity coordinator = NodeCapacity::Offered(info, ad);
  const std::vector<AttemptHold> holds = {
      {1.5, 4 * kGiB, 8 * kGiB, 0, {"GPU-b"}}, {2, 2 * kGiB, 0, 1000, {"GPU-a"}}, {0.25, kGiB, 0, 300, {"GPU-b"}}};
  for (const auto& h : holds) {
    agent.Hold(h);
    coordinator.Hold(h);
  }
  EXPECT_DOUBLE_EQ(agent.ledger().FreeCpu(), coordinator.ledger().FreeCpu());
  EXPECT_EQ(agent.ledger().FreeMemory(), coordinator.ledger().FreeMemory());
  ASSERT_EQ(agent.ledger().devices().size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(agent.ledger().devices()[i].FreeVram(), coordinator.ledger().devices()[i].FreeVram());
    EXPECT_EQ(agent.ledger().devices()[i].FreeMilli(), coordinator.ledger().devices()[i].FreeMilli());
  }
  const std::vector<AttemptHold> probes = {{12, 0, 0, 0, {}},
                                           {12.5, 0, 0, 0, {}},
                                           {0, 57 * kGiB, 0, 0, {}},
                                           {0, 0, 1, 1000, {"GPU-a"}},
                                           {0, 0, 69 * kGiB, 0, {"GPU-b"}},
                                           {0, 0, 0, 700, {"GPU-b"}},
                                           {0, 0, 0, 701, {"GPU-b"}}};
  for (const auto& p : probes) {
    EXPECT_EQ(agent.Check(p).ok(), coordinator.Check(p).ok()) << p.cpu << " " << p.memory << " " << p.gpu_milli;
  }
}

}  // namespace
}  // namespace idlegrid::capacity
