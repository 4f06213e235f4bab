#include "common/version.h"

#include <charconv>

namespace idlegrid {

namespace {

// The digits at the front of `text`, consumed; nullopt when there are none.
std::optional<int> TakeNumber(std::string_view& text) {
  if (text.empty() || text.front() < '0' || text.front() > '9') return std::nullopt;  // from_chars takes a '-'
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  text.remove_prefix(static_cast<size_t>(end - text.data()));
  return value;
}

bool TakeDot(std::string_view& text) {
  if (text.empty() || text.front() != '.') return false;
  text.remove_prefix(1);
  return true;
}

}  // namespace

std::string Version::ToString() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

const char* BuildVersion() { return IDLEGRID_VERSION; }

Version BuildVersionParts() {
  static const Version parts = ParseVersion(BuildVersion()).value_or(Version{});
  return parts;
}

std::string AgentVersionString() { return std::string("idlegrid-agent/") + BuildVersion(); }

std::optional<Version> ParseVersion(std::string_view text) {
  constexpr std::string_view kPrefix = "idlegrid-agent/";
  if (text.substr(0, kPrefix.size()) == kPrefix) text.remove_prefix(kPrefix.size());
  Version v;
  auto major = TakeNumber(text);
  if (!major || !TakeDot(text)) return std::nullopt;
  auto minor = TakeNumber(text);
  if (!minor || !TakeDot(text)) return std::nullopt;
  auto patch = TakeNumber(text);
  if (!patch) return std::nullopt;
  if (!text.empty() && text.front() == '.') return std::nullopt;  // four numbers: not a version of ours
  v.major = *major;
  v.minor = *minor;
  v.patch = *patch;
  return v;
}

Status CheckAgentSkew(std::string_view agent_version, const Version& coordinator) {
  const std::string coord = coordinator.ToString();
  auto agent = ParseVersion(agent_version);
  if (!agent) {
    return Status::FailedPrecondition("agent version \"" + std::string(agent_version) +
                                      "\" is not one this coordinator (" + coord +
                                      ") can check: upgrade the agent to " + coord);
  }
  const std::string mine = agent->ToString();
  if (agent->major != coordinator.major) {
    return Status::FailedPrecondition(
        "agent " + mine + " and coordinator " + coord + " differ in major version: upgrade " +
        (agent->major < coordinator.major ? "the agent" : "the coordinator") + " (docs/operations.md, Upgrades)");
  }
  if (agent->minor > coordinator.minor) {
    return Status::FailedPrecondition("agent " + mine + " is newer than coordinator " + coord +
                                      ": upgrade the coordinator first (docs/operations.md, Upgrades)");
  }
  if (agent->minor + 1 < coordinator.minor) {
    return Status::FailedPrecondition("agent " + mine + " is more than one minor release behind coordinator " + coord +
                                      ": upgrade the agent (docs/operations.md, Upgrades)");
  }
  return Status::Ok();
}

}  // namespace idlegrid
