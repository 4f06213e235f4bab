#include "common/failpoint.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

namespace idlegrid::failpoint {
namespace {

struct Armed {
  bool crash = true;
  int on_hit = 1;
  int hits = 0;
};

// Parsed once from the environment; a malformed entry is logged and ignored
// (a test that armed nothing then sees its fault never happen and fails).
class Registry {
 public:
  Registry() {
    if (const char* gate = std::getenv("IDLEGRID_FAILPOINTS_GATE")) gate_ = gate;
    const char* spec = std::getenv("IDLEGRID_FAILPOINTS");
    if (spec == nullptr) return;
    std::string all(spec);
    size_t start = 0;
    while (start <= all.size()) {
      size_t end = all.find(',', start);
      if (end == std::string::npos) end = all.size();
      Add(all.substr(start, end - start));
      start = end + 1;
    }
  }

  bool Hit(std::string_view name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = armed_.find(std::string(name));
    if (it == armed_.end()) return false;
    // Hits before the gate file exists do not count (start-up work, such as
    // a node's readiness benchmark, passes the same steps).
    if (!gate_.empty() && !gate_open_) {
      if (::access(gate_.c_str(), F_OK) != 0) return false;
      gate_open_ = true;
    }
    if (++it->second.hits != it->second.on_hit) return false;
    if (it->second.crash) {
      spdlog::warn("failpoint {}: crashing (SIGKILL) on hit {}", name, it->second.hits);
      spdlog::default_logger()->flush();
      ::kill(::getpid(), SIGKILL);
      ::_exit(137);  // not reached
    }
    spdlog::warn("failpoint {}: failing the step on hit {}", name, it->second.hits);
    return true;
  }

 private:
  void Add(const std::string& entry) {
    if (entry.empty()) return;
    const size_t eq = entry.find('=');
    std::string name = entry.substr(0, eq);
    std::string action = eq == std::string::npos ? "crash" : entry.substr(eq + 1);
    Armed a;
    if (const size_t at = action.find('@'); at != std::string::npos) {
      a.on_hit = std::atoi(action.c_str() + at + 1);
      action.resize(at);
    }
    if ((action != "crash" && action != "error") || a.on_hit < 1 || name.empty()) {
      spdlog::error("IDLEGRID_FAILPOINTS: ignoring '{}' (NAME=crash|error[@N])", entry);
      return;
    }
    a.crash = action == "crash";
    spdlog::warn("failpoint {} armed: {} on hit {}", name, action, a.on_hit);
    armed_[name] = a;
  }

  std::mutex mu_;
  std::map<std::string, Armed> armed_;
  std::string gate_;
  bool gate_open_ = false;
};

}  // namespace

__attribute__((weak)) bool BuiltIn() { return false; }

bool Hit(std::string_view name) {
  static Registry registry;
  return registry.Hit(name);
}

}  // namespace idlegrid::failpoint
