// Small pure helpers the node table and the dispatcher share (node_views.h).
#include "coordinator/node_views.h"

namespace idlegrid::coordinator {

std::string StackOf(const v1::Advertisement& ad) {
  std::string stack = ad.agent_version();
  for (const auto& d : ad.inventory().gpus().devices()) {
    if (!d.simulated()) stack += "|" + d.uuid() + "@" + d.driver_version();
  }
  return stack;
}

std::map<std::string, std::vector<store::ActiveAttempt>> GroupByNode(const std::vector<store::ActiveAttempt>& active) {
  std::map<std::string, std::vector<store::ActiveAttempt>> out;
  for (const auto& a : active) out[a.node_id].push_back(a);
  return out;
}

}  // namespace idlegrid::coordinator
