// Readiness benchmarks (coordinator/readiness_benchmarks.h) on their own: a
// real SQLite store, artifact store and image catalog, a manual clock, and a
// node table of plain values behind the hooks. Without an image nothing is
// created and the reason says why; with one, each candidate not measured for
// its stack gets one pinned job, never two; a failed verdict is recorded and
// retried only after bench_retry_ms; a node gone offline is benchmarked again;
// a GPU is benchmarked only after its node's CPU passed, and only without an
// owner's hold.
#include "coordinator/readiness_benchmarks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "common/fs.h"
#include "common/test_support.h"
#include "coordinator/node_views.h"
#include "jobs/task_state.h"
#include "coordinator/service_fixture.h"

namespace idlegrid::coordinator {
namespace {

constexpr int kRetryMs = 60'000;

class ReadinessBenchmarksTest : public ServiceTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(ServiceTest::SetUp());
    catalog_ = std::make_unique<ImageCatalog>(store_.get(), artifacts_.get(), nullptr, &clock_, ImageCatalog::Options{},
                                              [] {});
    ReadinessBenchmarks::Hooks hooks;
    hooks.candidates = [this] {
      std::vector<ReadinessBenchmarks::Candidate> out;
      for (const auto& [id, n] : nodes_) out.push_back({id, n.ad, n.measurement});
      return out;
    };
    hooks.advertisement = [this](const std::string& id) -> std::optional<v1::Advertisement> {
      auto it = nodes_.find(id);
      if (it == nodes_.end()) return std::nullopt;
      return it->second.ad;
    };
    hooks.update_measurement = [this](const std::string& id, const auto& edit) {
      auto it = nodes_.find(id);
      if (it == nodes_.end()) return false;
      edit(it->second.measurement, it->second.ad);
      return true;
    };
    hooks.changed = [this] { ++changes_; };
    bench_ =
        std::make_unique<ReadinessBenchmarks>(store_.get(), artifacts_.get(), catalog_.get(), &clock_,
                                              ReadinessBenchmarks::Options{1000, 1.0, 10, kRetryMs}, std::move(hooks));
  }

  // Any file makes an image: the service packages the program, never runs it.
  void PrepareCpu() {
    const std::string program = dir_.path() + "/bench";
    ASSERT_TRUE(WriteFileAtomic(program, "#!/bin/false\n").ok());
    ASSERT_TRUE(bench_->PrepareCpu(program, dir_.path() + "/tmp").ok());
  }
  void AddNode(const std::string& id, std::vector<std::string> gpus = {}) {
    Node& n = nodes_[id];
    n.ad.set_node_id(id);
    n.ad.set_sequence(1);
    n.ad.set_agent_version("agent-1");
    for (const std::string& uuid : gpus) {
      v1::GpuDevice* d = n.ad.mutable_inventory()->mutable_gpus()->add_devices();
      d->set_uuid(uuid);
      d->set_name("NVIDIA GeForce RTX 4090");
    }
  }
  // The readiness jobs in the store, as "node" or "node/gpu-uuid".
  std::vector<std::string> Jobs() {
    std::vector<std::string> out;
    auto jobs = store_->ListJobs();
    EXPECT_TRUE(jobs.ok());
    if (!jobs.ok()) return out;
    for (const v1::Job& j : *jobs) {
      if (!j.spec().readiness()) continue;
      out.push_back(j.spec().pinned_node() + (j.spec().pinned_device().empty() ? "" : "/" + j.spec().pinned_device()));
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  v1::Job OnlyJobOf(const std::string& node) {
    auto jobs = store_->ListJobs();
    for (const v1::Job& j : *jobs) {
      if (j.spec().pinned_node() == node && j.spec().pinned_device().empty()) {
        auto whole = store_->GetJob(j.id());
        EXPECT_TRUE(whole.ok());
        return *whole;
      }
    }
    ADD_FAILURE() << "no benchmark job for " << node;
    return {};
  }
  // The job, failed on its node, as the store would read it after the report.
  v1::Job Failed(const std::string& node) {
    v1::Job job = OnlyJobOf(node);
    EXPECT_TRUE(store_->CancelJob(job.id(), clock_.NowMs()).ok());
    return *store_->GetJob(job.id());
  }
  void MarkPassed(const std::string& node) {
    v1::Measurement& m = nodes_[node].measurement;
    m.set_passed(true);
    m.set_measured_at_ms(clock_.NowMs());
    m.set_agent_version(StackOf(nodes_[node].ad));
  }

  struct Node {
    v1::Advertisement ad;
    v1::Measurement measurement;
  };
  std::unique_ptr<ImageCatalog> catalog_;
  std::unique_ptr<ReadinessBenchmarks> bench_;
  std::map<std::string, Node> nodes_;
  int changes_ = 0;
};

TEST_F(ReadinessBenchmarksTest, WithoutAnImageNothingIsCreatedAndTheErrorsSayWhy) {
  AddNode("n1");
  bench_->Ensure();
  EXPECT_TRUE(Jobs().empty());
  EXPECT_EQ(bench_->GpuBenchError(), "no GPU readiness benchmark on the coordinator");

  EXPECT_FALSE(bench_->PrepareCpu(dir_.path() + "/no-such-program", dir_.path() + "/tmp").ok());
  EXPECT_EQ(bench_->CpuBenchError().rfind("no readiness benchmark on the coordinator: ", 0), 0u)
      << bench_->CpuBenchError();
  bench_->Ensure();
  EXPECT_TRUE(Jobs().empty());

  PrepareCpu();
  EXPECT_EQ(bench_->CpuBenchError(), "");
  bench_->Ensure();
  EXPECT_EQ(Jobs(), (std::vector<std::string>{"n1"}));
}

TEST_F(ReadinessBenchmarksTest, EachUnmeasuredNodeGetsOnePinnedJobNeverTwo) {
  PrepareCpu();
  AddNode("n1");
  AddNode("n2");
  bench_->Ensure();
  bench_->Ensure();
  EXPECT_EQ(Jobs(), (std::vector<std::string>{"n1", "n2"}));
  const v1::Job job = OnlyJobOf("n1");
  EXPECT_TRUE(job.spec().readiness());
  EXPECT_EQ(job.spec().runtime(), "runc");
  EXPECT_TRUE(job.spec().idempotent());
  EXPECT_EQ(job.spec().args_size(), 3) << "rounds, seed, output directory";
}

TEST_F(ReadinessBenchmarksTest, AFailedVerdictIsRecordedAndRetriedOnlyAfterTheRetryPeriod) {
  PrepareCpu();
  AddNode("n1");
  bench_->Ensure();
  const v1::Job failed = Failed("n1");
  ASSERT_TRUE(jobs::IsSettled(failed));
  bench_->Judge(failed);
  const v1::Measurement& m = nodes_["n1"].measurement;
  EXPECT_FALSE(m.passed());
  EXPECT_EQ(m.reason().rfind("benchmark job cancelled", 0), 0u) << m.reason();
  EXPECT_EQ(m.agent_version(), StackOf(nodes_["n1"].ad)) << "measured for the node's stack";
  EXPECT_EQ(m.measured_at_ms(), clock_.NowMs());
  EXPECT_EQ(changes_, 1);

  bench_->Ensure();
  EXPECT_EQ(Jobs().size(), 1u) << "not again before the retry period";
  clock_.AdvanceMs(kRetryMs);
  bench_->Ensure();
  EXPECT_EQ(Jobs().size(), 2u) << "again after it";
}

TEST_F(ReadinessBenchmarksTest, OutputThatIsNotAResultIsRejectedWithTheReason) {
  PrepareCpu();
  AddNode("n1");
  bench_->Ensure();
  v1::Job job = OnlyJobOf("n1");
  v1::Task* task = job.mutable_tasks(0);
  // As the store reads it once its one attempt succeeded.
  job.set_state(v1::SUCCEEDED);
  task->set_state(v1::SUCCEEDED);
  v1::Attempt* a = task->add_attempts();
  a->set_state(v1::SUCCEEDED);
  auto writer = artifacts_->NewWriter("", 0);
  ASSERT_TRUE(writer.ok());
  const std::string junk = "score=fast\n";
  ASSERT_TRUE((*writer)->Append(junk.data(), junk.size()).ok());
  auto digest = (*writer)->Commit();
  ASSERT_TRUE(digest.ok());
  v1::OutputFile* out = a->add_outputs();
  out->set_path("result.txt");
  out->set_digest(*digest);
  out->set_size(junk.size());
  bench_->Judge(job);
  EXPECT_FALSE(nodes_["n1"].measurement.passed());
  EXPECT_EQ(nodes_["n1"].measurement.reason().rfind("benchmark output rejected: ", 0), 0u)
      << nodes_["n1"].measurement.reason();
}

TEST_F(ReadinessBenchmarksTest, ANodeGoneOfflineIsBenchmarkedAgainWhenItReturns) {
  PrepareCpu();
  AddNode("n1");
  bench_->Ensure();
  bench_->Ensure();
  EXPECT_EQ(Jobs().size(), 1u);
  bench_->ForgetNode("n1");  // its job failed as node_lost
  bench_->Ensure();
  EXPECT_EQ(Jobs().size(), 2u);
}

TEST_F(ReadinessBenchmarksTest, GpusWaitForTheirNodesCpuAndTheirOwner) {
  PrepareCpu();
  const std::string program = dir_.path() + "/gpu-bench";
  ASSERT_TRUE(WriteFileAtomic(program, "#!/bin/false\n").ok());
  ASSERT_TRUE(bench_->PrepareGpu(program, dir_.path() + "/tmp").ok());
  EXPECT_EQ(bench_->GpuBenchError(), "");
  AddNode("n1", {"GPU-a", "GPU-b"});
  nodes_["n1"].ad.mutable_inventory()->mutable_gpus()->mutable_devices(1)->set_owner_hold("lendGpus: [0]");
  bench_->Ensure();
  EXPECT_EQ(Jobs(), (std::vector<std::string>{"n1"})) << "the CPU first";

  MarkPassed("n1");
  nodes_["n1"].measurement.set_agent_version(StackOf(nodes_["n1"].ad));
  bench_->ForgetNode("n1");  // as if its CPU job had been judged
  bench_->Ensure();
  bench_->Ensure();
  EXPECT_EQ(Jobs(), (std::vector<std::string>{"n1", "n1/GPU-a"})) << "one job for the lent GPU, none for the held one";
  v1::Job gpu_job;
  auto jobs = store_->ListJobs();
  ASSERT_TRUE(jobs.ok());
  for (const v1::Job& j : *jobs) {
    if (j.spec().pinned_device() == "GPU-a") gpu_job = j;
  }
  EXPECT_EQ(gpu_job.spec().resources().gpus(), 1u);
}

}  // namespace
}  // namespace idlegrid::coordinator
