// Every feasibility stage of the pipeline scheduler as a table: one node, one
// task, one change, the stage that must reject (or none) and the reason.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>

#include "sched/data_policy.h"
#include "sched/feasibility.h"
#include "sched/pipeline.h"
#include "sched_fixtures.h"

namespace idlegrid::sched {
namespace {

using testing::kGiB;
using testing::PNode;
using testing::PTask;

struct StageCase {
  const char* name;
  std::function<void(NodeView&, TaskView&)> change;
  std::string stage;        // "" = feasible
  std::string reason;       // part of the reason
  std::string detail = "";  // part of the node's detail
};

TEST(PipelineStagesTest, Table) {
  const StageCase kCases[] = {
      {"fits", [](NodeView&, TaskView&) {}, "", ""},
      {"offline", [](NodeView& n, TaskView&) { n.online = false; }, "node", "offline"},
      {"unschedulable", [](NodeView& n, TaskView&) { n.unschedulable_reason = "readiness benchmark pending"; },
       "node", "benchmark pending"},
      {"readiness task ignores unschedulable",
       [](NodeView& n, TaskView& t) {
         n.unschedulable_reason = "readiness benchmark pending";
         t.readiness = true;
       },
       "", ""},
      {"pinned elsewhere", [](NodeView&, TaskView& t) { t.pinned_node = "n2"; }, "pinned", "pinned to another"},
      {"pinned here", [](NodeView&, TaskView& t) { t.pinned_node = "n1"; }, "", ""},
      {"excluded", [](NodeView&, TaskView& t) { t.excluded_nodes = {"n1"}; }, "excluded", "rejected or lost"},
      {"runtime missing", [](NodeView& n, TaskView& t) { n.runtimes = {"runc"}; t.runtime = "runsc"; }, "runtime",
       "runtime runsc not available"},
      {"job class not approved", [](NodeView&, TaskView& t) { t.job_class = "io-uring"; }, "runtime",
       "job class io-uring not approved by the owner"},
      {"job class approved",
       [](NodeView& n, TaskView& t) {
         n.job_classes = {"io-uring"};
         t.job_class = "io-uring";
       },
       "", ""},
      {"no memory enforcement", [](NodeView& n, TaskView&) { n.enforcement.set_memory(""); }, "enforcement",
       "memory limit"},
      {"runsc needs cgroup memory",
       [](NodeView& n, TaskView& t) {
         n.enforcement.set_memory("rlimit");
         t.runtime = "runsc";
       },
       "enforcement", "runsc needs cgroup"},
      {"runsc GPU job where runsc has no nvproxy",
       [](NodeView& n, TaskView& t) {
         n.enforcement.set_runsc_gpu_unavailable("runsc release 20221219 has no --nvproxy");
         t.runtime = "runsc";
       },
       "enforcement", "runsc cannot pass GPUs in", "runsc release 20221219 has no --nvproxy"},
      {"runsc job on simulated GPUs needs no nvproxy",
       [](NodeView& n, TaskView& t) {
         n.enforcement.set_runsc_gpu_unavailable("runsc release 20221219 has no --nvproxy");
         n.gpus[0].set_simulated(true);
         t.runtime = "runsc";
       },
       "", ""},
      {"strictCpu without cpu cap",
       [](NodeView& n, TaskView& t) {
         n.enforcement.set_cpu("");
         t.resources.set_strict_cpu(true);
       },
       "enforcement", "strictCpu"},
      {"region outside", [](NodeView&, TaskView& t) { t.regions = {"us-east"}; }, "region",
       "outside allowed regions (us-east)", "node is in eu-west"},
      {"region inside", [](NodeView&, TaskView& t) { t.regions = {"us-east", "eu-west"}; }, "", ""},
      {"trust tier too low", [](NodeView&, TaskView& t) { t.min_trust_tier = 2; }, "trust", "trust tier below 2",
       "node has tier 1"},
      {"data class tier too low",
       [](NodeView&, TaskView& t) { t.data_class = BuiltinDataClasses().at(kDataRegulated); }, "data-class",
       "data class regulated needs trust tier 2", "node has 1"},
      {"data class tier met by an assigned node",
       [](NodeView& n, TaskView& t) {
         n.trust_tier = 2;
         t.data_class = BuiltinDataClasses().at(kDataRegulated);
       },
       "", ""},
      {"data class region",
       [](NodeView&, TaskView& t) {
         t.data_class = BuiltinDataClasses().at(kDataPrivate);
         t.data_class.regions = {"eu-central", "us-east"};
       },
       "data-class", "outside regions allowed for private (eu-central|us-east)", "node is in eu-west"},
      {"data class reliability",
       [](NodeView& n, TaskView& t) {
         n.reliability = 0.8;
         t.data_class = BuiltinDataClasses().at(kDataPrivate);
         t.data_class.min_reliability = 0.95;
       },
       "data-class", "data class private needs reliability 0.95", "node has 0.80"},
      {"data class forbids a GPU share",
       [](NodeView&, TaskView& t) {
         t.data_class = BuiltinDataClasses().at(kDataPrivate);
         t.gpu_milli = 500;
       },
       "data-class", "data class private forbids sharing a GPU"},
      {"data class asks for measured GPUs",
       [](NodeView& n, TaskView& t) {
         n.gpus[0].set_measured(false);
         t.data_class = BuiltinDataClasses().at(kDataPrivate);
       },
       "gpu-trust", "GPUs not measured (trust tier 1)"},
      {"public data class on an unverified node",
       [](NodeView& n, TaskView& t) {
         n.trust_tier = 0;
         n.reliability = 0;
         t.data_class = BuiltinDataClasses().at(kDataPublic);
       },
       "", ""},
      {"no data class (a readiness benchmark) on an unverified node",
       [](NodeView& n, TaskView& t) {
         n.trust_tier = 0;
         t.data_class = {};
       },
       "", ""},
      {"owner run limit", [](NodeView& n, TaskView& t) {
         n.max_run_seconds = 3600;
         t.run_timeout_seconds = 7200;
       },
       "owner-policy", "over the owner's limit"},
      {"owner run limit, unbounded task", [](NodeView& n, TaskView&) { n.max_run_seconds = 3600; }, "owner-policy",
       "over the owner's limit", "unbounded"},
      {"owner run limit respected", [](NodeView& n, TaskView& t) {
         n.max_run_seconds = 3600;
         t.run_timeout_seconds = 600;
       },
       "", ""},
      {"registry image, owner allows no registry",
       [](NodeView&, TaskView& t) { t.registry = "127.0.0.1:5000"; },
       "owner-policy", "registry 127.0.0.1:5000 not in the owner's allowedRegistries"},
      {"registry image, owner allows another registry",
       [](NodeView& n, TaskView& t) {
         n.allowed_registries = {"ghcr.io", "127.0.0.1:5001"};
         t.registry = "127.0.0.1:5000";
       },
       "owner-policy", "registry 127.0.0.1:5000 not in the owner's allowedRegistries"},
      {"registry image, owner allows its registry",
       [](NodeView& n, TaskView& t) {
         n.allowed_registries = {"127.0.0.1:5000"};
         t.registry = "127.0.0.1:5000";
       },
       "", ""},
      {"pushed image on a node that allows no registry", [](NodeView&, TaskView&) {}, "", ""},
      {"share on a node that forbids sharing",
       [](NodeView& n, TaskView& t) {
         n.allows_sharing = false;
         t.gpu_milli = 500;
       },
       "owner-policy", "does not allow GPU sharing"},
      {"a tenant's GPU job where the owner refuses them",
       [](NodeView& n, TaskView& t) {
         n.tenant_gpu_jobs_refused = true;
         t.untrusted_tenant = true;
       },
       "owner-policy", "the owner accepts no tenant GPU jobs (policy.yaml tenantGpuJobs: false)"},
      {"a tenant's GPU share where the owner refuses them",
       [](NodeView& n, TaskView& t) {
         n.tenant_gpu_jobs_refused = true;
         t.untrusted_tenant = true;
         t.gpu_milli = 500;
       },
       "owner-policy", "the owner accepts no tenant GPU jobs"},
      {"a tenant's CPU job where the owner refuses tenant GPU jobs",
       [](NodeView& n, TaskView& t) {
         n.tenant_gpu_jobs_refused = true;
         t.untrusted_tenant = true;
         t.resources.set_gpus(0);
       },
       "", ""},
      {"the operator's GPU job where the owner refuses tenant GPU jobs",
       [](NodeView& n, TaskView&) { n.tenant_gpu_jobs_refused = true; }, "", ""},
      {"share with a data class that forbids co-tenancy",
       [](NodeView&, TaskView& t) {
         t.gpu_milli = 500;
         t.co_tenancy_allowed = false;
       },
       "owner-policy", "forbids sharing a GPU"},
      {"owner trusts a key that did not sign the image",
       [](NodeView& n, TaskView& t) {
         n.trusted_image_keys = {"0a0a0a0a0a0a0a0a"};
         t.image_signers = {"1b1b1b1b1b1b1b1b"};
       },
       "image-signature", "not signed by a key the node's owner trusts",
       "owner trusts 0a0a0a0a0a0a0a0a; image signed by 1b1b1b1b1b1b1b1b"},
      {"owner trusts a key, image unsigned", [](NodeView& n, TaskView&) { n.trusted_image_keys = {"0a0a0a0a0a0a0a0a"}; },
       "image-signature", "not signed", "image signed by none"},
      {"owner trusts one of the image's signers",
       [](NodeView& n, TaskView& t) {
         n.trusted_image_keys = {"0a0a0a0a0a0a0a0a", "2c2c2c2c2c2c2c2c"};
         t.image_signers = {"1b1b1b1b1b1b1b1b", "2c2c2c2c2c2c2c2c"};
       },
       "", ""},
      {"no trusted keys: any image", [](NodeView&, TaskView& t) { t.image_signers = {}; }, "", ""},
      {"too few GPUs", [](NodeView&, TaskView& t) { t.resources.set_gpus(2); }, "gpu-count", "insufficient GPUs (need 2)",
       "node has 1"},
      {"GPU awaiting its readiness benchmark",
       [](NodeView& n, TaskView&) { n.gpus[0].set_unavailable_reason("readiness benchmark pending"); },
       "gpu-ready", "GPU not ready (NVIDIA A100: readiness benchmark pending)"},
      {"a readiness benchmark may use a GPU awaiting it",
       [](NodeView& n, TaskView& t) {
         n.gpus[0].set_unavailable_reason("readiness benchmark pending");
         t.readiness = true;
       },
       "", ""},
      {"not even a readiness benchmark on a GPU its owner holds back",
       [](NodeView& n, TaskView& t) {
         n.gpus[0].set_owner_hold("not lent (policy.yaml gpus)");
         n.gpus[0].set_unavailable_reason("held back by its owner: not lent (policy.yaml gpus)");
         t.readiness = true;
       },
       "gpu-ready", "GPU not ready (NVIDIA A100: held back by its owner: not lent (policy.yaml gpus))"},
      {"an unready GPU does not hold back a CPU task",
       [](NodeView& n, TaskView& t) {
         n.gpus[0].set_unavailable_reason("failed its readiness benchmark: wrong checksum");
         t.resources.set_gpus(0);
       },
       "", ""},
      {"GPU model not allowed", [](NodeView&, TaskView& t) { t.gpu_models = {"NVIDIA H100"}; }, "gpu-model",
       "no allowed GPU model (NVIDIA H100)"},
      {"GPU model allowed", [](NodeView&, TaskView& t) { t.gpu_models = {"NVIDIA H100", "NVIDIA A100"}; }, "", ""},
      {"compute capability too low", [](NodeView&, TaskView& t) { t.min_compute_capability = "9.0"; },
       "compute-capability", "compute capability below 9.0", "best device has 8.0"},
      {"compute capability enough", [](NodeView&, TaskView& t) { t.min_compute_capability = "7.5"; }, "", ""},
      {"CUDA driver too old", [](NodeView&, TaskView& t) { t.min_cuda_version = "12.6"; }, "cuda-driver",
       "CUDA driver below 12.6", "best device has 12.4"},
      {"simulated GPU is not measured",
       [](NodeView& n, TaskView& t) {
         n.gpus[0].set_simulated(true);
         t.min_trust_tier = 1;
       },
       "gpu-trust", "not measured"},
      {"unmeasured GPU", [](NodeView& n, TaskView& t) {
         n.gpus[0].set_measured(false);
         t.min_trust_tier = 1;
       },
       "gpu-trust", "not measured"},
      {"simulated GPU fine for tier 0", [](NodeView& n, TaskView&) { n.gpus[0].set_simulated(true); }, "", ""},
      {"pinned device absent", [](NodeView&, TaskView& t) { t.pinned_device = "GPU-nope"; }, "pinned-device",
       "no such GPU"},
      {"pinned device present", [](NodeView&, TaskView& t) { t.pinned_device = "n1-gpu0"; }, "", ""},
      {"ask over bid",
       [](NodeView& n, TaskView& t) {
         n.asks["NVIDIA A100"] = 2.0;
         t.max_price_per_gpu_hour = 1.5;
       },
       "max-price", "over max price (bid 1.50/GPU-h)", "lowest ask here 2.00"},
      {"ask within bid",
       [](NodeView& n, TaskView& t) {
         n.asks["NVIDIA A100"] = 1.0;
         t.max_price_per_gpu_hour = 1.5;
       },
       "", ""},
      {"cpu ask over bid",
       [](NodeView& n, TaskView& t) {
         n.asks["cpu-core"] = 0.2;
         t.max_price_per_cpu_core_hour = 0.1;
       },
       "max-price", "core-h"},
      {"cpu short", [](NodeView& n, TaskView&) { n.cpu_free = 1; }, "cpu", "insufficient CPU (need 2 cores)",
       "1 free"},
      {"memory short", [](NodeView& n, TaskView&) { n.memory_free = 2 * kGiB; }, "memory",
       "insufficient memory (need 4 GiB)", "2 GiB free"},
      {"disk short", [](NodeView& n, TaskView& t) {
         n.disk_free = kGiB;
         t.resources.set_disk_bytes(10 * kGiB);
       },
       "disk", "insufficient disk (need 10 GiB)"},
      {"disk short for the job's total, not its largest file",
       [](NodeView& n, TaskView& t) {
         n.disk_free = kGiB;
         t.resources.set_disk_bytes(kGiB / 2);
         t.resources.set_output_bytes(10 * kGiB);
       },
       "disk", "insufficient disk (need 10 GiB)"},
      {"disk unknown is not checked", [](NodeView&, TaskView& t) { t.resources.set_disk_bytes(10 * kGiB); }, "", ""},
      {"VRAM short",
       [](NodeView& n, TaskView& t) {
         n.gpus[0].set_allocatable_memory_bytes(8 * kGiB);
         t.resources.set_gpu_memory_bytes(20 * kGiB);
       },
       "gpu-free", "insufficient VRAM (need 20 GiB)", "best device has 8 GiB free"},
      {"device held by a share", [](NodeView& n, TaskView&) { n.gpu_free_milli = {500}; }, "gpu-free",
       "no free GPU (need 1)", "1 of 1 in use"},
      {"device held whole (legacy, no milli)", [](NodeView& n, TaskView&) { n.gpus[0].set_allocatable_memory_bytes(0); },
       "gpu-free", "no free GPU"},
      {"share too big for what is left",
       [](NodeView& n, TaskView& t) {
         n.gpu_free_milli = {500};
         t.gpu_milli = 600;
       },
       "gpu-free", "insufficient GPU share (need 600 milli)", "best device has 500 free"},
      {"share fits next to another", [](NodeView& n, TaskView& t) {
         n.gpu_free_milli = {500};
         t.gpu_milli = 500;
       },
       "", ""},
      {"VRAM slice too big",
       [](NodeView& n, TaskView& t) {
         n.gpus[0].set_allocatable_memory_bytes(10 * kGiB);
         t.vram_slice = true;
         t.resources.set_gpu_memory_bytes(12 * kGiB);
       },
       "gpu-free", "insufficient VRAM (need 12 GiB)"},
      {"cost over cap",
       [](NodeView& n, TaskView& t) {
         n.asks["NVIDIA A100"] = 2.0;
         t.max_cost = 10;
         t.run_timeout_seconds = 10 * 3600;
       },
       "cost-cap", "estimated cost over maxCost 10.00", "20.00 (2.00/h x 10.0 h)"},
      {"cost cap without run bound",
       [](NodeView& n, TaskView& t) {
         n.asks["NVIDIA A100"] = 2.0;
         t.max_cost = 10;
       },
       "cost-cap", "needs a run timeout"},
      {"cost within cap",
       [](NodeView& n, TaskView& t) {
         n.asks["NVIDIA A100"] = 2.0;
         t.max_cost = 10;
         t.run_timeout_seconds = 4 * 3600;
       },
       "", ""},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    NodeView node = PNode("n1");
    TaskView task = PTask();
    c.change(node, task);
    Explanation e = Explain({node}, task);
    if (c.stage.empty()) {
      EXPECT_EQ(e.feasible_nodes, 1u) << e.summary;
      EXPECT_TRUE(e.filtered.empty());
      continue;
    }
    ASSERT_EQ(e.filtered.size(), 1u) << e.summary;
    EXPECT_EQ(e.feasible_nodes, 0u);
    EXPECT_EQ(e.filtered[0].stage, c.stage);
    EXPECT_NE(e.filtered[0].reason.find(c.reason), std::string::npos) << e.filtered[0].reason;
    EXPECT_NE(e.filtered[0].example_detail.find(c.detail), std::string::npos) << e.filtered[0].example_detail;
    EXPECT_NE(e.summary.find("waiting"), std::string::npos);
    // Schedule agrees with Explain, and says the same thing.
    Plan plan = NewPipelineScheduler()->Schedule({node}, {task});
    EXPECT_TRUE(plan.placements.empty());
    const WaitReason& why = plan.waiting[TaskKey(task.job_id, task.index)];
    EXPECT_EQ(why.summary, e.summary);
    // The plan's facts are Explain's too: the dispatcher acts on them without explaining again.
    EXPECT_EQ(why.feasible_nodes, e.feasible_nodes);
    EXPECT_EQ(why.filtered_by, std::set<std::string>{e.filtered[0].stage});
  }
}

// A verdict is cached per task shape: a tenant's task and the operator's of
// the same shape must not share one where the owner refuses tenant GPU jobs.
TEST(PipelineStagesTest, TenantAndOperatorTasksOfOneShapeAreJudgedApart) {
  NodeView node = PNode("n1", 2);
  node.tenant_gpu_jobs_refused = true;
  TaskView mine = PTask("operator-job");
  TaskView theirs = PTask("tenant-job");
  theirs.account = "alice";
  theirs.untrusted_tenant = true;
  for (const auto& order : {std::vector<TaskView>{mine, theirs}, std::vector<TaskView>{theirs, mine}}) {
    Plan plan = NewPipelineScheduler()->Schedule({node}, order);
    ASSERT_EQ(plan.placements.size(), 1u);
    EXPECT_EQ(plan.placements[0].job_id, "operator-job");
    const std::string why = plan.waiting[TaskKey("tenant-job", 0)].summary;
    EXPECT_NE(why.find("the owner accepts no tenant GPU jobs"), std::string::npos) << why;
  }
}

TEST(PipelineStagesTest, EveryStageIsCovered) {
  // The table above names each stage; a new stage must get cases.
  std::set<std::string> covered = {"node",
                                   "pinned",
                                   "runtime",
                                   "enforcement",
                                   "region",
                                   "trust",
                                   "data-class",
                                   "owner-policy",
                                   "image-signature",
                                   "gpu-count",
                                   "gpu-ready",
                                   "gpu-model",
                                   "compute-capability",
                                   "cuda-driver",
                                   "gpu-trust",
                                   "pinned-device",
                                   "max-price",
                                   "cpu",
                                   "memory",
                                   "disk",
                                   "gpu-free"};
  for (const auto& stage : FeasibilityStages()) EXPECT_TRUE(covered.count(stage.name)) << stage.name;
}

TEST(PipelineExplainTest, SummaryCountsEachFilter) {
  std::vector<NodeView> nodes;
  for (int i = 0; i < 9; ++i) {
    NodeView n = PNode("small" + std::to_string(i), 1, "NVIDIA T4", 16 * kGiB);
    nodes.push_back(n);
  }
  for (int i = 0; i < 2; ++i) {
    NodeView n = PNode("off" + std::to_string(i));
    n.online = false;
    nodes.push_back(n);
  }
  NodeView dear = PNode("dear", 1, "NVIDIA A100", 80 * kGiB);
  dear.asks["NVIDIA A100"] = 5;
  nodes.push_back(dear);
  TaskView task = PTask();
  task.resources.set_gpu_memory_bytes(20 * kGiB);
  task.max_price_per_gpu_hour = 2;
  Explanation e = Explain(nodes, task);
  EXPECT_EQ(e.summary,
            "12 nodes: 9 insufficient VRAM (need 20 GiB), 2 offline, 1 over max price (bid 2.00/GPU-h); waiting");
  EXPECT_EQ(e.total_nodes, 12u);
  ASSERT_EQ(e.filtered.size(), 3u);
  EXPECT_EQ(e.filtered[0].example_node, "small0");
  EXPECT_EQ(e.filtered[0].example_detail, "best device has 16 GiB free");
}

TEST(PipelineExplainTest, TopCandidatesCarryTheScoreBreakdown) {
  NodeView a = PNode("a");
  a.reliability = 0.9;
  a.cached_images = {"sha256:img"};
  NodeView b = PNode("b");
  b.reliability = 0.5;
  TaskView task = PTask();
  task.image = "sha256:img";
  Explanation e = Explain({b, a}, task, PolicyConfig{}, 5);
  ASSERT_EQ(e.top.size(), 2u);
  EXPECT_EQ(e.top[0].node_id, "a");
  EXPECT_EQ(e.top[0].device_uuids, std::vector<std::string>{"a-gpu0"});
  EXPECT_NE(e.summary.find("2 feasible (best a)"), std::string::npos) << e.summary;
  double sum = 0;
  std::map<std::string, double> values;
  for (const auto& t : e.top[0].terms) {
    sum += t.contribution;
    values[t.scorer] = t.value;
    EXPECT_DOUBLE_EQ(t.contribution, t.value * t.weight);
  }
  EXPECT_DOUBLE_EQ(sum, e.top[0].total);
  EXPECT_DOUBLE_EQ(values["reliability"], 0.9);
  EXPECT_DOUBLE_EQ(values["cache"], 1.0);
  EXPECT_GT(e.top[0].total, e.top[1].total);
  std::string text = FormatExplanation(e);
  EXPECT_NE(text.find("reliability 0.900"), std::string::npos) << text;
}

TEST(PipelineExplainTest, UnknownPolicyWaits) {
  TaskView task = PTask();
  task.policy = "nope";
  EXPECT_NE(Explain({PNode("n1")}, task).summary.find("unknown scheduling policy"), std::string::npos);
  Plan plan = NewPipelineScheduler()->Schedule({PNode("n1")}, {task});
  EXPECT_TRUE(plan.placements.empty());
  EXPECT_NE(plan.waiting["j/0"].summary.find("unknown scheduling policy \"nope\""), std::string::npos);
}

}  // namespace
}  // namespace idlegrid::sched
