// Coordinator::StandingStateOf: the fleet as the node table knows it, handed
// to the standing reader (standing_reader.h).
#include "coordinator/coordinator.h"

namespace idlegrid::coordinator {

sched::StandingState Coordinator::StandingStateOf(const std::vector<store::QueuedTask>& queued,
                                                  const std::vector<store::ActiveAttempt>& active) {
  StandingReader::Fleet fleet;
  {
    MutexLock lock(&mu_);
    for (const auto& [id, n] : nodes_) {
      fleet.provider_of[id] = n.provider;
      fleet.providers.insert(n.provider);
      if (n.online && sessions_.Connected(id)) fleet.taking.insert(n.provider);
    }
  }
  return standing_.Read(queued, active, fleet);
}

}  // namespace idlegrid::coordinator
