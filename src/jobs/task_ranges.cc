#include "jobs/task_ranges.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "jobs/task_state.h"

namespace idlegrid::jobs {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

Status BadPart(std::string_view part, size_t at, const std::string& why) {
  return Status::InvalidArgument("task list: '" + std::string(part) + "' at character " + std::to_string(at + 1) +
                                 ": " + why + " (expected indices and ranges such as 3,7-9)");
}

Result<uint32_t> ParseIndex(std::string_view whole_part, std::string_view digits, size_t at) {
  digits = Trim(digits);
  if (digits.empty()) return BadPart(whole_part, at, "a range needs both ends");
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && value > UINT32_MAX)) {
    return BadPart(whole_part, at, "index too large");
  }
  if (ec != std::errc() || end != digits.data() + digits.size()) {
    return BadPart(whole_part, at, "'" + std::string(digits) + "' is not a task index");
  }
  return static_cast<uint32_t>(value);
}

}  // namespace

Result<std::vector<uint32_t>> ParseTaskRanges(std::string_view text) {
  std::set<uint32_t> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view raw = text.substr(start, comma - start);
    const std::string_view part = Trim(raw);
    const size_t lead = raw.find_first_not_of(' ');
    const size_t at = start + (lead == std::string_view::npos ? 0 : lead);
    if (part.empty()) return BadPart(part, at, "empty entry");
    const size_t dash = part.find('-');
    uint32_t first = 0, last = 0;
    if (dash == std::string_view::npos) {
      IG_ASSIGN_OR_RETURN(first, ParseIndex(part, part, at));
      last = first;
    } else {
      IG_ASSIGN_OR_RETURN(first, ParseIndex(part, part.substr(0, dash), at));
      IG_ASSIGN_OR_RETURN(last, ParseIndex(part, part.substr(dash + 1), at));
      if (last < first) return BadPart(part, at, "the range ends before it starts");
    }
    if (static_cast<uint64_t>(last) - first + 1 + out.size() > kMaxSelectedTasks) {
      return BadPart(part, at, "more than " + std::to_string(kMaxSelectedTasks) + " tasks selected");
    }
    for (uint64_t i = first; i <= last; ++i) out.insert(static_cast<uint32_t>(i));
    start = comma + 1;
  }
  return std::vector<uint32_t>(out.begin(), out.end());
}

Result<std::vector<v1::TaskState>> ParseTaskStates(const std::vector<std::string>& values) {
  std::vector<v1::TaskState> out;
  for (const std::string& value : values) {
    size_t start = 0;
    while (start <= value.size()) {
      size_t comma = value.find(',', start);
      if (comma == std::string::npos) comma = value.size();
      const std::string name(Trim(std::string_view(value).substr(start, comma - start)));
      std::string known;
      bool found = false;
      for (int s = v1::TaskState_MIN; s <= v1::TaskState_MAX; ++s) {
        if (!v1::TaskState_IsValid(s) || s == v1::TASK_STATE_UNSPECIFIED) continue;
        const auto state = static_cast<v1::TaskState>(s);
        known += std::string(known.empty() ? "" : ", ") + jobs::StateName(state);
        if (name != jobs::StateName(state)) continue;
        found = true;
        if (std::find(out.begin(), out.end(), state) == out.end()) out.push_back(state);
      }
      if (!found) return Status::InvalidArgument("unknown task state '" + name + "' (known: " + known + ")");
      start = comma + 1;
    }
  }
  return out;
}

}  // namespace idlegrid::jobs
