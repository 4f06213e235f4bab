#include "cli/agent_pause.h"

#include <ctime>
#include <filesystem>
#include <iostream>

#include "agent/owner_command.h"
#include "common/clock.h"
#include "common/fs.h"
#include "manifest/manifest.h"

namespace idlegrid::cli {

namespace {

std::string LocalTime(int64_t ms) {
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S %Z", &tm);
  return buf;
}

}  // namespace

int AgentPause(const std::string& data_dir, const std::string& for_text, const std::vector<std::string>& gpus) {
  agent::OwnerCommand c;
  c.since_ms = SystemClock::Get()->NowMs();
  if (!for_text.empty()) {
    auto secs = manifest::ParseDurationSeconds(for_text);
    if (!secs.ok() || *secs == 0) {
      std::cerr << "error: --for " << for_text << ": "
                << (secs.ok() ? std::string("must be longer than 0") : secs.status().message())
                << " (e.g. --for 2h, --for 30m)\n";
      return 2;
    }
    c.until_ms = c.since_ms + int64_t{*secs} * 1000;
    c.for_text = for_text;
  }
  for (const auto& g : gpus) {
    if (!agent::IsGpuSelector(g)) {
      std::cerr << "error: --gpu " << g << ": expected a GPU index (0, 1, ...) or UUID (GPU-...)\n";
      return 2;
    }
    c.gpus.push_back(g);
  }
  if (!std::filesystem::is_directory(data_dir)) {
    std::cerr << "error: " << data_dir << " is not the agent's data directory (no such directory; give --data-dir)\n";
    return 1;
  }
  const std::string path = agent::OwnerCommandPath(data_dir);
  if (Status st = WriteFileAtomic(path, agent::FormatOwnerCommand(c), 0644); !st.ok()) {
    std::cerr << "error: " << st.message() << "\n";
    return 1;
  }
  std::cout << (gpus.empty() ? "node" : "GPU(s)");
  for (const auto& g : gpus) std::cout << " " << g;
  std::cout << " paused " << (c.until_ms > 0 ? "until " + LocalTime(c.until_ms) : std::string("until resumed"))
            << ": at its next poll the agent hands back GPU jobs that have a checkpoint directory and freezes "
               "the rest (policy.yaml pauseWhen.gpuJobs), and takes no new work"
            << (gpus.empty() ? "" : " on these GPUs") << ".\n`idlegrid agent resume` ends it (" << path << ").\n";
  return 0;
}

int AgentResume(const std::string& data_dir) {
  const std::string path = agent::OwnerCommandPath(data_dir);
  std::error_code ec;
  if (!std::filesystem::remove(path, ec)) {
    if (ec) {
      std::cerr << "error: " << path << ": " << ec.message() << "\n";
      return 1;
    }
    std::cout << "not paused by `idlegrid agent pause` (no " << path
              << "); a pause from the policy (pauseWhen) ends when its condition clears\n";
    return 0;
  }
  std::cout << "resumed: the agent thaws its frozen jobs and takes work again at its next poll\n";
  return 0;
}

}  // namespace idlegrid::cli
