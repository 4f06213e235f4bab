#pragma once
// Small pure helpers the node table and the dispatcher share.
#include <map>
#include <string>
#include <vector>

#include "idlegrid/v1/idlegrid.pb.h"
#include "store/store.h"

namespace idlegrid::coordinator {

// What a readiness measurement is valid for: the agent's version and each
// real GPU's uuid and driver, so a new agent or driver is measured again.
std::string StackOf(const v1::Advertisement& ad);

// Active attempts by node id, so per-node work does not rescan them all.
std::map<std::string, std::vector<store::ActiveAttempt>> GroupByNode(const std::vector<store::ActiveAttempt>& active);

}  // namespace idlegrid::coordinator
