// bench/dispatch: with one idle agent and the image already loaded, submits
// 100 one-task jobs one after another and reports submit -> container started
// and submit -> job succeeded latencies, next to a plain `podman run` of the
// same image with the same sandbox flags, measured in the same run.
// Prints figures; asserts nothing. Needs root (it creates the agent's user).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "common/grpc_status.h"
#include "common/clock.h"
#include "e2e/harness.h"
#include "jobs/task_state.h"
#include "manifest/manifest.h"

using namespace idlegrid;
using namespace idlegrid::testing;

namespace {

double Pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

void Print(const char* what, const std::vector<double>& ms) {
  std::printf("%-42s n=%-4zu p50=%7.1f ms  p99=%7.1f ms  min=%7.1f  max=%7.1f\n", what, ms.size(), Pct(ms, 50),
              Pct(ms, 99), Pct(ms, 0), Pct(ms, 100));
}

double NowMs() { return static_cast<double>(SystemClock::Get()->NowMs()); }

}  // namespace

int main(int argc, char** argv) {
  int jobs = argc > 1 ? std::atoi(argv[1]) : 100;
  int plain_runs = argc > 2 ? std::atoi(argv[2]) : 30;
  Grid grid("bench-dispatch");
  if (!grid.StartCoordinator().ok() || !grid.StartAgent(1).ok()) {
    std::fprintf(stderr, "cannot start the grid\n");
    return 1;
  }
  std::string manifest_path = grid.Manifest("bench", {"write", "bench"});
  auto spec = manifest::LoadManifestFile(manifest_path);
  if (!spec.ok()) return 1;
  v1::SubmitJobRequest req;
  *req.mutable_spec() = *spec;

  auto run_one = [&](double* started_ms, double* done_ms) -> bool {
    double t0 = NowMs();
    v1::SubmitJobResponse resp;
    auto ctx = grid.client()->Context();
    if (!grid.client()->stub()->SubmitJob(ctx.get(), req, &resp).ok()) return false;
    auto job = grid.WaitJob(resp.job().id(), [](const v1::Job& j) { return jobs::IsSettled(j); });
    double t1 = NowMs();
    if (!job.ok() || job->state() != v1::SUCCEEDED) return false;
    *started_ms = static_cast<double>(job->tasks(0).attempts(0).started_at_ms()) - t0;
    *done_ms = t1 - t0;
    return true;
  };
  double s, d;
  if (!run_one(&s, &d)) {  // warm-up: the agent downloads, verifies and loads the image
    std::fprintf(stderr, "warm-up job failed\n");
    return 1;
  }
  std::vector<double> started, done;
  for (int i = 0; i < jobs; ++i) {
    if (!run_one(&s, &d)) {
      std::fprintf(stderr, "job %d failed\n", i);
      return 1;
    }
    started.push_back(s);
    done.push_back(d);
  }

  // Plain podman: same image, same flags the agent uses, as the agent's user.
  std::string image_id;
  {
    auto r = RunCommand(AsAgentUser(grid, 1, {"podman", "images", "-q", "--no-trunc"}));
    image_id = r.out.substr(0, r.out.find('\n'));
    if (image_id.rfind("sha256:", 0) == 0) image_id = image_id.substr(7);
  }
  std::string out_dir = grid.AgentDataDir(1) + "/plain-out";
  RunCommand(AsAgentUser(grid, 1, {"mkdir", "-p", out_dir}));
  std::vector<double> plain;
  for (int i = 0; i < plain_runs; ++i) {
    double t0 = NowMs();
    auto r = RunCommand(AsAgentUser(grid, 1,
                                    {"podman",
                                     "run",
                                     "--rm",
                                     "--pull",
                                     "never",
                                     "--network",
                                     "none",
                                     "--read-only",
                                     "--cap-drop",
                                     "all",
                                     "--security-opt",
                                     "no-new-privileges",
                                     "--ulimit",
                                     "nofile=1024:1024",
                                     "--ulimit",
                                     "nproc=4096:4096",
                                     "--ulimit",
                                     "data=268435456:268435456",
                                     "-v",
                                     out_dir + ":/out:rw",
                                     "--entrypoint",
                                     "[\"/sim\"]",
                                     image_id,
                                     "write",
                                     "plain"}));
    if (r.exit_code != 0) {
      std::fprintf(stderr, "plain podman run failed: %s\n", r.err.c_str());
      return 1;
    }
    plain.push_back(NowMs() - t0);
  }
  std::printf("dispatch benchmark: %d one-task jobs, one idle agent (rootless podman, runc), image cached\n", jobs);
  Print("submit -> container started (agent report)", started);
  Print("submit -> job succeeded, outputs stored", done);
  Print("plain `podman run --rm` of the same image", plain);
  std::printf("overhead vs plain podman (p50 of job - p50 of podman run): %.1f ms; p99: %.1f ms\n",
              Pct(done, 50) - Pct(plain, 50), Pct(done, 99) - Pct(plain, 99));
  return 0;
}
