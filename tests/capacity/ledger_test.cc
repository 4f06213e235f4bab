// The capacity ledger on plain data: one rule for what a node has left, per
// resource, and the stored form of holds (node_capacity.h).
#include "capacity/ledger.h"

#include <gtest/gtest.h>

#include <vector>

#include "capacity/node_capacity.h"

namespace idlegrid::capacity {
namespace {

constexpr uint64_t kGiB = 1ull << 30;
const std::vector<uint32_t> kGpu0 = {0};
const std::vector<uint32_t> kNone = {};

DeviceClaim Share(uint32_t milli, uint64_t vram = 0) { return {false, milli, vram}; }
DeviceClaim Whole(uint64_t vram = 1) { return {true, kWholeGpuMilli, vram}; }

TEST(ClaimOfTest, StoredFormsTable) {
  struct Case {
    uint32_t milli;
    uint64_t memory;
    bool whole;
    uint32_t held_milli;
  } kCases[] = {
      {1000, 0, true, 1000},         // a whole device
      {0, 0, true, 1000},            // a whole device, stored before milli was
      {1000, 8 * kGiB, true, 1000},  // whole with VRAM named (exclusive, or several GPUs)
      {300, 0, false, 300},          // a compute share
      {300, 4 * kGiB, false, 300},   // a share with a VRAM slice
      {0, 4 * kGiB, false, 0},       // a VRAM slice without compute
  };
  for (const auto& c : kCases) {
    DeviceClaim got = ClaimOf(c.milli, c.memory);
    EXPECT_EQ(got.whole, c.whole) << c.milli << " " << c.memory;
    EXPECT_EQ(got.milli, c.held_milli) << c.milli << " " << c.memory;
  }
}

TEST(NodeLedgerTest, CpuMemoryAndDiskFitUpToCapacity) {
  NodeLedger n(4, 8 * kGiB, 10 * kGiB);
  EXPECT_TRUE(n.Fits({4, 8 * kGiB, 10 * kGiB, Whole()}, kNone));
  EXPECT_FALSE(n.Fits({4.5, kGiB, 0, Whole()}, kNone));
  EXPECT_FALSE(n.Fits({1, 8 * kGiB + 1, 0, Whole()}, kNone));
  EXPECT_FALSE(n.Fits({1, kGiB, 10 * kGiB + 1, Whole()}, kNone));
  n.Take({2.5, 6 * kGiB, 4 * kGiB, Whole()}, kNone);
  EXPECT_DOUBLE_EQ(n.FreeCpu(), 1.5);
  EXPECT_EQ(n.FreeMemory(), 2 * kGiB);
  EXPECT_EQ(n.FreeDisk(), 6 * kGiB);
  Status st = n.Check({2, kGiB, 0, Whole()}, kNone);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("insufficient CPU"), std::string::npos) << st.message();
  st = n.Check({1, 3 * kGiB, 0, Whole()}, kNone);
  EXPECT_NE(st.message().find("insufficient memory"), std::string::npos) << st.message();
}

TEST(NodeLedgerTest, FractionalCoresAddUpWithinTolerance) {
  NodeLedger n(1, kGiB);
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(n.Fits({0.1, 0, 0, Whole()}, kNone)) << i;
    n.Take({0.1, 0, 0, Whole()}, kNone);
  }
  EXPECT_FALSE(n.Fits({0.1, 0, 0, Whole()}, kNone));
}

TEST(NodeLedgerTest, UnknownDiskAndDeviceSizeAreNotChecked) {
  NodeLedger n(1, kGiB);  // disk kUnlimited
  EXPECT_TRUE(n.DiskFits(kUnlimited - 1));
  n.AddDevice(DeviceLedger(kUnlimited));
  EXPECT_TRUE(n.Fits({0, 0, 0, Share(0, 1000 * kGiB)}, kGpu0));
  EXPECT_EQ(n.devices()[0].FreeVram(), kUnlimited);
}

TEST(DeviceLedgerTest, WholeDeviceTakesNoOtherTenant) {
  DeviceLedger d(40 * kGiB);
  EXPECT_EQ(d.FreeMilli(), kWholeGpuMilli);
  d.Take(Whole());
  EXPECT_EQ(d.FreeMilli(), 0u);
  EXPECT_EQ(d.FreeVram(), 0u);
  EXPECT_FALSE(d.Fits(Whole()));
  EXPECT_FALSE(d.Fits(Share(1)));
  EXPECT_FALSE(d.Fits(Share(0, 1)));
}

// The copies disagreed here: the store's guard and the coordinator's view
// counted a whole device that names VRAM (exclusiveGpu, or two GPUs with
// gpuMemory: stored as milli 1000 with gpu_memory) as a slice, so a VRAM
// slice without compute could join it a cycle later; the scheduler's own
// reservation held it whole. Whole it is.
TEST(DeviceLedgerTest, WholeDeviceNamingVramStillTakesNoVramSlice) {
  DeviceLedger d(40 * kGiB);
  d.Take(ClaimOf(1000, 8 * kGiB));
  EXPECT_FALSE(d.Fits(ClaimOf(0, 4 * kGiB)));
  EXPECT_EQ(d.FreeVram(), 0u);
}

TEST(DeviceLedgerTest, ComputeSharesAddUpToOneGpu) {
  DeviceLedger d(40 * kGiB);
  d.Take(Share(400));
  d.Take(Share(400));
  EXPECT_EQ(d.FreeMilli(), 200u);
  EXPECT_FALSE(d.Fits(Share(201)));
  EXPECT_TRUE(d.Fits(Share(200)));
  EXPECT_FALSE(d.Fits(Whole())) << "a device with tenants is never given whole";
}

TEST(DeviceLedgerTest, VramSliceWithoutComputeStillMakesATenant) {
  DeviceLedger d(40 * kGiB);
  d.Take(Share(0, 4 * kGiB));
  EXPECT_EQ(d.FreeMilli(), kWholeGpuMilli - 1);
  EXPECT_EQ(d.FreeVram(), 36 * kGiB);
  EXPECT_FALSE(d.Fits(Whole()));
  EXPECT_TRUE(d.Fits(Share(999)));
}

// The coordinator's old view clamped to 999 in order of the attempts (a
// slice, then a 100 share: 899 left; the other order: 900); the guard summed.
// The sum is the rule: a slice without compute holds none.
TEST(DeviceLedgerTest, SharesSumWhateverOrderSlicesCameIn) {
  DeviceLedger d(40 * kGiB);
  d.Take(Share(0, 4 * kGiB));
  d.Take(Share(100));
  EXPECT_EQ(d.FreeMilli(), 900u);
  EXPECT_TRUE(d.Fits(Share(900)));
  DeviceLedger viewed = DeviceLedger::FromFree(40 * kGiB, 999, 36 * kGiB);  // a slice's view
  viewed.Take(Share(100));
  EXPECT_EQ(viewed.FreeMilli(), 900u);
}

TEST(DeviceLedgerTest, VramSlicesStayWithinCapacity) {
  DeviceLedger d(32 * kGiB);  // 40 GiB less an 8 GiB owner's reserve
  d.Take(Share(0, 12 * kGiB));
  d.Take(Share(0, 12 * kGiB));
  EXPECT_TRUE(d.Fits(Share(0, 8 * kGiB)));
  EXPECT_FALSE(d.Fits(Share(0, 8 * kGiB + 1)));
  EXPECT_FALSE(DeviceLedger(0).Fits(Whole())) << "a device the owner reserved entirely";
  EXPECT_FALSE(DeviceLedger(16 * kGiB).Fits(Whole(20 * kGiB))) << "a whole device needs its VRAM";
}

TEST(DeviceLedgerTest, ReleasingHoldsFreesTheDevice) {
  DeviceLedger d(40 * kGiB);
  d.Take(Share(300, 10 * kGiB));
  d.Take(Share(0, 5 * kGiB));
  d.Give(Share(0, 5 * kGiB));
  EXPECT_EQ(d.FreeMilli(), 700u);
  EXPECT_EQ(d.FreeVram(), 30 * kGiB);
  d.Give(Share(300, 10 * kGiB));
  EXPECT_TRUE(d.Fits(Whole(40 * kGiB)));
  d.Take(Whole());
  d.Give(Whole());
  EXPECT_TRUE(d.Fits(Whole()));
}

TEST(DeviceLedgerTest, FromFreeKeepsWhatAViewSays) {
  DeviceLedger shared = DeviceLedger::FromFree(40 * kGiB, 600, 30 * kGiB);
  EXPECT_EQ(shared.FreeMilli(), 600u);
  EXPECT_EQ(shared.FreeVram(), 30 * kGiB);
  EXPECT_FALSE(shared.Fits(Whole()));
  EXPECT_TRUE(shared.Fits(Share(600, 30 * kGiB)));
  DeviceLedger taken = DeviceLedger::FromFree(40 * kGiB, 0, 0);
  EXPECT_FALSE(taken.Fits(Share(0, 1)));
  DeviceLedger idle = DeviceLedger::FromFree(40 * kGiB, 1000, 40 * kGiB);
  EXPECT_TRUE(idle.Fits(Whole(40 * kGiB)));
}

TEST(NodeLedgerTest, ReleaseUndoesTakeAndADeviceNamedTwiceCountsOnce) {
  NodeLedger n(8, 16 * kGiB);
  n.AddDevice(DeviceLedger(40 * kGiB));
  const std::vector<uint32_t> twice = {0, 0};
  const Claim c{2, 4 * kGiB, 0, Share(400, 8 * kGiB)};
  n.Take(c, twice);
  EXPECT_EQ(n.devices()[0].FreeMilli(), 600u);
  n.Release(c, twice);
  EXPECT_DOUBLE_EQ(n.FreeCpu(), 8);
  EXPECT_EQ(n.FreeMemory(), 16 * kGiB);
  EXPECT_EQ(n.devices()[0].FreeMilli(), kWholeGpuMilli);
}

v1::NodeInfo Info(uint32_t cores, uint64_t memory) {
  v1::NodeInfo info;
  info.set_cpu_cores(cores);
  info.set_memory_bytes(memory);
  return info;
}

v1::Advertisement Ad(double reserved_cpu, uint64_t reserved_vram, std::vector<std::string> uuids) {
  v1::Advertisement ad;
  ad.mutable_policy()->set_reserved_cpu(reserved_cpu);
  ad.mutable_policy()->set_reserved_gpu_memory_bytes(reserved_vram);
  for (const auto& u : uuids) {
    auto* d = ad.mutable_inventory()->mutable_gpus()->add_devices();
    d->set_uuid(u);
    d->set_memory_total_bytes(40 * kGiB);
  }
  return ad;
}

TEST(NodeCapacityTest, OfferedLessTheOwnersReserve) {
  NodeCapacity n = NodeCapacity::Offered(Info(16, 64 * kGiB), Ad(4, 8 * kGiB, {"GPU-0"}));
  EXPECT_DOUBLE_EQ(n.ledger().cpu_capacity(), 12);
  EXPECT_EQ(n.ledger().devices()[0].FreeVram(), 32 * kGiB);
  EXPECT_TRUE(n.Check({12, 64 * kGiB, 0, 0, {}}).ok());
  EXPECT_FALSE(n.Check({12.5, 0, 0, 0, {}}).ok());
  EXPECT_FALSE(n.Check({1, 0, 33 * kGiB, 0, {"GPU-0"}}).ok());
}

TEST(NodeCapacityTest, StoredHoldsByUuidWithReasons) {
  NodeCapacity n = NodeCapacity::Offered(Info(16, 64 * kGiB), Ad(0, 0, {"GPU-0", "GPU-1"}));
  n.Hold({1, kGiB, 0, 1000, {"GPU-0"}});
  Status st = n.TryHold({1, kGiB, 4 * kGiB, 0, {"GPU-0"}});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("GPU GPU-0"), std::string::npos) << st.message();
  EXPECT_TRUE(n.TryHold({1, kGiB, 4 * kGiB, 0, {"GPU-1"}}).ok());
  EXPECT_FALSE(n.TryHold({1, kGiB, 0, 1000, {"GPU-1"}}).ok()) << "GPU-1 has a slice";
  n.Release({1, kGiB, 0, 1000, {"GPU-0"}});
  EXPECT_TRUE(n.TryHold({1, kGiB, 0, 1000, {"GPU-0"}}).ok());
}

TEST(NodeCapacityTest, AnUnlistedDeviceGetsTenancyAndComputeRulesOnly) {
  NodeCapacity n = NodeCapacity::Offered(Info(16, 64 * kGiB), Ad(0, 0, {}));
  EXPECT_TRUE(n.Check({1, 0, 500 * kGiB, 0, {"GPU-X"}}).ok());
  n.Hold({1, 0, 0, 600, {"GPU-X"}});
  EXPECT_FALSE(n.Check({1, 0, 0, 500, {"GPU-X"}}).ok());
  EXPECT_TRUE(n.Check({1, 0, 500 * kGiB, 400, {"GPU-X"}}).ok());
}

TEST(NodeCapacityTest, UnreportedMemoryTakesNothingThatNeedsMemory) {
  NodeCapacity n = NodeCapacity::Offered(Info(16, 0), Ad(0, 0, {}));
  EXPECT_FALSE(n.Check({1, 1, 0, 0, {}}).ok());
  EXPECT_TRUE(n.Check({1, 0, 0, 0, {}}).ok());
}

}  // namespace
}  // namespace idlegrid::capacity
