#pragma once
// How manifest errors echo a value: quoted, and cut to its first 80 bytes
// (with the full length) so a 100,000-character value does not become a
// 100,000-character error message.
#include <string>
#include <string_view>

namespace idlegrid::manifest {

inline constexpr size_t kMaxEchoedBytes = 80;

inline std::string Quote(std::string_view s) {
  if (s.size() <= kMaxEchoedBytes) return "\"" + std::string(s) + "\"";
  return "\"" + std::string(s.substr(0, kMaxEchoedBytes)) + "...\" (" + std::to_string(s.size()) + " bytes)";
}

}  // namespace idlegrid::manifest
