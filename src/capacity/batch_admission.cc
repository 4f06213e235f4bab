#include "capacity/batch_admission.h"

#include <set>
#include <utility>

namespace idlegrid::capacity {

bool BatchAdmission::AddNode(const std::string& node_id, const v1::NodeInfo& info, const v1::Advertisement& ad) {
  if (info.cpu_cores() == 0) return false;
  nodes_.insert_or_assign(node_id, NodeCapacity::Offered(info, ad));
  return true;
}

void BatchAdmission::Hold(const std::string& node_id, const AttemptHold& h) {
  if (auto it = nodes_.find(node_id); it != nodes_.end()) it->second.Hold(h);
}

std::vector<size_t> BatchAdmission::Admit(const std::vector<BatchCandidate>& batch) {
  std::vector<size_t> admitted;
  std::set<std::pair<std::string, uint32_t>> taken;
  for (size_t i = 0; i < batch.size(); ++i) {
    const BatchCandidate& c = batch[i];
    if (!c.queued || taken.count({c.job_id, c.index})) continue;
    auto node = nodes_.find(c.node_id);
    if (node != nodes_.end() && !node->second.TryHold(c.want).ok()) continue;
    taken.insert({c.job_id, c.index});
    admitted.push_back(i);
  }
  return admitted;
}

}  // namespace idlegrid::capacity
