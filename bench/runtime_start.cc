// Containers started per second, one after another, by RuncRuntime and by
// PodmanRuntime, on a FROM scratch image holding the static sandbox probe
// (`probe exit 0`: the container does nothing). Prints figures, asserts
// nothing. Usage: bench_runtime_start [RUNS=100] [runc|podman|both] [single]
// ("single": runc maps only the agent's uid, not its subordinate ids).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/fs.h"
#include "image/oci_builder.h"
#include "image/rootfs_unpack.h"
#include "runtime/podman_runtime.h"
#include "runtime/runc_runtime.h"
#include "runtime/subprocess.h"

using namespace idlegrid;
using Clock = std::chrono::steady_clock;

namespace {

runtime::RunSpec TrivialSpec(const std::string& image_id, int i) {
  runtime::RunSpec spec;
  spec.container_name = "idlegrid-bench-" + std::to_string(::getpid()) + "-" + std::to_string(i);
  spec.image_id = image_id;
  spec.args = {"exit", "0"};
  spec.resources.set_memory_bytes(256 << 20);
  spec.resources.set_pids(64);
  spec.resources.set_disk_bytes(64 << 20);
  return spec;
}

// Runs `runs` trivial containers; returns containers per second, or -1.
double Measure(runtime::ContainerRuntime* rt, const std::string& archive, const std::string& image_id, int runs,
               const char* label) {
  if (Status s = rt->LoadImage(archive, image_id); !s.ok()) {
    std::printf("%s: LoadImage failed: %s\n", label, s.ToString().c_str());
    return -1;
  }
  (void)rt->Run(TrivialSpec(image_id, -1), {}, std::chrono::seconds(60), {});  // warm caches
  const auto start = Clock::now();
  for (int i = 0; i < runs; ++i) {
    Result<runtime::ExitInfo> r = rt->Run(TrivialSpec(image_id, i), {}, std::chrono::seconds(60), {});
    if (!r.ok() || r->exit_code != 0 || !r->error.empty()) {
      std::printf("%s: run %d failed: %s\n", label, i, r.ok() ? r->error.c_str() : r.status().ToString().c_str());
      return -1;
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("%-6s %d runs in %.2f s: %.1f containers/s (%.1f ms each)\n", label, runs, seconds, runs / seconds,
              1000 * seconds / runs);
  return runs / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 100;
  const std::string which = argc > 2 ? argv[2] : "both";
  const bool single_id = argc > 3 && std::string(argv[3]) == "single";
  const std::string work = "/tmp/bench-runtime-start-" + std::to_string(::getpid());
  if (!MakeDirs(work, 0700).ok()) return 1;
  Result<std::string> probe = ReadFile(SANDBOX_PROBE_PATH);
  if (!probe.ok()) {
    std::printf("cannot read the probe: %s\n", probe.status().ToString().c_str());
    return 1;
  }
  Result<image::BuiltImage> built =
      image::BuildOciArchive({{"/probe", *probe, 0755}}, {"/probe"}, "idlegrid-bench-probe", work + "/image.tar");
  if (!built.ok()) return 1;
  const std::string image_id = built->config_digest.substr(7);

  if (which != "podman") {
    runtime::RuncRuntimeOptions options;
    options.state_dir = work + "/runc-state";
    options.bundles_dir = work + "/bundles";
    options.map_subordinate_ids = !single_id;
    auto runc = runtime::NewRuncRuntime(options);
    Measure(runc.get(), built->archive_path, image_id, runs, "runc");
  }
  if (which != "runc") {
    auto podman = runtime::NewPodmanRuntime();
    Measure(podman.get(), built->archive_path, image_id, runs, "podman");
    (void)runtime::RunCommand({"podman", "rmi", "-f", image_id}, std::chrono::seconds(60));
  }
  (void)image::RemoveUnpackedTree(work);
  return 0;
}
