#pragma once
// A task's cost cap (spec.max_cost) covers all of its attempts. These are the
// dispatcher's rules for a task that spent part of it, pure: plain values
// in, a verdict out; the dispatcher (coordinator/dispatcher.cc) reads what was spent and
// fails the task in the store.
#include <string>

#include "sched/pipeline.h"

namespace idlegrid::sched {

// Before planning: a capped task (max_cost > 0) whose attempts spent at least
// its cap is not planned again. The failure message then (with how many
// attempts spent it), "" otherwise.
std::string CapSpentReason(double spent, double max_cost, int attempts);

// The cap the next attempt is planned under (sched::TaskView::max_cost): what
// is left of it, never quite 0 (which would read "no cap"); 0 when uncapped.
double BudgetLeft(double max_cost, double spent);

// After planning: a capped task that spent part of its cap and still waits
// stops (rather than waiting out its queue timeout) when `why` -- the plan's
// reason, as the nodes stand after it -- shows no feasible node and at least
// one removed by the cost-cap stage. The failure message then, "" otherwise
// (it waits for something other than money).
std::string PricedOutReason(const sched::WaitReason& why, double spent, double max_cost);

}  // namespace idlegrid::sched
