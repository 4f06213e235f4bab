#include "runtime/run_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <vector>

namespace idlegrid::runtime {

Outcome MustRun(ContainerRuntime* runtime, const RunSpec& spec, std::chrono::milliseconds timeout,
                const std::function<void()>& on_started) {
  Outcome o;
  const auto start = std::chrono::steady_clock::now();
  Result<ExitInfo> r = runtime->Run(
      spec, [&](const std::string& stream, std::string_view data) { (stream == "stdout" ? o.out : o.err) += data; },
      timeout, on_started);
  o.took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (r.ok()) o.exit = *r;
  return o;
}

std::string SandboxProbePath() {
  const char* over = std::getenv(kSandboxProbeEnv);
  return over != nullptr && *over != '\0' ? std::string(over) : std::string(SANDBOX_PROBE_PATH);
}

namespace {

bool Listed(ContainerRuntime* runtime, const std::string& name) {
  Result<std::vector<std::string>> names = runtime->ListContainers();
  EXPECT_TRUE(names.ok()) << names.status().ToString();
  return names.ok() && std::find(names->begin(), names->end(), name) != names->end();
}

}  // namespace

void ExpectTimeoutStopsAndRemoves(ContainerRuntime* runtime, const RunSpec& spec) {
  Outcome o = MustRun(runtime, spec, std::chrono::milliseconds(1500));
  EXPECT_TRUE(o.exit.timed_out);
  EXPECT_FALSE(o.exit.killed);
  EXPECT_TRUE(o.exit.error.empty()) << o.exit.error;
  EXPECT_LT(o.took, std::chrono::seconds(15));
  EXPECT_FALSE(Listed(runtime, spec.container_name));
}

void ExpectKillFromAnotherThreadStops(ContainerRuntime* runtime, const RunSpec& spec) {
  using std::chrono::seconds;
  using std::chrono::steady_clock;
  Outcome o;
  std::thread runner([&] { o = MustRun(runtime, spec, seconds(60)); });
  // Polled (bounded): no runtime event says "created"; this is also the
  // ListContainers check.
  bool listed = false;
  for (auto until = steady_clock::now() + seconds(20); !listed && steady_clock::now() < until;) {
    listed = Listed(runtime, spec.container_name);
  }
  EXPECT_TRUE(listed);
  const auto kill_at = steady_clock::now();
  EXPECT_TRUE(runtime->Kill(spec.container_name).ok());
  runner.join();
  EXPECT_LT(steady_clock::now() - kill_at, seconds(10));
  EXPECT_TRUE(o.exit.killed);
  EXPECT_FALSE(o.exit.timed_out);
  EXPECT_FALSE(o.exit.oom);
  EXPECT_TRUE(o.exit.error.empty()) << o.exit.error;
  EXPECT_TRUE(runtime->Kill(spec.container_name).ok());  // already gone is fine
  EXPECT_FALSE(Listed(runtime, spec.container_name));
}

void ExpectFrozenTimeIsNotRunTime(ContainerRuntime* runtime, const RunSpec& spec) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  using std::chrono::steady_clock;
  Outcome o;
  std::thread runner([&] { o = MustRun(runtime, spec, seconds(6)); });
  // Polled (bounded): Freeze says NotFound until the container exists.
  Status frozen = Status::NotFound("not tried");
  for (auto until = steady_clock::now() + seconds(20); steady_clock::now() < until;) {
    frozen = runtime->Freeze(spec.container_name);
    if (frozen.code() != Code::kNotFound) break;
  }
  if (!frozen.ok()) {
    ADD_FAILURE() << "never frozen: " << frozen.message();
    runner.join();
    return;
  }
  // The freeze itself is what is under test: longer than the whole timeout.
  std::this_thread::sleep_for(seconds(7));
  EXPECT_TRUE(runtime->Thaw(spec.container_name).ok());
  runner.join();
  EXPECT_FALSE(o.exit.timed_out) << "the freeze counted against the timeout";
  EXPECT_EQ(o.exit.exit_code, 0) << o.err;
  EXPECT_GE(o.exit.paused_ms, 6900);
  EXPECT_LT(o.exit.paused_ms, 20'000);
}

}  // namespace idlegrid::runtime
