// `agent join`'s GPU chain check: the pure judge (agent/join_gpu.h) on a
// table of hosts, the CDI parser, and the reading (ReadGpuChainFacts) against
// the suite's fake NVML and CDI spec files in a temp dir.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "agent/join.h"
#include "agent/join_gpu.h"
#include "common/fs.h"
#include "common/test_support.h"

namespace idlegrid::agent {
namespace {

constexpr char kUuid0[] = "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f";  // tests/discovery/fake_nvml.c
constexpr char kUuid1[] = "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f";

CdiSpec Spec(const std::string& path, std::vector<std::string> names, const std::string& kind = kCdiGpuKind) {
  return {path, kind, std::move(names), "", {}, {}};
}

// A host where every link works: two GPUs, a recent driver, nvidia-ctk's spec.
GpuChainFacts GoodChain() {
  GpuChainFacts f;
  f.nvml_library = "libnvidia-ml.so.1";
  f.nvml = NvmlState::kReady;
  f.nvidia_pci_devices = 2;
  f.driver_version = "550.54.15";
  f.cuda_driver_version = "12.4";
  f.gpus = {{0, kUuid0, "NVIDIA GeForce RTX 4090"}, {1, kUuid1, "NVIDIA GeForce RTX 3090"}};
  f.cdi_dirs = {"/etc/cdi", "/var/run/cdi"};
  f.cdi_specs = {Spec("/etc/cdi/nvidia.yaml", {"0", kUuid0, "1", kUuid1, "all"})};
  f.agent_cdi_paths = {"/etc/cdi/nvidia.yaml", "/var/run/cdi/nvidia.yaml"};
  return f;
}

std::vector<GpuCheck> Fixes(const std::vector<GpuCheck>& checks) {
  std::vector<GpuCheck> out;
  for (const GpuCheck& c : checks) {
    if (c.outcome == GpuCheck::kFix) out.push_back(c);
  }
  return out;
}

// Each row: a change to the good host, then the one fix the check must ask
// for (its `what` and `fix` each containing the given text), or none.
TEST(CheckGpuChain, EachMissingLinkIsNamedWithItsFix) {
  struct Row {
    const char* name;
    void (*change)(GpuChainFacts*);
    const char* what;  // nullptr: no fix asked for
    const char* fix;
  };
  const Row rows[] = {
      {"all in order", [](GpuChainFacts*) {}, nullptr, nullptr},
      {"no GPU at all",
       [](GpuChainFacts* f) {
         *f = GpuChainFacts{};
         f->nvml_library = "libnvidia-ml.so.1";
         f->nvml_detail = "library absent: libnvidia-ml.so.1 (cannot open)";
       },
       nullptr, nullptr},
      {"NVML sees none", [](GpuChainFacts* f) { f->nvml = NvmlState::kNoDevice, f->gpus.clear(); }, nullptr, nullptr},
      {"a GPU without a driver",
       [](GpuChainFacts* f) {
         f->nvml = NvmlState::kAbsent, f->gpus.clear(), f->nvidia_pci_devices = 1;
         f->nvml_detail = "library absent: libnvidia-ml.so.1 (cannot open)";
       },
       "1 NVIDIA GPU(s) on the PCI bus, but NVML does not load (library absent", "apt-get install"},
      {"driver error",
       [](GpuChainFacts* f) {
         f->nvml = NvmlState::kDriverError, f->gpus.clear();
         f->nvml_detail = "driver error: nvmlInit_v2 returned 18 (Driver/library version mismatch)";
       },
       "NVML loads but fails: driver error: nvmlInit_v2 returned 18", "reboot"},
      {"CUDA 10.2 driver", [](GpuChainFacts* f) { f->driver_version = "440.100", f->cuda_driver_version = "10.2"; },
       "driver 440.100 (CUDA 10.2) is too old", "nvidia-driver"},
      {"CUDA 11.0 driver", [](GpuChainFacts* f) { f->driver_version = "450.51.06", f->cuda_driver_version = "11.0"; },
       nullptr, nullptr},
      {"old driver, CUDA unknown", [](GpuChainFacts* f) { f->driver_version = "450.57", f->cuda_driver_version = ""; },
       "driver 450.57 is too old", "nvidia-driver"},
      {"floor driver, CUDA unknown",
       [](GpuChainFacts* f) { f->driver_version = "450.80.02", f->cuda_driver_version = ""; }, nullptr, nullptr},
      {"no version at all", [](GpuChainFacts* f) { f->driver_version = "", f->cuda_driver_version = ""; },
       "could not be read", "nvidia-smi"},
      {"no CDI spec", [](GpuChainFacts* f) { f->cdi_specs.clear(); },
       "no CDI spec of kind nvidia.com/gpu in /etc/cdi or /var/run/cdi",
       "install nvidia-container-toolkit (NVIDIA's apt repository: https://docs.nvidia.com/datacenter/"
       "cloud-native/container-toolkit/latest/install-guide.html), then run: sudo nvidia-ctk cdi generate "
       "--output=/etc/cdi/nvidia.yaml"},
      {"another vendor's spec only",
       [](GpuChainFacts* f) { f->cdi_specs = {Spec("/etc/cdi/amd.yaml", {"0"}, "amd.com/gpu")}; },
       "no CDI spec of kind nvidia.com/gpu", "nvidia-ctk cdi generate"},
      {"spec misses a UUID",
       [](GpuChainFacts* f) {
         f->cdi_specs = {Spec("/etc/cdi/nvidia.yaml", {"0", kUuid0, "all"})};
       },
       "CDI spec /etc/cdi/nvidia.yaml does not name GPU 1 (NVIDIA GeForce RTX 3090, GPU-10111213",
       "regenerate it after a driver update or a GPU change: sudo nvidia-ctk cdi generate "
       "--output=/etc/cdi/nvidia.yaml"},
      {"spec names by index only",
       [](GpuChainFacts* f) {
         f->cdi_specs = {Spec("/var/run/cdi/nvidia.yaml", {"0", "1", "all", kUuid0})};
       },
       "names GPU 1 (NVIDIA GeForce RTX 3090, GPU-10111213-1415-1617-1819-1a1b1c1d1e1f) by index only",
       "--device-name-strategy=uuid --output=/var/run/cdi/nvidia.yaml"},
      {"UUIDs split over two specs",
       [](GpuChainFacts* f) {
         f->cdi_specs = {Spec("/etc/cdi/nvidia.yaml", {kUuid0}), Spec("/var/run/cdi/extra.yaml", {kUuid1})};
       },
       nullptr, nullptr},
      {"spec outside the CDI dirs",
       [](GpuChainFacts* f) {
         f->cdi_specs = {Spec("/home/ann/nvidia.yaml", {kUuid0, kUuid1})};
         f->agent_cdi_paths = {"/home/ann/nvidia.yaml"};
       },
       "no CDI spec of kind nvidia.com/gpu", "nvidia-ctk cdi generate"},
      {"spec the agent does not look for",
       [](GpuChainFacts* f) {
         f->cdi_specs = {Spec("/etc/cdi/gpus.yaml", {kUuid0, kUuid1})};
       },
       "the agent gives a job a GPU only when /etc/cdi/nvidia.yaml or /var/run/cdi/nvidia.yaml exists",
       "or run the agent with --cdi-spec /etc/cdi/gpus.yaml"},
      {"spec the agent is pointed at",
       [](GpuChainFacts* f) {
         f->cdi_specs = {Spec("/etc/cdi/gpus.yaml", {kUuid0, kUuid1})};
         f->agent_cdi_paths = {"/etc/cdi/gpus.yaml"};
       },
       nullptr, nullptr},
      {"spec for another driver",
       [](GpuChainFacts* f) {
         f->cdi_specs[0].host_paths = {"/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05", "/usr/bin/nvidia-smi"};
         f->cdi_specs[0].missing_host_paths = {"/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05"};
       },
       "mounts 1 file(s) that no longer exist (/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05)",
       "regenerate it after a driver update: sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml"},
      {"unreadable spec",
       [](GpuChainFacts* f) {
         f->cdi_specs.push_back({"/var/run/cdi/broken.yaml", "", {}, "not YAML or JSON: bad", {}, {}});
       },
       "CDI spec /var/run/cdi/broken.yaml cannot be read: not YAML or JSON: bad", "fix or remove it"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    GpuChainFacts f = GoodChain();
    r.change(&f);
    const std::vector<GpuCheck> checks = CheckGpuChain(f);
    const std::vector<GpuCheck> fixes = Fixes(checks);
    if (r.what == nullptr) {
      EXPECT_TRUE(fixes.empty()) << fixes.front().what;
      continue;
    }
    // Outside the dirs: its own fix, then "no spec"; otherwise exactly one.
    ASSERT_FALSE(fixes.empty());
    bool found = false;
    for (const GpuCheck& c : fixes) {
      EXPECT_FALSE(c.fix.empty()) << c.what;
      found |= c.what.find(r.what) != std::string::npos && c.fix.find(r.fix) != std::string::npos;
    }
    EXPECT_TRUE(found) << fixes.front().what << "\n    fix: " << fixes.front().fix;
    if (std::string(r.name) != "spec outside the CDI dirs") {
      EXPECT_EQ(fixes.size(), 1u);
    }
  }
}

TEST(CheckGpuChain, AGoodChainPassesLinkByLink) {
  const std::vector<GpuCheck> checks = CheckGpuChain(GoodChain());
  ASSERT_EQ(checks.size(), 3u);
  for (const GpuCheck& c : checks) EXPECT_EQ(c.outcome, GpuCheck::kPass) << c.what;
  EXPECT_EQ(checks[0].what,
            "NVML loads (libnvidia-ml.so.1): 2 GPU(s): GPU 0 (NVIDIA GeForce RTX 4090, "
            "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f), GPU 1 (NVIDIA GeForce RTX 3090, "
            "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f)");
  EXPECT_NE(checks[1].what.find("driver 550.54.15 (CUDA 12.4) is new enough"), std::string::npos);
  EXPECT_EQ(checks[2].what, "CDI spec /etc/cdi/nvidia.yaml names every GPU by UUID");
}

TEST(CheckGpuChain, NoNvidiaGpuIsInformationNotAFix) {
  GpuChainFacts f;
  f.nvml_library = "libnvidia-ml.so.1";
  const std::vector<GpuCheck> checks = CheckGpuChain(f);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].outcome, GpuCheck::kInfo);
  EXPECT_EQ(checks[0].what, "no NVIDIA GPU found (libnvidia-ml.so.1 does not load): this node offers CPUs only");
}

TEST(VersionAtLeast, ComparesPartsAsNumbers) {
  EXPECT_TRUE(VersionAtLeast("450.80.02", "450.80.02"));
  EXPECT_TRUE(VersionAtLeast("535.183.01", "450.80.02"));
  EXPECT_TRUE(VersionAtLeast("450.102", "450.80.02"));  // 102 > 80 as numbers, not as text
  EXPECT_FALSE(VersionAtLeast("450.80.01", "450.80.02"));
  EXPECT_FALSE(VersionAtLeast("450.80", "450.80.02"));
  EXPECT_FALSE(VersionAtLeast("418.87.00", "450.80.02"));
  EXPECT_FALSE(VersionAtLeast("", "450.80.02"));
  EXPECT_FALSE(VersionAtLeast("unknown", "450.80.02"));
}

TEST(ParseCdiSpec, ReadsKindAndDeviceNamesFromYamlAndJson) {
  CdiSpec yaml = ParseCdiSpec(
      "cdiVersion: \"0.5.0\"\nkind: nvidia.com/gpu\ndevices:\n- name: \"0\"\n  containerEdits: {}\n"
      "- name: GPU-abc\n  containerEdits: {}\n- containerEdits: {}\n",
      "/etc/cdi/nvidia.yaml");
  EXPECT_EQ(yaml.error, "");
  EXPECT_EQ(yaml.kind, "nvidia.com/gpu");
  EXPECT_EQ(yaml.device_names, (std::vector<std::string>{"0", "GPU-abc"}));
  CdiSpec json = ParseCdiSpec(R"({"cdiVersion":"0.5.0","kind":"nvidia.com/gpu","devices":[{"name":"GPU-abc"}]})",
                              "/etc/cdi/nvidia.json");
  EXPECT_EQ(json.error, "");
  EXPECT_EQ(json.device_names, (std::vector<std::string>{"GPU-abc"}));
  CdiSpec mounts = ParseCdiSpec(
      "kind: nvidia.com/gpu\ndevices:\n- name: GPU-abc\n  containerEdits:\n    mounts: [{hostPath: /a, containerPath: "
      "/a}]\n"
      "    deviceNodes: [{path: /dev/nvidia0}]\ncontainerEdits:\n  mounts:\n  - {hostPath: /b, containerPath: /b}\n"
      "  - {hostPath: /a, containerPath: /a}\n",
      "x");
  EXPECT_EQ(mounts.host_paths, (std::vector<std::string>{"/b", "/a"}));  // device nodes are not checked
  EXPECT_NE(ParseCdiSpec("kind: [unclosed", "x").error, "");
  EXPECT_EQ(ParseCdiSpec("- a\n- b\n", "x").error, "not a CDI spec (expected a map with kind and devices)");
  EXPECT_EQ(ParseCdiSpec("devices: []\n", "x").error, "not a CDI spec (no kind)");
}

// The reading against fake set-ups: the suite's fake NVML (two GPUs, driver
// 550.54.15, CUDA 12.4) and CDI dirs and a sysfs in a temp dir.
class ReadGpuChainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    ASSERT_TRUE(std::filesystem::exists(FakeNvml())) << FakeNvml();
    ASSERT_TRUE(MakeDirs(dir_.path() + "/etc-cdi", 0755).ok());
    ASSERT_TRUE(MakeDirs(dir_.path() + "/run-cdi", 0755).ok());
    ASSERT_TRUE(MakeDirs(dir_.path() + "/pci", 0755).ok());
    sources_.nvml_library = FakeNvml();
    sources_.cuda_library = "/nonexistent/libcuda.so.1";
    sources_.cdi_dirs = {dir_.path() + "/etc-cdi", dir_.path() + "/run-cdi"};
    sources_.agent_cdi_paths = {dir_.path() + "/etc-cdi/nvidia.yaml", dir_.path() + "/run-cdi/nvidia.yaml"};
    sources_.pci_devices_dir = dir_.path() + "/pci";
  }
  void TearDown() override { ::unsetenv("FAKE_NVML_INIT_ERROR"); }

  // Built beside the idlegrid binary (CMakeLists.txt, discovery test fixtures).
  static std::string FakeNvml() {
    return (std::filesystem::path(IDLEGRID_BINARY).parent_path() / "fakes" / "libfake-nvidia-ml.so").string();
  }
  // A spec like nvidia-ctk's: per device a node, for all of them the driver
  // library mounted from `library` (a file in the temp dir unless given).
  void WriteSpec(const std::string& rel, const std::vector<std::string>& names, std::string library = "") {
    if (library.empty()) {
      library = dir_.path() + "/libcuda.so.550.54.15";
      ASSERT_TRUE(WriteFileAtomic(library, "", 0644).ok());
    }
    std::string text = "cdiVersion: \"0.5.0\"\nkind: nvidia.com/gpu\ndevices:\n";
    for (const std::string& n : names) {
      text += "- name: \"" + n + "\"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia-absent-in-tests\n";
    }
    text +=
        "containerEdits:\n  mounts:\n  - hostPath: " + library +
        "\n    containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15\n    options: [ro, nosuid, nodev, bind]\n";
    ASSERT_TRUE(WriteFileAtomic(dir_.path() + "/" + rel, text, 0644).ok());
  }
  void WritePciDevice(const std::string& slot, const std::string& vendor, const std::string& device_class) {
    const std::string d = dir_.path() + "/pci/" + slot;
    ASSERT_TRUE(MakeDirs(d, 0755).ok());
    ASSERT_TRUE(WriteFileAtomic(d + "/vendor", vendor + "\n", 0644).ok());
    ASSERT_TRUE(WriteFileAtomic(d + "/class", device_class + "\n", 0644).ok());
  }
  std::vector<GpuCheck> Check() { return CheckGpuChain(ReadGpuChainFacts(sources_)); }

  testing::TempDir dir_{"idlegrid-join-gpu"};
  GpuChainSources sources_;
};

TEST_F(ReadGpuChainTest, NoNvmlIsACpuOnlyNode) {
  sources_.nvml_library = dir_.path() + "/libnvidia-ml.so.1";  // absent
  WritePciDevice("0000:00:02.0", "0x8086", "0x030000");        // an Intel iGPU is no NVIDIA GPU
  const GpuChainFacts facts = ReadGpuChainFacts(sources_);
  EXPECT_EQ(facts.nvml, NvmlState::kAbsent);
  EXPECT_EQ(facts.nvidia_pci_devices, 0);
  const std::vector<GpuCheck> checks = CheckGpuChain(facts);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].outcome, GpuCheck::kInfo);
  EXPECT_NE(checks[0].what.find("no NVIDIA GPU found"), std::string::npos) << checks[0].what;
  EXPECT_NE(checks[0].what.find("this node offers CPUs only"), std::string::npos) << checks[0].what;
}

TEST_F(ReadGpuChainTest, AnNvidiaCardWithoutNvmlAsksForTheDriver) {
  sources_.nvml_library = dir_.path() + "/libnvidia-ml.so.1";
  WritePciDevice("0000:01:00.0", "0x10de", "0x030000");
  WritePciDevice("0000:01:00.1", "0x10de", "0x040300");  // its HDMI audio function is not a GPU
  const std::vector<GpuCheck> fixes = Fixes(Check());
  ASSERT_EQ(fixes.size(), 1u);
  EXPECT_NE(fixes[0].what.find("1 NVIDIA GPU(s) on the PCI bus"), std::string::npos) << fixes[0].what;
  EXPECT_NE(fixes[0].fix.find("nvidia-driver"), std::string::npos) << fixes[0].fix;
}

TEST_F(ReadGpuChainTest, NvmlThatFailsIsADriverError) {
  ::setenv("FAKE_NVML_INIT_ERROR", "9", 1);
  const std::vector<GpuCheck> fixes = Fixes(Check());
  ASSERT_EQ(fixes.size(), 1u);
  EXPECT_NE(fixes[0].what.find("NVML loads but fails: driver error: nvmlInit_v2 returned 9"), std::string::npos)
      << fixes[0].what;
}

TEST_F(ReadGpuChainTest, NvmlButNoCdiSpecNamesTheNvidiaCtkFix) {
  const GpuChainFacts facts = ReadGpuChainFacts(sources_);
  EXPECT_EQ(facts.nvml, NvmlState::kReady);
  EXPECT_EQ(facts.driver_version, "550.54.15");
  EXPECT_EQ(facts.cuda_driver_version, "12.4");
  ASSERT_EQ(facts.gpus.size(), 2u);
  EXPECT_EQ(facts.gpus[1].uuid, kUuid1);
  const std::vector<GpuCheck> fixes = Fixes(CheckGpuChain(facts));
  ASSERT_EQ(fixes.size(), 1u);
  EXPECT_NE(fixes[0].what.find("no CDI spec of kind nvidia.com/gpu in " + dir_.path() + "/etc-cdi or "),
            std::string::npos)
      << fixes[0].what;
  EXPECT_NE(fixes[0].fix.find("install nvidia-container-toolkit"), std::string::npos) << fixes[0].fix;
  EXPECT_NE(fixes[0].fix.find("sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml"), std::string::npos);
}

TEST_F(ReadGpuChainTest, ASpecMissingOneUuidNamesThatUuid) {
  WriteSpec("run-cdi/nvidia.yaml", {"0", kUuid0, "all"});
  const std::vector<GpuCheck> fixes = Fixes(Check());
  ASSERT_EQ(fixes.size(), 1u);
  EXPECT_EQ(fixes[0].what, "CDI spec " + dir_.path() +
                               "/run-cdi/nvidia.yaml does not name GPU 1 (NVIDIA GeForce RTX 4090, " +
                               std::string(kUuid1) + ")");
  EXPECT_EQ(fixes[0].fix,
            "regenerate it after a driver update or a GPU change: sudo nvidia-ctk cdi generate --output=" +
                dir_.path() + "/run-cdi/nvidia.yaml");
}

TEST_F(ReadGpuChainTest, AllPresentPasses) {
  WriteSpec("etc-cdi/nvidia.yaml", {"0", kUuid0, "1", kUuid1, "all"});
  WriteSpec("etc-cdi/notes.txt", {"ignored: not .yaml or .json"});
  // The same file named again by --cdi-spec, by a path through a symlink, is read once.
  ASSERT_EQ(::symlink((dir_.path() + "/etc-cdi").c_str(), (dir_.path() + "/cdi-link").c_str()), 0);
  sources_.extra_cdi_specs = {dir_.path() + "/cdi-link/nvidia.yaml"};
  const GpuChainFacts facts = ReadGpuChainFacts(sources_);
  ASSERT_EQ(facts.cdi_specs.size(), 1u);
  const std::vector<GpuCheck> checks = CheckGpuChain(facts);
  EXPECT_TRUE(Fixes(checks).empty()) << Fixes(checks).front().what;
  ASSERT_EQ(checks.size(), 3u);
  for (const GpuCheck& c : checks) EXPECT_EQ(c.outcome, GpuCheck::kPass) << c.what;
}

TEST_F(ReadGpuChainTest, ASpecForAnotherDriverNamesTheFileThatIsGone) {
  WriteSpec("etc-cdi/nvidia.yaml", {"0", kUuid0, "1", kUuid1}, dir_.path() + "/libcuda.so.535.104.05");
  const std::vector<GpuCheck> fixes = Fixes(Check());
  ASSERT_EQ(fixes.size(), 1u);
  EXPECT_EQ(fixes[0].what, "CDI spec " + dir_.path() + "/etc-cdi/nvidia.yaml mounts 1 file(s) that no longer exist (" +
                               dir_.path() +
                               "/libcuda.so.535.104.05): it was generated for another driver, and a "
                               "job given a GPU by it fails to start");
  EXPECT_EQ(fixes[0].fix, "regenerate it after a driver update: sudo nvidia-ctk cdi generate --output=" + dir_.path() +
                              "/etc-cdi/nvidia.yaml");
}

TEST_F(ReadGpuChainTest, AnUnparsableSpecIsNamed) {
  WriteSpec("etc-cdi/nvidia.yaml", {"0", kUuid0, "1", kUuid1});
  ASSERT_TRUE(WriteFileAtomic(dir_.path() + "/run-cdi/broken.json", "{\"kind\": ", 0644).ok());
  const std::vector<GpuCheck> fixes = Fixes(Check());
  ASSERT_EQ(fixes.size(), 1u);
  EXPECT_NE(fixes[0].what.find("CDI spec " + dir_.path() + "/run-cdi/broken.json cannot be read"), std::string::npos)
      << fixes[0].what;
}

}  // namespace
}  // namespace idlegrid::agent
