// Capacity end to end: measured readiness, simulated devices, owner policy
// re-advertised within a heartbeat, and per-device allocatable VRAM.
#include <gtest/gtest.h>
#include <google/protobuf/util/json_util.h>

#include <unistd.h>

#include <chrono>

#include "common/fs.h"
#include "e2e/harness.h"
#include "jobs/task_state.h"

namespace idlegrid::testing {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

const v1::Node* OnlyNode(const v1::ListNodesResponse& nodes) {
  return nodes.nodes_size() == 1 ? &nodes.nodes(0) : nullptr;
}

bool Schedulable(const v1::ListNodesResponse& nodes) {
  auto* n = OnlyNode(nodes);
  return n && n->schedulable();
}

class Capacity : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    grid_ = std::make_unique<Grid>(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  // A manifest for the test image with explicit resources; gpu_memory "": a whole GPU.
  std::string GpuManifest(const std::string& name, const std::vector<std::string>& args,
                          const std::string& gpu_memory) {
    std::string image = grid_->PushTestImage();
    std::string argv;
    for (const auto& a : args) argv += (argv.empty() ? "\"" : ", \"") + a + "\"";
    return grid_->WriteFile(name + ".yaml", "apiVersion: idlegrid/v1\nname: " + name + "\nimage: " + image +
                                                "\ncommand: [\"/sim\"]\nargs: [" + argv +
                                                "]\nresources: {cpu: 0.5, memory: 256Mi, pids: 64, gpus: 1" +
                                                (gpu_memory.empty() ? "" : ", gpuMemory: " + gpu_memory) + "}\n");
  }
  std::string Submit(const std::string& manifest) {
    auto r = grid_->Cli({"submit", manifest});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.substr(0, r.out.find('\n'));
  }
  std::unique_ptr<Grid> grid_;
};

TEST_F(Capacity, SimulatedGpusAreAdvertisedAsSuchAndCpuIsMeasured) {
  ASSERT_TRUE(grid_->StartCoordinator({"--allow-simulated-gpus", "--heartbeat-interval-ms", "1000"}).ok());
  ASSERT_TRUE(
      grid_->StartAgent(1, {"--simulate-gpu", "RTX 4090:24GiB:8.9", "--simulate-gpu", "RTX 3060:12GiB:8.6"}).ok());
  auto nodes = grid_->WaitNodes(Schedulable);
  ASSERT_TRUE(nodes.ok()) << nodes.status().message();
  const v1::Node* n = OnlyNode(*nodes);
  ASSERT_NE(n, nullptr);
  ASSERT_TRUE(n->schedulable()) << n->unschedulable_reason();
  // Measured: the readiness benchmark ran in the sandbox and its checksum held.
  EXPECT_TRUE(n->measurement().passed()) << n->measurement().reason();
  EXPECT_GT(n->measurement().cpu_score(), 0);
  // The two simulated devices, flagged everywhere and never measured.
  ASSERT_EQ(n->gpus_size(), 2);
  EXPECT_EQ(n->gpus(0).name(), "RTX 4090");
  EXPECT_EQ(n->gpus(0).memory_total_bytes(), 24 * kGiB);
  EXPECT_EQ(n->gpus(0).compute_capability(), "8.9");
  for (const auto& g : n->gpus()) {
    EXPECT_TRUE(g.simulated()) << g.name();
    EXPECT_FALSE(g.measured()) << g.name();
  }
  for (const auto& g : n->advertisement().inventory().gpus().devices()) EXPECT_TRUE(g.simulated());
  EXPECT_EQ(n->id(), n->advertisement().node_id());
  EXPECT_GT(n->advertisement().sequence(), 0u);
  auto json = grid_->Cli({"nodes", "--json"});
  EXPECT_NE(json.out.find("\"simulated\": true"), std::string::npos) << json.out;
  auto text = grid_->Cli({"nodes", "--details"});
  EXPECT_NE(text.out.find("SIMULATED"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("unmeasured"), std::string::npos) << text.out;

  // The owner pauses the node and sets a price: re-advertised within one heartbeat (1 s).
  uint64_t before = n->advertisement().sequence();
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(grid_->WriteOwnerPolicy(1, "acceptJobs: false\nasks:\n  RTX 4090: 0.35\n").ok());
  auto paused = grid_->WaitNodes(
      [&](const v1::ListNodesResponse& l) {
        auto* m = OnlyNode(l);
        return m && m->advertisement().sequence() > before && !m->advertisement().policy().accept_jobs();
      },
      10000);
  auto elapsed_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(paused.ok());
  const v1::Node* p = OnlyNode(*paused);
  ASSERT_FALSE(p->advertisement().policy().accept_jobs());
  EXPECT_LE(elapsed_ms, 1000 + 800) << "policy change took longer than one heartbeat to reach the coordinator";
  EXPECT_FALSE(p->schedulable());
  EXPECT_EQ(p->unschedulable_reason(), "paused by its owner");
  ASSERT_EQ(p->advertisement().asks_size(), 1);
  EXPECT_EQ(p->advertisement().asks(0).per_hour(), 0.35);
}

TEST_F(Capacity, NodeWhoseBenchmarkIsImplausibleGetsNoWork) {
  // No real CPU reaches 10^15 rounds/s: the measurement must be judged implausible.
  ASSERT_TRUE(grid_->StartCoordinator({"--min-cpu-score", "1e15"}).ok());
  ASSERT_TRUE(grid_->StartAgent(1).ok());
  std::string id = Submit(grid_->Manifest("waits", {"write", "x"}));
  auto nodes = grid_->WaitNodes([](const v1::ListNodesResponse& l) {
    auto* n = OnlyNode(l);
    return n && n->measurement().measured_at_ms() > 0;
  });
  ASSERT_TRUE(nodes.ok());
  const v1::Node* n = OnlyNode(*nodes);
  EXPECT_FALSE(n->measurement().passed());
  EXPECT_FALSE(n->schedulable());
  EXPECT_NE(n->unschedulable_reason().find("implausibly slow"), std::string::npos) << n->unschedulable_reason();
  auto text = grid_->Cli({"nodes", "--details"});
  EXPECT_NE(text.out.find("implausibly slow"), std::string::npos) << text.out;
  auto job = grid_->WaitJob(
      id, [](const v1::Job& j) { return j.tasks(0).message().find("implausibly slow") != std::string::npos; }, 30000);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->tasks(0).state(), v1::QUEUED);
  EXPECT_EQ(job->tasks(0).attempts_size(), 0) << "an unmeasured node must not get work";
}

TEST_F(Capacity, DeviceWithEighteenOfTwentyFourGibHeldTakesSixNotTwenty) {
  ASSERT_TRUE(grid_->StartCoordinator({"--allow-simulated-gpus"}).ok());
  ASSERT_TRUE(grid_->StartAgent(1, {"--simulate-gpu", "RTX 4090:24GiB:8.9"}).ok());
  // VRAM slices share a device: only where its owner allows that.
  ASSERT_TRUE(grid_->WriteOwnerPolicy(1, "allowGpuSharing: true\n").ok());
  ASSERT_TRUE(grid_
                  ->WaitNodes([](const v1::ListNodesResponse& nodes) {
                    auto* n = OnlyNode(nodes);
                    return n && n->schedulable() && n->advertisement().policy().allow_gpu_sharing();
                  })
                  .ok());

  std::string holder = Submit(GpuManifest("holder", {"sleep", "120"}, "18Gi"));
  auto running = grid_->WaitJob(holder, [](const v1::Job& j) { return j.tasks(0).state() == v1::RUNNING; });
  ASSERT_TRUE(running.ok());
  ASSERT_EQ(running->tasks(0).state(), v1::RUNNING);
  ASSERT_EQ(running->tasks(0).attempts(0).device_uuids_size(), 1);

  auto nodes = grid_->Cli({"nodes", "--json"});
  v1::ListNodesResponse list;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(nodes.out, &list).ok());
  ASSERT_EQ(list.nodes(0).gpus_size(), 1);
  EXPECT_EQ(list.nodes(0).gpus(0).allocatable_memory_bytes(), 6 * kGiB);

  std::string big = Submit(GpuManifest("big", {"write", "big"}, "20Gi"));
  std::string small = Submit(GpuManifest("small", {"write", "small"}, "6Gi"));
  auto small_done = grid_->WaitJob(small, [](const v1::Job& j) { return jobs::IsSettled(j); });
  ASSERT_TRUE(small_done.ok());
  EXPECT_EQ(small_done->state(), v1::SUCCEEDED);
  auto big_now = grid_->Cli({"status", big, "--json"});
  v1::Job big_job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(big_now.out, &big_job).ok());
  EXPECT_EQ(big_job.tasks(0).state(), v1::QUEUED);
  EXPECT_NE(big_job.tasks(0).message().find("insufficient VRAM (need 20 GiB)"), std::string::npos)
      << big_job.tasks(0).message();
  // --explain: the filter that removed the node, with the best device's free VRAM.
  auto explain = grid_->Cli({"status", big, "--explain"});
  ASSERT_EQ(explain.exit_code, 0) << explain.err;
  EXPECT_NE(explain.out.find("1 node: 1 insufficient VRAM (need 20 GiB); waiting"), std::string::npos) << explain.out;
  EXPECT_NE(explain.out.find("best device has 6 GiB free"), std::string::npos) << explain.out;

  // Once the holder is gone, the 20 GiB job fits.
  ASSERT_EQ(grid_->Cli({"cancel", holder}).exit_code, 0);
  auto big_done = grid_->WaitJob(big, [](const v1::Job& j) { return jobs::IsSettled(j); });
  ASSERT_TRUE(big_done.ok());
  EXPECT_EQ(big_done->state(), v1::SUCCEEDED);
}

// A job's GPU state with its reason, for failure messages.
std::string GpuReasons(const v1::Node& n) {
  std::string out;
  for (const auto& g : n.gpus()) out += g.name() + ": " + (g.measured() ? "measured" : g.unavailable_reason()) + "; ";
  return out + "node: " + n.unschedulable_reason();
}

TEST_F(Capacity, AGpuNodeRunsCpuWorkWhileItsGpusCannotBeMeasured) {
  // The agent's NVML is a stand-in reporting an H200 and an RTX 4090 that are
  // not simulated. No CDI spec names them, so their benchmark cannot run:
  // each GPU holds back only itself, with its reason; the node runs CPU work.
  std::string nvml = grid_->root + "/libfake-nvidia-ml.so";
  ASSERT_EQ(RunCommand({"install", "-m", "755", FAKE_NVML_PATH, nvml}).exit_code, 0);
  ASSERT_TRUE(grid_->StartCoordinator().ok());
  ASSERT_TRUE(grid_->StartAgent(1, {"--nvml-library", nvml}).ok());
  auto nodes = grid_->WaitNodes(
      [](const v1::ListNodesResponse& l) {
        auto* n = OnlyNode(l);
        if (n == nullptr || !n->schedulable() || n->gpus_size() != 2) return false;
        for (const auto& g : n->gpus()) {
          if (g.unavailable_reason().find("failed its readiness benchmark") == std::string::npos) return false;
        }
        return true;
      },
      180000);
  ASSERT_TRUE(nodes.ok()) << nodes.status().message();
  const v1::Node* n = OnlyNode(*nodes);
  EXPECT_TRUE(n->measurement().passed()) << n->measurement().reason();
  EXPECT_EQ(n->gpus(0).name(), "NVIDIA H200");
  for (const auto& g : n->gpus()) {
    EXPECT_FALSE(g.simulated());
    EXPECT_FALSE(g.measured()) << g.name() << " must not count as measured";
    EXPECT_NE(g.unavailable_reason().find("CDI"), std::string::npos) << g.unavailable_reason();
  }
  auto listed = grid_->Cli({"nodes", "--details"});
  EXPECT_NE(listed.out.find("not offered: failed its readiness benchmark"), std::string::npos) << listed.out;

  std::string cpu = Submit(grid_->Manifest("cpu", {"write", "x"}));
  auto done = grid_->WaitJob(
      cpu, [](const v1::Job& j) { return jobs::IsSettled(j); }, 120000);
  ASSERT_TRUE(done.ok()) << done.status().message();
  EXPECT_EQ(done->tasks(0).state(), v1::SUCCEEDED) << done->tasks(0).message();

  std::string gpu = Submit(GpuManifest("gpu", {"write", "y"}, ""));
  auto waiting = grid_->WaitJob(
      gpu, [](const v1::Job& j) { return j.tasks(0).message().find("GPU not ready") != std::string::npos; }, 30000);
  ASSERT_TRUE(waiting.ok()) << waiting.status().message() << "\n" << grid_->Cli({"status", gpu, "--explain"}).out;
  EXPECT_EQ(waiting->tasks(0).attempts_size(), 0);
  EXPECT_NE(waiting->tasks(0).message().find("failed its readiness benchmark"), std::string::npos)
      << waiting->tasks(0).message();
  auto explained = grid_->Cli({"status", gpu, "--explain"});
  EXPECT_NE(explained.out.find("gpu-ready"), std::string::npos) << explained.out;
}

// A FAKE GPU, end to end through the real chain: NVML (the fake) names the
// device, a real CDI spec (read by podman from /var/run/cdi) mounts the fake
// driver (tests/discovery/fake_cuda.c, whose JIT runs the benchmark's own
// PTX on the CPU) into the job for `--device nvidia.com/gpu=UUID`, the
// coordinator recomputes the checksum. The device whose driver answers is
// measured and takes a GPU job; the one whose driver sees no device says so.
class CapacityWithCdi : public Capacity {
 protected:
  static constexpr char kSpec[] = "/var/run/cdi/idlegrid-test-fake-gpu.yaml";
  static constexpr char kFakeName[] = "Idlegrid Fake GPU";
  static constexpr char kFakeMemory[] = "1342177280";
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "writing a CDI spec to /var/run/cdi needs root";
    Capacity::SetUp();
    if (IsSkipped()) return;
    ::setenv("FAKE_NVML_DEVICE0_NAME", kFakeName, 1);
    ::setenv("FAKE_NVML_DEVICE0_MEMORY", kFakeMemory, 1);
  }
  void TearDown() override {
    ::unlink(kSpec);
    ::unsetenv("FAKE_NVML_DEVICE0_NAME");
    ::unsetenv("FAKE_NVML_DEVICE0_MEMORY");
  }
  // A spec like `nvidia-ctk cdi generate` writes, with the fake driver as
  // the driver library and each device's fake switches as its environment.
  void WriteSpec(const std::string& driver) {
    const std::string mount = "      mounts:\n      - hostPath: " + driver +
                              "\n        containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
                              "        options: [ro, nosuid, nodev, bind]\n";
    const std::string text = std::string("cdiVersion: \"0.5.0\"\nkind: nvidia.com/gpu\ndevices:\n") +
                             "- name: GPU-00010203-0405-0607-0809-0a0b0c0d0e0f\n  containerEdits:\n" +
                             "      env: [\"FAKE_CUDA_DEVICE_NAME=" + kFakeName +
                             "\", \"FAKE_CUDA_DEVICE_MEMORY=" + kFakeMemory + "\"]\n" + mount +
                             "- name: GPU-10111213-1415-1617-1819-1a1b1c1d1e1f\n  containerEdits:\n" +
                             "      env: [\"FAKE_CUDA_INIT_ERROR=100\"]\n" + mount;
    ASSERT_EQ(RunCommand({"mkdir", "-p", "/var/run/cdi"}).exit_code, 0);
    ASSERT_TRUE(WriteFileAtomic(kSpec, text, 0644).ok());
  }
};

TEST_F(CapacityWithCdi, AFakeGpuIsMeasuredThroughCdiThenTakesGpuWork) {
  std::string nvml = grid_->root + "/libfake-nvidia-ml.so";
  std::string cuda = grid_->root + "/libfake-cuda.so.1";
  ASSERT_EQ(RunCommand({"install", "-m", "755", FAKE_NVML_PATH, nvml}).exit_code, 0);
  ASSERT_EQ(RunCommand({"install", "-m", "755", FAKE_CUDA_PATH, cuda}).exit_code, 0);
  WriteSpec(cuda);
  // Few rounds: the fake's JIT interprets 65536 threads on one CPU core.
  ASSERT_TRUE(grid_->StartCoordinator({"--gpu-bench-rounds", "8"}).ok());
  ASSERT_TRUE(grid_->StartAgent(1, {"--nvml-library", nvml, "--cdi-spec", kSpec}).ok());
  auto nodes = grid_->WaitNodes(
      [](const v1::ListNodesResponse& l) {
        auto* n = OnlyNode(l);
        return n && n->gpus_size() == 2 && n->gpus(0).measured() &&
               n->gpus(1).unavailable_reason().find("failed") != std::string::npos;
      },
      240000);
  ASSERT_TRUE(nodes.ok()) << nodes.status().message();
  const v1::Node* n = OnlyNode(*nodes);
  EXPECT_TRUE(n->schedulable()) << n->unschedulable_reason();
  EXPECT_EQ(n->gpus(0).name(), kFakeName);
  EXPECT_EQ(n->gpus(0).unavailable_reason(), "");
  EXPECT_NE(n->gpus(1).unavailable_reason().find("CUDA_ERROR_NO_DEVICE"), std::string::npos) << GpuReasons(*n);
  const v1::GpuMeasurement* gm = nullptr;
  for (const auto& g : n->measurement().gpus()) {
    if (g.uuid() == n->gpus(0).uuid()) gm = &g;
  }
  ASSERT_NE(gm, nullptr);
  EXPECT_TRUE(gm->passed()) << gm->reason();
  EXPECT_GT(gm->fp32_gflops(), 0);
  EXPECT_GT(gm->h2d_gbps(), 0);
  EXPECT_GT(gm->d2h_gbps(), 0);
  EXPECT_EQ(gm->allocatable_bytes(), std::stoull(kFakeMemory));

  std::string gpu = Submit(GpuManifest("gpu", {"write", "y"}, ""));
  auto done = grid_->WaitJob(
      gpu, [](const v1::Job& j) { return jobs::IsSettled(j); }, 120000);
  ASSERT_TRUE(done.ok()) << done.status().message() << "\n" << grid_->Cli({"status", gpu, "--explain"}).out;
  const v1::Task& task = done->tasks(0);
  ASSERT_EQ(task.state(), v1::SUCCEEDED) << task.message();
  const v1::Attempt& a = task.attempts(task.attempts_size() - 1);
  ASSERT_EQ(a.device_uuids_size(), 1);
  EXPECT_EQ(a.device_uuids(0), n->gpus(0).uuid()) << "the measured device, not the failed one";
}

TEST_F(Capacity, DiscoverPrintsThisHostAndSaysWhyThereIsNoGpu) {
  auto r = grid_->Cli({"agent", "--discover", "--json", "--data-dir", grid_->root + "/discover"}, false);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  v1::Advertisement ad;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &ad).ok()) << r.out;
  EXPECT_GT(ad.inventory().cpu().logical_cores(), 0u);
  EXPECT_GT(ad.inventory().memory_total_bytes(), 0u);
  ASSERT_GT(ad.inventory().disks_size(), 0);
  EXPECT_GT(ad.inventory().disks(0).total_bytes(), 0u);
  EXPECT_GT(ad.capacity().runtimes_size(), 0);
  EXPECT_FALSE(ad.capacity().enforcement().memory().empty());
  if (ad.inventory().gpus().devices_size() == 0) {
    EXPECT_FALSE(ad.inventory().gpus().reason().empty());
    auto text = grid_->Cli({"agent", "--discover", "--data-dir", grid_->root + "/discover"}, false);
    EXPECT_NE(text.out.find("no GPU: "), std::string::npos) << text.out;
  }
  auto sim = grid_->Cli({"agent", "--discover", "--json", "--data-dir", grid_->root + "/discover", "--simulate-gpu",
                         "H100 80GB HBM3:80GiB:9.0"},
                        false);
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  EXPECT_NE(sim.out.find("\"simulated\": true"), std::string::npos) << sim.out;
  auto bad = grid_->Cli({"agent", "--discover", "--simulate-gpu", "nonsense"}, false);
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
}

}  // namespace
}  // namespace idlegrid::testing
