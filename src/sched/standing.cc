#include "sched/standing.h"

#include <cstdio>

#include "verify/standing.h"

namespace idlegrid::sched {

bool StandingCap::Applies(const TaskView& task) const {
  if (state_.unproven_share >= 1 || !task.verified || task.readiness) return false;
  auto it = task.excluded_nodes.lower_bound(kOnlyProvider);
  return it == task.excluded_nodes.end() || it->rfind(kOnlyProvider, 0) != 0;
}

bool StandingCap::Proven(const std::string& provider, const std::string& image) const {
  auto it = state_.proven.find(image);
  return it != state_.proven.end() && it->second.count(provider) > 0;
}

bool StandingCap::UnprovenMayTake(bool any_proven) const {
  return verify::UnprovenMayTake({state_.unproven_share}, state_.unproven_in_flight, state_.verified_in_flight,
                                 any_proven);
}

void StandingCap::Placed(const TaskView& task, const std::string& provider) {
  if (!Applies(task)) return;
  ++state_.verified_in_flight;
  if (!Proven(provider, task.image)) ++state_.unproven_in_flight;
}

std::string StandingCap::WaitingReason() const {
  char line[240];
  std::snprintf(line, sizeof line,
                "held for a proven provider: unproven providers hold %llu of %llu verified tasks in flight "
                "(cap %.3g%%, --verification-unproven-share); it starts when a proven provider has room",
                static_cast<unsigned long long>(state_.unproven_in_flight),
                static_cast<unsigned long long>(state_.verified_in_flight), state_.unproven_share * 100);
  return line;
}

}  // namespace idlegrid::sched
