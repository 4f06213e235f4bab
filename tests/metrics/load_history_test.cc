#include "metrics/load_history.h"

#include <gtest/gtest.h>

namespace idlegrid::metrics {
namespace {

LoadSample At(int64_t ms, uint64_t queued = 0) {
  LoadSample s;
  s.at_ms = ms;
  s.queued_tasks = queued;
  return s;
}

TEST(LoadHistory, KeepsTheNewestCapacitySamplesOldestFirst) {
  LoadHistory h(3);
  EXPECT_TRUE(h.Samples().empty());
  for (int64_t t = 1; t <= 5; ++t) h.Add(At(t * 1000, t));
  ASSERT_EQ(h.size(), 3u);
  auto s = h.Samples();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0], At(3000, 3));
  EXPECT_EQ(s[1], At(4000, 4));
  EXPECT_EQ(s[2], At(5000, 5));
}

TEST(LoadHistory, PartlyFilledRingStartsAtTheFirstSample) {
  LoadHistory h(4);
  h.Add(At(10));
  h.Add(At(20));
  auto s = h.Samples();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].at_ms, 10);
  EXPECT_EQ(s[1].at_ms, 20);
}

TEST(LoadHistory, ZeroCapacityHoldsOne) {
  LoadHistory h(0);
  h.Add(At(1));
  h.Add(At(2));
  ASSERT_EQ(h.Samples().size(), 1u);
  EXPECT_EQ(h.Samples()[0].at_ms, 2);
}

TEST(LoadHistory, DueWhenEmptyAfterThePeriodOrWhenTheClockSteppedBack) {
  LoadHistory h(8);
  EXPECT_TRUE(h.Due(0, 5000));
  h.Add(At(10'000));
  EXPECT_FALSE(h.Due(10'000, 5000));
  EXPECT_FALSE(h.Due(14'999, 5000));
  EXPECT_TRUE(h.Due(15'000, 5000));
  EXPECT_TRUE(h.Due(9'000, 5000));
  // The newest decides, also after the ring wrapped.
  LoadHistory small(2);
  for (int64_t t : {1000, 2000, 3000}) small.Add(At(t));
  EXPECT_FALSE(small.Due(3500, 1000));
  EXPECT_TRUE(small.Due(4000, 1000));
}

v1::GpuDevice Gpu(uint64_t total, uint64_t reserved, uint64_t allocatable) {
  v1::GpuDevice g;
  g.set_memory_total_bytes(total);
  g.set_reserved_memory_bytes(reserved);
  g.set_allocatable_memory_bytes(allocatable);
  return g;
}

TEST(LoadSampleOf, CountsQueuedAndRunningTasksAndHeldGpusOfOnlineNodes) {
  v1::ListJobsResponse jobs;
  auto* a = jobs.add_jobs();
  (*a->mutable_task_counts())["queued"] = 3;
  (*a->mutable_task_counts())["running"] = 2;
  (*a->mutable_task_counts())["succeeded"] = 7;
  auto* b = jobs.add_jobs();
  (*b->mutable_task_counts())["assigned"] = 1;
  (*b->mutable_task_counts())["queued"] = 1;
  v1::ListNodesResponse nodes;
  auto* online = nodes.add_nodes();
  online->set_state("online");
  *online->add_gpus() = Gpu(24, 4, 20);  // all usable memory free: not allocated
  *online->add_gpus() = Gpu(24, 4, 12);  // some held
  *online->add_gpus() = Gpu(24, 0, 0);   // all held
  auto* late = nodes.add_nodes();
  late->set_state("late");
  *late->add_gpus() = Gpu(8, 0, 8);
  auto* offline = nodes.add_nodes();
  offline->set_state("offline");
  *offline->add_gpus() = Gpu(80, 0, 0);

  const LoadSample s = LoadSampleOf(42, jobs, nodes);
  EXPECT_EQ(s.at_ms, 42);
  EXPECT_EQ(s.queued_tasks, 4u);
  EXPECT_EQ(s.running_tasks, 3u);
  EXPECT_EQ(s.gpus_total, 4u);
  EXPECT_EQ(s.gpus_allocated, 2u);
}

TEST(LoadHistoryJson, NamesEveryFieldInCamelCase) {
  LoadSample s{1700000000000, 5, 2, 1, 4, {{"cpu-core", 10000}, {"NVIDIA H100", 2500000}}};
  LoadSample bare{1700000005000, 0, 0, 0, 0, {}};
  EXPECT_EQ(LoadHistoryJson({s, bare}, 5000),
            "{\"periodMs\":5000,\"samples\":[{\"atMs\":1700000000000,\"queuedTasks\":5,\"runningTasks\":2,"
            "\"gpusAllocated\":1,\"gpusTotal\":4,\"lowestAskMicros\":{\"NVIDIA H100\":2500000,\"cpu-core\":10000}},"
            "{\"atMs\":1700000005000,\"queuedTasks\":0,\"runningTasks\":0,\"gpusAllocated\":0,\"gpusTotal\":0,"
            "\"lowestAskMicros\":{}}]}\n");
  EXPECT_EQ(LoadHistoryJson({}, 5000), "{\"periodMs\":5000,\"samples\":[]}\n");
}

}  // namespace
}  // namespace idlegrid::metrics
