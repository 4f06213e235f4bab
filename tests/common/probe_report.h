#pragma once
// The "key=value" lines probe programs print (tests/runtime's probes, the
// hostile battery's tests/e2e/hostile_probe.c), as a map; other lines skipped.
#include <map>
#include <sstream>
#include <string>

namespace idlegrid::testing {

inline std::map<std::string, std::string> ProbeReport(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

}  // namespace idlegrid::testing
