#pragma once
// Placement by standing (verify/standing.h): unproven provider accounts
// (fewer verified results in a row for the task's image than the trust
// threshold; every fresh identity) together hold at most a share of the
// verified work in flight. The pipeline asks this before it places a
// verified task on a node and tells it what it placed, so the share holds
// within one plan as well as across plans. Pure.
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "sched/scheduler.h"

namespace idlegrid::sched {

class StandingCap {
 public:
  explicit StandingCap(const StandingState& state) : state_(state) {}

  // Whether the cap weighs this task at all: verified work, and neither a
  // readiness benchmark nor a known-answer check (meant for one provider).
  bool Applies(const TaskView& task) const;
  bool Proven(const std::string& provider, const std::string& image) const;
  // Whether one more of `task`'s kind may go to an unproven account now;
  // `any_proven`: some proven account could take it.
  bool UnprovenMayTake(bool any_proven) const;
  // Counts a placement of `task` on a node of `provider`.
  void Placed(const TaskView& task, const std::string& provider);
  // Plan::waiting's reason for a task that waits only because of the cap.
  std::string WaitingReason() const;

 private:
  StandingState state_;
};

}  // namespace idlegrid::sched
