// The stores' batch admission (capacity/batch_admission.h) on plain data:
// both backends execute this rule and decide nothing themselves.
#include "capacity/batch_admission.h"

#include <gtest/gtest.h>

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

v1::Advertisement Ad(std::vector<std::string> gpus = {}) {
  v1::Advertisement ad;
  for (const auto& u : gpus) {
    auto* d = ad.mutable_inventory()->mutable_gpus()->add_devices();
    d->set_uuid(u);
    d->set_memory_total_bytes(24 * kGiB);
  }
  return ad;
}

BatchCandidate Cand(const char* node, const char* job, uint32_t index, double cpu, bool queued = true) {
  return {node, job, index, queued, {cpu, kGiB, 0, 0, {}}};
}

TEST(BatchAdmissionTest, AdmitsInOrderWhileItFitsNextToWhatIsHeld) {
  BatchAdmission b;
  ASSERT_TRUE(b.AddNode("n1", Info(4, 16 * kGiB), Ad()));
  b.Hold("n1", {1, kGiB, 0, 0, {}});
  const std::vector<BatchCandidate> batch = {Cand("n1", "j", 0, 2), Cand("n1", "j", 1, 2), Cand("n1", "j", 2, 1)};
  EXPECT_EQ(b.Admit(batch), (std::vector<size_t>{0, 2})) << "3 free cores: 2, then not 2, then 1";
  EXPECT_TRUE(b.Admit({Cand("n1", "k", 0, 0.5)}).empty()) << "what was admitted is held for later batches";
}

TEST(BatchAdmissionTest, ATaskNotQueuedOrAlreadyTakenInTheBatchIsNeverAdmitted) {
  BatchAdmission b;
  ASSERT_TRUE(b.AddNode("n1", Info(8, 16 * kGiB), Ad()));
  ASSERT_TRUE(b.AddNode("n2", Info(1, 16 * kGiB), Ad()));
  const std::vector<BatchCandidate> batch = {
      Cand("n1", "j", 0, 1, /*queued=*/false),
      Cand("n2", "j", 1, 2),  // does not fit n2: the task stays open for its next placement
      Cand("n1", "j", 1, 2),  // the same task on another node: takes it
      Cand("n1", "j", 1, 2),  // and a third time: already taken
  };
  EXPECT_EQ(b.Admit(batch), (std::vector<size_t>{2}));
}

TEST(BatchAdmissionTest, ANodeWithoutStoredCapacityTakesAnything) {
  BatchAdmission b;
  EXPECT_FALSE(b.AddNode("new", Info(0, 0), Ad()));
  b.Hold("new", {100, 0, 0, 0, {}});
  EXPECT_EQ(b.Admit({Cand("new", "j", 0, 64), Cand("unknown", "j", 1, 64)}), (std::vector<size_t>{0, 1}));
}

TEST(BatchAdmissionTest, DevicesByTheLedgersTenancyRules) {
  BatchAdmission b;
  ASSERT_TRUE(b.AddNode("n1", Info(8, 32 * kGiB), Ad({"GPU-a"})));
  std::vector<BatchCandidate> batch = {Cand("n1", "j", 0, 1), Cand("n1", "j", 1, 1), Cand("n1", "j", 2, 1)};
  batch[0].want.devices = {"GPU-a"};
  batch[0].want.gpu_milli = 1000;  // whole
  batch[1].want.devices = {"GPU-a"};
  batch[1].want.gpu_memory = kGiB;  // a VRAM slice: refused next to a whole tenant
  EXPECT_EQ(b.Admit(batch), (std::vector<size_t>{0, 2}));
}

}  // namespace
}  // namespace idlegrid::capacity
