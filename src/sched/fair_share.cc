#include "sched/fair_share.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "sched/snapshot.h"

namespace idlegrid::sched {

ResourceAmounts AmountsOf(double cpu, uint64_t memory, uint32_t devices, const capacity::DeviceClaim& claim) {
  ResourceAmounts out;
  out.cpu = std::max(cpu, 0.0);
  out.memory_bytes = static_cast<double>(memory);
  out.gpus = devices * (claim.whole ? 1.0 : claim.milli / static_cast<double>(kWholeGpuMilli));
  return out;
}

ResourceAmounts DemandOf(const TaskView& task) {
  // MakeDemand is the scheduler's one reading of a task; the policy and the
  // (empty) snapshot only matter for ranking and model ids.
  static const SchedulingPolicy kAny{"fair-share", {}, Packing::kSpread, false};
  static const Snapshot kNoNodes;
  const Demand d = MakeDemand(task, kAny, kNoNodes);
  return AmountsOf(d.cpu, d.memory, d.gpus, d.device_claim());
}

ResourceAmounts FleetTotals(const std::vector<NodeView>& nodes) {
  ResourceAmounts out;
  for (const NodeView& n : nodes) {
    if (!n.online) continue;
    out.cpu += n.cpu_total > 0 ? n.cpu_total : n.cpu_free;
    const uint64_t memory = n.memory_total > 0 ? n.memory_total : n.memory_free;
    if (memory != capacity::kUnlimited) out.memory_bytes += static_cast<double>(memory);
    out.gpus += static_cast<double>(n.gpus.size());
  }
  return out;
}

double WeightOf(const AccountState& accounts, const std::string& account) {
  auto it = accounts.account_weights.find(account);
  if (it == accounts.account_weights.end() || !std::isfinite(it->second) || it->second <= 0) return 1.0;
  return it->second;
}

DominantShare DominantShareOf(const ResourceAmounts& held, const ResourceAmounts& fleet) {
  DominantShare out;
  // GPUs first: on equal fractions the scarcer resource names the share.
  const std::pair<double, double> parts[] = {
      {held.gpus, fleet.gpus}, {held.cpu, fleet.cpu}, {held.memory_bytes, fleet.memory_bytes}};
  const char* names[] = {"gpu", "cpu", "memory"};
  for (size_t i = 0; i < std::size(parts); ++i) {
    const auto [amount, total] = parts[i];
    if (total <= 0 || amount <= 0) continue;
    const double share = amount / total;
    if (share > out.share) {
      out.share = share;
      out.resource = names[i];
    }
  }
  return out;
}

FairShareQueue::FairShareQueue(const std::vector<TaskView>& tasks, const AccountState& accounts,
                               const ResourceAmounts& fleet)
    : fleet_(fleet), remaining_(tasks.size()) {
  // Accounts are numbered in name order, so comparing numbers breaks ties by
  // name. Consecutive tasks usually share an account: look that up once.
  std::map<std::string, uint32_t> ids;
  for (const TaskView& t : tasks) ids.try_emplace(t.account, 0);
  accounts_.resize(ids.size());
  uint32_t next = 0;
  for (auto& [name, id] : ids) {
    id = next++;
    Account& a = accounts_[id];
    a.weight = WeightOf(accounts, name);
    auto held = accounts.account_allocation.find(name);
    if (held != accounts.account_allocation.end()) a.held = held->second;
  }
  const std::string* last_name = nullptr;
  uint32_t last_id = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (last_name == nullptr || tasks[i].account != *last_name) {
      last_name = &tasks[i].account;
      last_id = ids.at(tasks[i].account);
    }
    accounts_[last_id].tasks.push_back(i);
  }
  heap_.reserve(accounts_.size());
  for (uint32_t id = 0; id < accounts_.size(); ++id) Push(id);
}

void FairShareQueue::Push(uint32_t account) {
  const Account& a = accounts_[account];
  heap_.push_back({DominantShareOf(a.held, fleet_).share / a.weight, account});
  std::push_heap(heap_.begin(), heap_.end(), Later);
}

size_t FairShareQueue::Next() {
  // The account served last goes back in line only now, after any Charge.
  if (current_ >= 0) {
    const auto id = static_cast<uint32_t>(current_);
    if (accounts_[id].head < accounts_[id].tasks.size()) Push(id);
  }
  std::pop_heap(heap_.begin(), heap_.end(), Later);
  current_ = heap_.back().account;
  heap_.pop_back();
  Account& a = accounts_[static_cast<uint32_t>(current_)];
  --remaining_;
  return a.tasks[a.head++];
}

void FairShareQueue::Charge(const ResourceAmounts& demand) {
  if (current_ >= 0) accounts_[static_cast<uint32_t>(current_)].held += demand;
}

std::vector<size_t> FairShareOrder(const std::vector<TaskView>& tasks, const AccountState& accounts,
                                   const ResourceAmounts& fleet) {
  std::vector<size_t> order;
  order.reserve(tasks.size());
  FairShareQueue queue(tasks, accounts, fleet);
  while (!queue.Empty()) {
    const size_t t = queue.Next();
    queue.Charge(DemandOf(tasks[t]));
    order.push_back(t);
  }
  return order;
}

FairShareStandings::FairShareStandings(const std::vector<TaskView>& queue, AccountState accounts, ResourceAmounts fleet)
    : accounts_(std::move(accounts)), fleet_(fleet), queued_(queue.size()) {
  const std::vector<size_t> order = FairShareOrder(queue, accounts_, fleet_);
  for (size_t k = 0; k < order.size(); ++k) {
    position_.try_emplace(TaskKey(queue[order[k]].job_id, queue[order[k]].index), static_cast<int64_t>(k));
  }
  std::set<std::string> waiting;
  for (const TaskView& t : queue) waiting.insert(t.account);
  accounts_waiting_ = static_cast<uint32_t>(waiting.size());
}

FairShareStanding FairShareStandings::Of(const TaskView& task) const {
  FairShareStanding out;
  out.account = task.account;
  auto held = accounts_.account_allocation.find(task.account);
  if (held != accounts_.account_allocation.end()) out.dominant = DominantShareOf(held->second, fleet_);
  out.weight = WeightOf(accounts_, task.account);
  out.accounts_waiting = accounts_waiting_;
  out.queued = queued_;
  auto it = position_.find(TaskKey(task.job_id, task.index));
  if (it != position_.end()) out.position = it->second;
  return out;
}

std::string FormatFairShare(const FairShareStanding& s) {
  char line[256];
  std::snprintf(line, sizeof line, "account %s: dominant share %.2f (%s) / weight %g = %.2f; %u account%s waiting; ",
                s.account.empty() ? "(none)" : s.account.c_str(), s.dominant.share,
                *s.dominant.resource ? s.dominant.resource : "nothing held", s.weight, s.dominant.share / s.weight,
                s.accounts_waiting, s.accounts_waiting == 1 ? "" : "s");
  std::string out = line;
  if (s.position == 0) {
    out += "next in line";
  } else if (s.position > 0) {
    out += "position " + std::to_string(s.position + 1) + " of " + std::to_string(s.queued) + " in line";
  } else {
    out += "not in the queue the scheduler reads now";
  }
  return out;
}

}  // namespace idlegrid::sched
