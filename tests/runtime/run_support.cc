#include "runtime/run_support.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

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

std::map<std::string, std::string> ProbeReport(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

}  // namespace idlegrid::runtime
