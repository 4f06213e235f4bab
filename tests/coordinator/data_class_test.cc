// Data classes through the coordinator: a regulated job waits, with the
// data class named in `status --explain`, on a fleet of measured but
// unassigned nodes, and runs once the data policy assigns a node tier 2; the
// placement is logged as metadata only. Driven through the public API on a
// manual clock; the pure rules of sched/data_class.h first.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "sched/data_class.h"
#include "coordinator/pipeline_support.h"

namespace idlegrid::coordinator::testing {
namespace {

v1::Advertisement AdWithGpu(bool simulated) {
  v1::Advertisement ad = AdOf(1);
  v1::GpuDevice* d = ad.mutable_inventory()->mutable_gpus()->add_devices();
  d->set_uuid("GPU-1");
  d->set_simulated(simulated);
  return ad;
}

TEST(DataClassRulesTest, ANodesTierNeedsMeasurementAndRealGpus) {
  sched::DataPolicy policy;
  policy.trusted_nodes["n-a"] = 2;
  v1::Measurement passed;
  passed.set_passed(true);
  EXPECT_EQ(sched::TrustTierOf(policy, "n-b", passed, AdOf(1)), 1);
  EXPECT_EQ(sched::TrustTierOf(policy, "n-a", passed, AdOf(1)), 2);
  EXPECT_EQ(sched::TrustTierOf(policy, "n-a", passed, AdWithGpu(false)), 2);
  EXPECT_EQ(sched::TrustTierOf(policy, "n-a", passed, AdWithGpu(true)), 0);
  EXPECT_EQ(sched::TrustTierOf(policy, "n-a", v1::Measurement(), AdOf(1)), 0);
}

TEST(DataClassRulesTest, ReadinessBenchmarksHaveNoClass) {
  sched::DataPolicy policy;
  policy.default_class = "regulated";
  v1::JobSpec spec = CpuJob("bench");
  spec.set_readiness(true);
  EXPECT_EQ(sched::DataClassOf(policy, spec).name, "");
  spec.set_readiness(false);
  EXPECT_EQ(sched::DataClassOf(policy, spec).name, "regulated");
}

TEST(DataClassRulesTest, AnExclusiveClassTurnsAVramSliceIntoAWholeGpu) {
  sched::TaskView task;
  task.vram_slice = true;
  sched::ApplyDataClass(sched::RuleFor(sched::DataPolicy{}, "public"), &task);
  EXPECT_TRUE(task.vram_slice);
  EXPECT_TRUE(task.co_tenancy_allowed);
  sched::ApplyDataClass(sched::RuleFor(sched::DataPolicy{}, "private"), &task);
  EXPECT_FALSE(task.vram_slice);
  EXPECT_FALSE(task.co_tenancy_allowed);
  EXPECT_EQ(task.data_class.name, "private");
}

// Captures what the coordinator logs while it lives.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  std::string text() const { return out_.str(); }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::ostringstream out_;
};

TEST(DataClassTest, RegulatedJobWaitsForAnOperatorAssignedNode) {
  LogCapture log;
  PipelineHarness h;
  ASSERT_TRUE(h.Init().ok());
  auto a = h.AddNode("node-a");
  auto b = h.AddNode("node-b");
  ASSERT_TRUE(a.ok() && b.ok());
  auto nodes = h.coordinator().nodes().List();
  ASSERT_TRUE(nodes.ok());
  for (const auto& n : nodes->nodes()) EXPECT_EQ(n.trust_tier(), 1u) << n.id() << ": measured, not assigned";

  v1::JobSpec spec = CpuJob("regulated");
  spec.set_data_class("regulated");
  (*spec.mutable_env())["PATIENT_ID"] = "do-not-log-me";
  auto job = h.Submit(spec);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ASSERT_TRUE(h.Pass(1000, {*a, *b}).ok());
  auto task = h.Task(*job);
  ASSERT_TRUE(task.ok());
  EXPECT_EQ(task->state(), v1::QUEUED);
  EXPECT_EQ(task->attempts_size(), 0);
  EXPECT_EQ(task->message(), "2 nodes: 2 data class regulated needs trust tier 2; waiting");

  auto why = h.coordinator().dispatcher().Explain(*job);
  ASSERT_TRUE(why.ok());
  ASSERT_EQ(why->tasks_size(), 1);
  const v1::TaskExplanation& t = why->tasks(0);
  EXPECT_EQ(t.data_policy(), "data class regulated: trust tier >= 2, any region, exclusive GPU");
  ASSERT_EQ(t.filtered_size(), 1);
  EXPECT_EQ(t.filtered(0).stage(), "data-class");
  EXPECT_EQ(t.filtered(0).example_detail(), "node has 1");
  EXPECT_NE(t.text().find("  data class regulated: trust tier >= 2"), std::string::npos) << t.text();

  // The operator vouches for node-a; the policy is reloaded.
  sched::DataPolicy policy;
  policy.trusted_nodes[*a] = 2;
  h.coordinator().nodes().SetDataPolicy(policy);
  ASSERT_TRUE(h.Pass(1000, {*a, *b}).ok());
  task = h.Task(*job);
  ASSERT_TRUE(task.ok());
  ASSERT_EQ(task->attempts_size(), 1) << task->DebugString();
  EXPECT_EQ(task->attempts(0).node_id(), *a);
  nodes = h.coordinator().nodes().List();
  ASSERT_TRUE(nodes.ok());
  for (const auto& n : nodes->nodes()) EXPECT_EQ(n.trust_tier(), n.id() == *a ? 2u : 1u) << n.id();

  // One line for the decision, with ids and the class; nothing of the job's payload.
  const std::string text = log.text();
  EXPECT_NE(text.find("data policy: job " + *job + " task 0 (data class regulated) placed on node " + *a +
                      " (trust tier 2) as attempt " + task->attempts(0).id()),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("do-not-log-me"), std::string::npos) << text;
}

TEST(DataClassTest, PublicPlacementsAreNotLogged) {
  LogCapture log;
  PipelineHarness h;
  ASSERT_TRUE(h.Init().ok());
  auto a = h.AddNode("node-a");
  ASSERT_TRUE(a.ok());
  auto job = h.Submit(CpuJob("public"));
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(h.Pass(1000, {*a}).ok());
  auto task = h.Task(*job);
  ASSERT_TRUE(task.ok());
  EXPECT_EQ(task->attempts_size(), 1);
  EXPECT_EQ(log.text().find("data policy:"), std::string::npos) << log.text();
}

TEST(DataClassTest, TheDefaultClassIsStampedAtSubmission) {
  Options options;
  options.data_policy.default_class = "private";
  PipelineHarness h(options);
  ASSERT_TRUE(h.Init().ok());
  auto job = h.Submit(CpuJob("unnamed"));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  auto stored = h.coordinator().jobs().Get(*job);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->spec().data_class(), "private");
  // A later default does not change what the job was submitted as.
  h.coordinator().nodes().SetDataPolicy(sched::DataPolicy{});
  auto why = h.coordinator().dispatcher().Explain(*job);
  ASSERT_TRUE(why.ok());
  ASSERT_EQ(why->tasks_size(), 1);
  EXPECT_EQ(why->tasks(0).data_policy(), "data class private: trust tier >= 1, any region, exclusive GPU");
}

TEST(DataClassTest, AGpuShareUnderAnExclusiveClassIsRefusedAtSubmission) {
  PipelineHarness h;
  ASSERT_TRUE(h.Init().ok());
  v1::JobSpec spec = CpuJob("shared");
  spec.mutable_resources()->set_gpus(1);
  spec.mutable_resources()->set_gpu_milli(500);
  spec.set_data_class("private");
  auto job = h.Submit(spec);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), Code::kInvalidArgument);
  EXPECT_NE(job.status().message().find("spec.resources.gpu_milli: data class private forbids sharing a GPU"),
            std::string::npos)
      << job.status().message();
  spec.set_data_class("public");
  EXPECT_TRUE(h.Submit(spec).ok());
}

TEST(DataClassTest, AnUnknownClassIsRefusedAtSubmission) {
  PipelineHarness h;
  ASSERT_TRUE(h.Init().ok());
  v1::JobSpec spec = CpuJob("secret");
  spec.set_data_class("secret");
  auto job = h.Submit(spec);
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("spec.data_class: must be public, private or regulated"), std::string::npos)
      << job.status().message();
}

}  // namespace
}  // namespace idlegrid::coordinator::testing
