#include "sched/cost_cap.h"

#include <algorithm>
#include <cstdio>

#include "sched/feasibility.h"

namespace idlegrid::sched {

std::string CapSpentReason(double spent, double max_cost, int attempts) {
  if (max_cost <= 0 || spent < max_cost) return "";
  char msg[200];
  std::snprintf(msg, sizeof msg, "spent %.4f of maxCost %.4f over %d attempt(s); not run again", spent, max_cost,
                attempts);
  return msg;
}

double BudgetLeft(double max_cost, double spent) { return max_cost > 0 ? std::max(max_cost - spent, 1e-9) : 0; }

std::string PricedOutReason(const sched::WaitReason& why, double spent, double max_cost) {
  if (max_cost <= 0 || spent <= 0 || why.feasible_nodes > 0) return "";
  if (!why.filtered_by.count(sched::kStageCostCap)) return "";
  char msg[240];
  std::snprintf(msg, sizeof msg,
                "spent %.4f of maxCost %.4f; the %.4f left cannot pay for another run at the current asks", spent,
                max_cost, max_cost - spent);
  return msg;
}

}  // namespace idlegrid::sched
