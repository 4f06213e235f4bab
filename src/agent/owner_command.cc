#include "agent/owner_command.h"

#include <algorithm>
#include <sstream>

namespace idlegrid::agent {

std::string OwnerCommandPath(const std::string& data_dir) { return data_dir + "/owner-pause"; }

std::string FormatOwnerCommand(const OwnerCommand& c) {
  std::string out = "since_ms " + std::to_string(c.since_ms) + "\nuntil_ms " + std::to_string(c.until_ms) + "\n";
  if (!c.for_text.empty()) out += "for " + c.for_text + "\n";
  for (const auto& g : c.gpus) out += "gpu " + g + "\n";
  return out;
}

namespace {

Result<int64_t> Millis(const std::string& value, int line) {
  if (value.empty() || value.size() > 18 || value.find_first_not_of("0123456789") != std::string::npos) {
    return Status::InvalidArgument("line " + std::to_string(line) + ": \"" + value + "\" is not a time in ms");
  }
  return std::stoll(value);
}

}  // namespace

Result<OwnerCommand> ParseOwnerCommand(const std::string& text) {
  OwnerCommand c;
  std::istringstream in(text);
  std::string row;
  for (int line = 1; std::getline(in, row); ++line) {
    if (row.empty()) continue;
    const size_t space = row.find(' ');
    const std::string key = row.substr(0, space);
    const std::string value = space == std::string::npos ? "" : row.substr(space + 1);
    if (key == "since_ms") {
      IG_ASSIGN_OR_RETURN(c.since_ms, Millis(value, line));
    } else if (key == "until_ms") {
      IG_ASSIGN_OR_RETURN(c.until_ms, Millis(value, line));
    } else if (key == "for" && !value.empty()) {
      c.for_text = value;
    } else if (key == "gpu" && !value.empty()) {
      c.gpus.push_back(value);
    } else {
      return Status::InvalidArgument("line " + std::to_string(line) + ": unknown \"" + row + "\"");
    }
  }
  return c;
}

bool OwnerCommandExpired(const OwnerCommand& c, int64_t now_ms) { return c.until_ms > 0 && now_ms >= c.until_ms; }

std::string DescribeOwnerCommand(const OwnerCommand& c) {
  std::string out = "the owner ran idlegrid agent pause";
  for (const auto& g : c.gpus) out += " --gpu " + g;
  if (!c.for_text.empty()) out += " --for " + c.for_text;
  return out;
}

bool IsGpuSelector(const std::string& t) {
  const bool index = !t.empty() && t.size() < 4 && t.find_first_not_of("0123456789") == std::string::npos;
  return index || t.rfind("GPU-", 0) == 0 || t.rfind("MIG-", 0) == 0;
}

bool GpuSelected(const std::vector<std::string>& selectors, const v1::GpuDevice& d) {
  return std::any_of(selectors.begin(), selectors.end(), [&](const std::string& s) {
    return s == std::to_string(d.index()) || (!d.uuid().empty() && s == d.uuid());
  });
}

std::string GpuOwnerHold(const std::optional<std::vector<std::string>>& lend_gpus,
                         const std::optional<OwnerCommand>& command, const v1::GpuDevice& d) {
  if (lend_gpus && !GpuSelected(*lend_gpus, d)) return "not lent (policy.yaml lendGpus)";
  if (command && !command->gpus.empty() && GpuSelected(command->gpus, d)) {
    return "paused: " + DescribeOwnerCommand(*command);
  }
  return "";
}

}  // namespace idlegrid::agent
