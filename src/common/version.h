#pragma once
// This build's version (CMake's PROJECT_VERSION) and the version-skew rule
// between agents and coordinators (docs/operations.md, "Upgrades"): pure.
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace idlegrid {

struct Version {
  int major = 0;
  int minor = 0;
  int patch = 0;
  std::string ToString() const;
};

// This binary's version, e.g. "0.1.0", as text and as numbers.
const char* BuildVersion();
Version BuildVersionParts();
// What an agent reports as NodeInfo.agent_version: "idlegrid-agent/0.1.0".
std::string AgentVersionString();

// "1.2.3", or "idlegrid-agent/1.2.3"; a suffix after the patch ("~rc1",
// "-dev", " (bench)") is ignored. nullopt for anything else.
std::optional<Version> ParseVersion(std::string_view text);

// The rule: an agent's major and minor must equal the coordinator's, or its
// minor may be exactly one behind (coordinators are upgraded first, agents
// follow within one minor release). An agent newer than its coordinator is
// refused, as is one that reports no version it can parse. FailedPrecondition
// with what to upgrade, or Ok.
Status CheckAgentSkew(std::string_view agent_version, const Version& coordinator);

}  // namespace idlegrid
