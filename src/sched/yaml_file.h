#pragma once
// What the policy file's parsers share: YAML read with its errors as values,
// each naming the file and line.
#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

#include "common/status.h"

namespace idlegrid::sched {

// "FILE:LINE: message" (line 1 when YAML gives no position).
inline Status YamlError(const std::string& filename, const YAML::Mark& mark, const std::string& message) {
  const int line = mark.is_null() ? 1 : mark.line + 1;
  return Status::InvalidArgument(filename + ":" + std::to_string(line) + ": " + message);
}

// Loads `text` and hands its root to `parse_root`; invalid YAML (or a
// yaml-cpp exception while reading it) becomes a YamlError.
template <typename ParseRoot>
auto ParseYamlText(const std::string& filename, std::string_view text, ParseRoot&& parse_root)
    -> decltype(parse_root(YAML::Node())) {
  try {
    return parse_root(YAML::Load(std::string(text)));
  } catch (const YAML::Exception& e) {
    return YamlError(filename, e.mark, "invalid YAML: " + e.msg);
  }
}

}  // namespace idlegrid::sched
