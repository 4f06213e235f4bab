#pragma once
// Feasibility stages: each decides whether one node can take one Demand and,
// when asked, says why not. Static stages depend only on what does not change
// while a plan is built (so their verdict is cached per task shape and node);
// dynamic stages read free capacity. Device stages narrow `eligible`, the
// mask of the node's devices the task may use. Stages run in the order of
// FeasibilityStages() and the first rejection is the node's reason.
#include <string>
#include <vector>

#include "sched/snapshot.h"

namespace idlegrid::sched {

struct Rejection {
  std::string stage;   // "gpu-free"
  std::string reason;  // the same for every node: "insufficient VRAM (need 20 GiB)"
  std::string detail;  // about this node: "best device has 8 GiB free"
  bool brief = false;  // set by the caller: leave `detail` empty (cheaper)
};

// Returns true if `node` passes. On false, fills `why` when it is not null.
// May clear bits of `*eligible`, never sets any.
using FeasibilityCheck = bool (*)(const NodeState& node, const Demand& d, DeviceMask* eligible, Rejection* why);

// The stage that prices a placement out of a task's remaining maxCost; the
// coordinator looks for it to end a task with cost_cap_reached.
inline constexpr char kStageCostCap[] = "cost-cap";

struct FeasibilityStage {
  const char* name;
  FeasibilityCheck check;
  bool dynamic;  // reads free capacity
};

const std::vector<FeasibilityStage>& FeasibilityStages();

// All devices of `node`, as a mask.
DeviceMask AllDevices(const NodeState& node);

// Runs the static stages (dynamic == false): true and the eligible device mask
// if all pass.
bool StaticFeasible(const NodeState& node, const Demand& d, DeviceMask* eligible, Rejection* why);
// Runs the dynamic stages over a mask from StaticFeasible.
bool DynamicFeasible(const NodeState& node, const Demand& d, DeviceMask* eligible, Rejection* why);
// Whether `task` excluded this node (rejected or lost it before).
bool Excluded(const NodeState& node, const TaskView& task, Rejection* why);

// Devices of `eligible` that can take the demand now (free compute and VRAM).
DeviceMask FreeDevices(const NodeState& node, const Demand& d, DeviceMask eligible);

}  // namespace idlegrid::sched
