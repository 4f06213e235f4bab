// Python jobs from Debian packages, offline (issue 28): `idlegrid image base`
// makes a numpy-only Debian root with the real mmdebstrap and imports it into
// podman; `idlegrid image build` builds a Containerfile FROM it (no network,
// nothing pulled) and pushes it; a 4-item array of a numpy script runs on two
// agents, every point once, each result equal to the same computation here.
// The base image is made once per process and shared by the tests below;
// they skip, saying why, where mmdebstrap or the Debian mirror is missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/image_base.h"
#include "common/fs.h"
#include "e2e/harness.h"

namespace idlegrid::testing {
namespace {

constexpr char kBaseName[] = "igtest-numpy-base";

// Per item n: sum of i^2 and the mean of sqrt(i) over i = 1..n, and the
// 2-norm of 1..n (through numpy's linalg, so BLAS runs in the sandbox).
constexpr char kComputeScript[] = R"(import os, sys
import numpy as np
n = int(sys.argv[1])
x = np.arange(1, n + 1, dtype=np.float64)
line = "%d %.17g %.17g %.17g\n" % (n, float((x * x).sum()), float(np.sqrt(x).mean()), float(np.linalg.norm(x)))
with open(os.path.join(sys.argv[2], "result.txt"), "w") as f:
    f.write(line)
print("numpy", np.__version__, line, end="")
)";

struct BaseImage {
  std::string skip;   // why the tests cannot run here; "" when the image exists
  std::string error;  // why making it failed (a test failure, not a skip)
  double seconds = 0;
};

// Makes localhost/igtest-numpy-base:latest once per process (removing one
// left by an earlier run first, so runs do not pile up untagged images).
const BaseImage& NumpyBaseImage() {
  static std::once_flag once;
  static BaseImage base;
  std::call_once(once, [] {
    if (RunCommand({"mmdebstrap", "--version"}).exit_code != 0) {
      base.skip = "mmdebstrap is not installed (apt-get install mmdebstrap; scripts/install-deps.sh does)";
      return;
    }
    (void)RunCommand({"podman", "rmi", "--force", cli::BaseImageTag(kBaseName)});
    const auto started = std::chrono::steady_clock::now();
    CmdResult made = RunCommand({IDLEGRID_BINARY, "image", "base", kBaseName, "--packages", "python3-numpy"}, 900);
    base.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (made.exit_code == 0 && Trim(made.out) == cli::BaseImageTag(kBaseName)) return;
    if (made.err.find(cli::kMirrorUnreachable) != std::string::npos) {
      base.skip = "the Debian mirror is unavailable here: " + made.err;
      return;
    }
    base.error = "image base failed (exit " + std::to_string(made.exit_code) + "): " + made.out + made.err;
  });
  return base;
}

struct NumpyResult {
  long n = 0;
  double sum_sq = 0, mean_sqrt = 0, norm = 0;
};

NumpyResult ComputeHere(long n) {
  NumpyResult r{n};
  for (long i = 1; i <= n; ++i) {
    r.sum_sq += static_cast<double>(i) * static_cast<double>(i);
    r.mean_sqrt += std::sqrt(static_cast<double>(i));
  }
  r.mean_sqrt /= static_cast<double>(n);
  r.norm = std::sqrt(r.sum_sq);
  return r;
}

bool Near(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)); }

class PythonJobE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    const BaseImage& base = NumpyBaseImage();
    if (!base.skip.empty()) GTEST_SKIP() << base.skip;
    ASSERT_TRUE(base.error.empty()) << base.error;
    grid_ = std::make_unique<Grid>(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(grid_->StartCoordinator().ok());
  }
  std::unique_ptr<Grid> grid_;
};

TEST_F(PythonJobE2E, NumpyItemsRunOnceEachOnTwoAgentsAndMatchALocalComputation) {
  std::cerr << "base image made in " << NumpyBaseImage().seconds << " s\n";
  for (int n : {1, 2}) {
    Status st = grid_->StartAgent(n);
    ASSERT_TRUE(st.ok()) << st.message();
  }
  auto nodes = grid_->WaitNodes([](const v1::ListNodesResponse& list) {
    int ready = 0;
    for (const auto& node : list.nodes()) ready += node.schedulable() && node.state() == "online";
    return ready == 2;
  });
  ASSERT_TRUE(nodes.ok()) << nodes.status().message();

  const std::string context = grid_->root + "/context";
  ASSERT_TRUE(MakeDirs(context).ok());
  std::ofstream(context + "/compute.py") << kComputeScript;
  std::ofstream(context + "/Containerfile") << "FROM " << kBaseName << "\nCOPY compute.py /app/compute.py\n";
  auto built = grid_->Cli({"image", "build", context, "--name", "igtest-numpy"});
  ASSERT_EQ(built.exit_code, 0) << built.out << built.err;
  const std::string image = Trim(built.out);
  ASSERT_EQ(image.rfind("igtest-numpy@sha256:", 0), 0u) << image;

  const std::vector<long> items = {10, 1000, 123457, 2000000};
  std::string yaml = "apiVersion: idlegrid/v1\nname: numpy-items\nimage: " + image +
                     "\ncommand: [\"python3\", \"/app/compute.py\"]\nargs: [\"{{.n}}\", \"/out\"]\n"
                     "env: {OPENBLAS_NUM_THREADS: \"1\"}\n"
                     "resources:\n  cpu: 1\n  memory: 512Mi\noutput: /out\nrunTimeout: 5m\narray:\n  items:\n";
  for (long n : items) yaml += "    - {n: " + std::to_string(n) + "}\n";
  auto submitted = grid_->Cli({"submit", grid_->WriteFile("numpy.yaml", yaml), "--json"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  const std::string job_id = ParseJson<v1::Job>(submitted.out).id();
  auto ended = grid_->WaitJob(
      job_id, [](const v1::Job& j) { return j.state() == v1::SUCCEEDED || j.state() == v1::FAILED; }, 300000);
  ASSERT_TRUE(ended.ok()) << ended.status().message();
  ASSERT_EQ(ended->state(), v1::SUCCEEDED) << ended->DebugString();

  ASSERT_EQ(ended->tasks_size(), static_cast<int>(items.size()));
  std::set<std::string> nodes_used;
  for (const v1::Task& task : ended->tasks()) {
    ASSERT_EQ(task.attempts_size(), 1) << "task " << task.index() << " ran more than once: " << task.DebugString();
    EXPECT_EQ(task.attempts(0).state(), v1::SUCCEEDED) << task.DebugString();
    nodes_used.insert(task.attempts(0).node_id());
  }
  // Each agent has one CPU and each task takes one: the first placement of
  // four queued tasks puts one on each.
  EXPECT_EQ(nodes_used.size(), 2u) << ended->DebugString();

  const std::string fetched = grid_->root + "/fetched";
  auto fetch = grid_->Cli({"fetch", job_id, fetched});
  ASSERT_EQ(fetch.exit_code, 0) << fetch.err;
  for (size_t i = 0; i < items.size(); ++i) {
    auto text = ReadFile(fetched + "/task-" + std::to_string(i) + "/result.txt");
    ASSERT_TRUE(text.ok()) << text.status().message();
    std::istringstream in(*text);
    NumpyResult got;
    ASSERT_TRUE(in >> got.n >> got.sum_sq >> got.mean_sqrt >> got.norm) << *text;
    const NumpyResult want = ComputeHere(items[i]);
    EXPECT_EQ(got.n, want.n) << "task " << i;
    EXPECT_TRUE(Near(got.sum_sq, want.sum_sq)) << "task " << i << ": " << got.sum_sq << " vs " << want.sum_sq;
    EXPECT_TRUE(Near(got.mean_sqrt, want.mean_sqrt))
        << "task " << i << ": " << got.mean_sqrt << " vs " << want.mean_sqrt;
    EXPECT_TRUE(Near(got.norm, want.norm)) << "task " << i << ": " << got.norm << " vs " << want.norm;
  }
}

// A package the suite does not have: mmdebstrap's own words and the name.
TEST_F(PythonJobE2E, AMissingPackageIsNamed) {
  auto made = RunCommand({IDLEGRID_BINARY, "image", "base", "igtest-never-made", "--packages",
                          "python3-numpy,python3-igtest-no-such-package"},
                         600);
  EXPECT_EQ(made.exit_code, 1) << made.out << made.err;
  EXPECT_EQ(made.out, "");
  EXPECT_NE(made.err.find("E: Unable to locate package python3-igtest-no-such-package"), std::string::npos) << made.err;
  EXPECT_NE(made.err.find("hint: the package \"python3-igtest-no-such-package\" does not exist"), std::string::npos)
      << made.err;
  auto exists = RunCommand({"podman", "image", "exists", cli::BaseImageTag("igtest-never-made")});
  EXPECT_NE(exists.exit_code, 0) << "nothing was imported";
}

}  // namespace
}  // namespace idlegrid::testing
