// An attempt's provenance record (agent/provenance.h): what BuildProvenance
// takes from the assignment, the container spec, the runtime and the node,
// and that a whole attempt reports it with STARTED and EXITED, naming its
// environment variables but never their values.
#include "agent/provenance.h"

#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include "agent/attempt_fixture_support.h"
#include "common/fs.h"
#include "manifest/manifest.h"

namespace idlegrid::agent {
namespace {

using testing::AttemptRunnerTest;

constexpr char kSecretValue[] = "s3cr3t-9f41c7d2-value";

v1::GpuDevice Gpu(const std::string& uuid, bool simulated, const std::string& driver = "",
                  const std::string& cuda = "") {
  v1::GpuDevice d;
  d.set_uuid(uuid);
  d.set_simulated(simulated);
  d.set_driver_version(driver);
  d.set_cuda_driver_version(cuda);
  return d;
}

runtime::SandboxFacts Sandbox() {
  runtime::SandboxFacts s;
  s.driver = "podman";
  s.runtime = "runsc";
  s.runtime_version = "runsc version release-20240212.0";
  s.seccomp_digest = "sha256:" + std::string(64, 'e');
  s.job_user = "1000:1000 (host 100999)";
  return s;
}

NodeFacts Node() {
  NodeFacts n;
  n.node_id = "n-0123456789abcdef";
  n.key_fingerprint = "sha256:0123456789abcdef" + std::string(48, '7');
  n.kernel_release = "6.1.0-18-amd64";
  n.agent_version = "idlegrid-agent/test";
  return n;
}

// Every field, in its serialized and JSON forms: where a value could leak.
std::string AllOf(const v1::Provenance& p) {
  std::string json;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(p, &json).ok());
  return p.SerializeAsString() + "\n" + json;
}

struct GpuCase {
  const char* name;
  std::vector<v1::GpuDevice> host;
  std::vector<std::string> assigned;
  GpuStack want;
};

TEST(GpuStackOf, NamesTheDriverOfTheDevicesTheAttemptRanWith) {
  const v1::GpuDevice real = Gpu("GPU-real", false, "550.54.14", "12.4");
  const v1::GpuDevice other = Gpu("GPU-other", false, "535.161", "12.2");
  const v1::GpuDevice fake = Gpu("GPU-sim", true, "", "");
  const std::vector<GpuCase> cases = {
      {"no GPU on the host", {}, {}, {"", ""}},
      {"a CPU attempt on a GPU host", {real}, {}, {"550.54.14", "12.4"}},
      {"the device it holds", {real, other}, {"GPU-other"}, {"535.161", "12.2"}},
      {"only simulated devices", {fake}, {}, {"simulated", "simulated"}},
      {"a simulated device it holds beside a real one", {real, fake}, {"GPU-sim"}, {"simulated", "simulated"}},
      {"a CPU attempt where one device is real", {fake, real}, {}, {"550.54.14", "12.4"}},
      {"a device the host no longer has", {real}, {"GPU-gone"}, {"", ""}},
  };
  for (const GpuCase& c : cases) {
    const GpuStack got = GpuStackOf(c.host, c.assigned);
    EXPECT_EQ(got.driver_version, c.want.driver_version) << c.name;
    EXPECT_EQ(got.cuda_version, c.want.cuda_version) << c.name;
  }
}

TEST(BuildProvenance, CombinesTheAssignmentTheSandboxAndTheNode) {
  v1::Assignment a;
  a.set_attempt_id("a1");
  a.mutable_spec()->set_image("trainer@sha256:" + std::string(64, 'b'));
  (*a.mutable_spec()->mutable_env())["TOKEN"] = kSecretValue;
  a.add_device_uuids("GPU-real");
  runtime::RunSpec spec;
  spec.image_id = std::string(64, 'c');
  spec.runtime = "runsc";
  spec.env = {{"TOKEN", kSecretValue}, {"IDLEGRID_JOB_ID", "j1"}, {"ALPHA", "1"}, {"TOKEN", "again"}};
  NodeFacts node = Node();
  node.gpus = {Gpu("GPU-real", false, "550.54.14", "12.4")};

  const v1::Provenance p = BuildProvenance(a, spec, Sandbox(), node);
  EXPECT_EQ(p.image_config_digest(), "sha256:" + std::string(64, 'c')) << "the image the runtime runs";
  EXPECT_EQ(p.image_manifest_digest(), "sha256:" + std::string(64, 'b')) << "the digest the reference pins";
  EXPECT_EQ(p.job_spec_digest(), manifest::SpecDigest(a.spec()));
  EXPECT_EQ(p.driver(), "podman");
  EXPECT_EQ(p.runtime(), "runsc");
  EXPECT_EQ(p.runtime_version(), "runsc version release-20240212.0");
  EXPECT_EQ(p.seccomp_digest(), "sha256:" + std::string(64, 'e'));
  EXPECT_EQ(p.job_user(), "1000:1000 (host 100999)");
  EXPECT_EQ(p.kernel_release(), "6.1.0-18-amd64");
  EXPECT_EQ(p.gpu_driver_version(), "550.54.14");
  EXPECT_EQ(p.cuda_version(), "12.4");
  EXPECT_EQ(p.node_id(), "n-0123456789abcdef");
  EXPECT_EQ(p.node_key_fingerprint(), node.key_fingerprint);
  EXPECT_EQ(p.agent_version(), "idlegrid-agent/test");
  EXPECT_EQ(std::vector<std::string>(p.env_names().begin(), p.env_names().end()),
            (std::vector<std::string>{"ALPHA", "IDLEGRID_JOB_ID", "TOKEN"}))
      << "sorted, each name once";
  EXPECT_EQ(AllOf(p).find(kSecretValue), std::string::npos) << "an environment value was recorded";
  EXPECT_EQ(AllOf(p).find("again"), std::string::npos);
}

TEST(BuildProvenance, ABareDigestImageAndADefaultRuntimeFactsStillNameWhatRan) {
  v1::Assignment a;
  a.mutable_spec()->set_image("sha256:" + std::string(64, 'b'));
  runtime::RunSpec spec;
  spec.image_id = std::string(64, 'c');
  spec.runtime = "runc";
  runtime::SandboxFacts only_runtime;  // what ContainerRuntime::Facts gives by default
  only_runtime.runtime = "runc";
  const v1::Provenance p = BuildProvenance(a, spec, only_runtime, Node());
  EXPECT_EQ(p.image_manifest_digest(), "sha256:" + std::string(64, 'b'));
  EXPECT_EQ(p.runtime(), "runc");
  EXPECT_TRUE(p.driver().empty());
  EXPECT_TRUE(p.runtime_version().empty());
  EXPECT_TRUE(p.gpu_driver_version().empty()) << "a host without GPUs names no driver";
  EXPECT_TRUE(p.cuda_version().empty());
  EXPECT_EQ(p.env_names_size(), 0);
}

TEST_F(AttemptRunnerTest, AStartedAttemptCarriesItsProvenanceAndItsExitTheSame) {
  runtime_.sandbox = Sandbox();
  host_.facts = Node();
  host_.facts.gpus = {Gpu("GPU-sim", true)};
  v1::Assignment a = Assignment();
  (*a.mutable_spec()->mutable_env())["API_TOKEN"] = kSecretValue;
  Run(a);

  ASSERT_EQ(EventNames(), "ACCEPTED STARTED EXITED");
  ASSERT_EQ(runtime_.facts_asked.size(), 1u) << "the runtime is asked once, about the container it runs";
  ASSERT_EQ(runtime_.runs.size(), 1u);
  EXPECT_EQ(runtime_.facts_asked[0].container_name, runtime_.runs[0].container_name);
  const v1::ReportAttemptRequest started = reporter_.Reports()[1];
  ASSERT_TRUE(started.has_provenance());
  const v1::Provenance& p = started.provenance();
  // From the fake runtime's Facts.
  EXPECT_EQ(p.driver(), "podman");
  EXPECT_EQ(p.runtime(), "runsc");
  EXPECT_EQ(p.runtime_version(), "runsc version release-20240212.0");
  EXPECT_EQ(p.seccomp_digest(), "sha256:" + std::string(64, 'e'));
  EXPECT_EQ(p.job_user(), "1000:1000 (host 100999)");
  // From the node.
  EXPECT_EQ(p.node_id(), "n-0123456789abcdef");
  EXPECT_EQ(p.node_key_fingerprint(), host_.facts.key_fingerprint);
  EXPECT_EQ(p.kernel_release(), "6.1.0-18-amd64");
  EXPECT_EQ(p.agent_version(), "idlegrid-agent/test");
  EXPECT_EQ(p.gpu_driver_version(), "simulated");
  EXPECT_EQ(p.cuda_version(), "simulated");
  // From the assignment and the container it ran.
  EXPECT_EQ(p.image_config_digest(), "sha256:" + std::string(64, 'a'));
  EXPECT_EQ(p.image_manifest_digest(), a.spec().image());
  EXPECT_EQ(p.job_spec_digest(), manifest::SpecDigest(a.spec()));
  EXPECT_EQ(std::vector<std::string>(p.env_names().begin(), p.env_names().end()),
            (std::vector<std::string>{"API_TOKEN", "HOME", "IDLEGRID_JOB_ID", "IDLEGRID_TASK_COUNT",
                                      "IDLEGRID_TASK_INDEX", "MODE", "XDG_CACHE_HOME"}));
  EXPECT_EQ(AllOf(p).find(kSecretValue), std::string::npos) << "an environment value was reported";

  // The exit carries the same record, for a coordinator that missed STARTED.
  const v1::ReportAttemptRequest done = Last();
  ASSERT_TRUE(done.has_provenance());
  EXPECT_EQ(done.provenance().SerializeAsString(), p.SerializeAsString());
  ExpectCleanedUp();
}

// How the job's GPUs reached its sandbox (runtime::ChooseRuntime): the fake
// runtime's host can cap gVisor's memory and its runsc has nvproxy.
TEST_F(AttemptRunnerTest, TheProvenanceSaysHowTheGpusWereIsolated) {
  ASSERT_TRUE(MakeDirs(dir_ + "/cdi").ok());
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/cdi/nvidia.yaml", "cdiVersion: 0.5.0\n").ok());
  host_.gpus = {Gpu("GPU-real", false), Gpu("GPU-sim", true)};
  struct Case {
    const char* name;
    bool tenant;
    std::string device;
    std::string runtime;
    bool nvproxy;
    std::string gpu_isolation;
  };
  const Case cases[] = {
      {"a tenant's GPU job", true, "GPU-real", "runsc", true, "runsc-nvproxy"},
      {"the operator's GPU job", false, "GPU-real", "runc", false, "runc"},
      {"a tenant's job on a simulated GPU", true, "GPU-sim", "runsc", false, ""},
      {"a tenant's CPU job", true, "", "runsc", false, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const size_t earlier = reporter_.Reports().size();
    runtime_.runs.clear();
    v1::Assignment a = Assignment();
    a.set_untrusted_tenant(c.tenant);
    if (!c.device.empty()) {
      a.add_device_uuids(c.device);
      a.mutable_spec()->mutable_resources()->set_gpus(1);
    }
    Run(a);
    const std::vector<v1::ReportAttemptRequest> reports = reporter_.Reports();
    ASSERT_EQ(reports.size(), earlier + 3);
    ASSERT_EQ(reports[earlier + 1].event(), v1::STARTED);
    ASSERT_EQ(reports[earlier + 2].event(), v1::EXITED);
    ASSERT_EQ(runtime_.runs.size(), 1u);
    EXPECT_EQ(runtime_.runs[0].runtime, c.runtime);
    EXPECT_EQ(runtime_.runs[0].nvproxy, c.nvproxy);
    EXPECT_EQ(reports[earlier + 1].provenance().gpu_isolation(), c.gpu_isolation);
    EXPECT_EQ(reports[earlier + 2].provenance().gpu_isolation(), c.gpu_isolation);
  }
}

TEST_F(AttemptRunnerTest, AnAttemptThatNeverStartsReportsNoProvenance) {
  host_.facts = Node();
  images_.image = Status::DataLoss("not the image the coordinator named");
  Run(Assignment());
  ASSERT_EQ(EventNames(), "ACCEPTED ERRORED");
  for (const auto& r : reporter_.Reports()) EXPECT_FALSE(r.has_provenance()) << v1::AttemptEvent_Name(r.event());
  EXPECT_TRUE(runtime_.facts_asked.empty());
}

}  // namespace
}  // namespace idlegrid::agent
