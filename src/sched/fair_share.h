#pragma once
// Fair share between accounts: weighted dominant-resource fairness (DRF,
// Ghodsi et al., NSDI '11) over GPUs, cores and memory. An account's dominant
// share is the largest fraction of the fleet it holds of any one resource;
// the queue is served account by account, always the account whose dominant
// share divided by its weight is lowest (ties: the smaller name), each taking
// its own tasks in queue order. So one account's 10,000 queued tasks cannot
// starve another's 10: as soon as a slot opens, the account holding less gets
// it. With one account the order is the queue order. Pure.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "capacity/ledger.h"
#include "sched/scheduler.h"

namespace idlegrid::sched {

// What `cpu` cores, `memory` bytes and `devices` GPUs each taken as `claim`
// come to: a whole device counts 1, a share its compute (milli / 1000; a VRAM
// slice without compute counts 0). For a task's demand and for what an
// attempt holds (capacity::ClaimOf reads a stored attempt's claim).
ResourceAmounts AmountsOf(double cpu, uint64_t memory, uint32_t devices, const capacity::DeviceClaim& claim);

// What `task` takes once placed (a share of one GPU counts as milli / 1000).
ResourceAmounts DemandOf(const TaskView& task);

// Sum over online nodes of offered cores (cpu_total, else cpu_free), memory
// (memory_total, else memory_free; a node whose memory is not known adds
// none) and GPU devices.
ResourceAmounts FleetTotals(const std::vector<NodeView>& nodes);

// An account's weight: the configured one if it is a positive number, else 1.
double WeightOf(const AccountState& accounts, const std::string& account);

// The resource of which `held` is the largest fraction of `fleet` ("gpu",
// "cpu" or "memory"; "" when it holds nothing), and that fraction. A resource
// the fleet has none of is not weighed.
struct DominantShare {
  double share = 0;
  const char* resource = "";
};
DominantShare DominantShareOf(const ResourceAmounts& held, const ResourceAmounts& fleet);

// Hands out the tasks of a queue one at a time in weighted DRF order. Next()
// returns the next task of the account with the lowest dominant share /
// weight (ties: the smaller account name); Charge() then adds what that task
// takes to its account, so the next pick sees it (the scheduler charges only
// tasks it placed: one that waits takes nothing). O(log accounts) per task.
// Not thread-safe.
class FairShareQueue {
 public:
  FairShareQueue(const std::vector<TaskView>& tasks, const AccountState& accounts, const ResourceAmounts& fleet);

  bool Empty() const { return remaining_ == 0; }
  // Index into `tasks` of the next task. Only when !Empty().
  size_t Next();
  // Adds `demand` (normally DemandOf the task Next() returned last) to the
  // account of that task.
  void Charge(const ResourceAmounts& demand);

 private:
  struct Account {
    std::vector<size_t> tasks;  // indices into tasks_, in queue order
    size_t head = 0;
    ResourceAmounts held;
    double weight = 1;
  };
  struct Turn {
    double key;        // dominant share / weight
    uint32_t account;  // index into accounts_, which are sorted by name
  };
  static bool Later(const Turn& a, const Turn& b) { return a.key != b.key ? a.key > b.key : a.account > b.account; }
  void Push(uint32_t account);

  const ResourceAmounts fleet_;
  std::vector<Account> accounts_;
  std::vector<Turn> heap_;  // accounts with tasks left, lowest key on top
  int64_t current_ = -1;    // the account Next() served last, out of heap_
  size_t remaining_ = 0;
};

// The whole queue in fair-share order, as if every task were placed: indices
// into `tasks`. With one account: 0, 1, 2, ...
std::vector<size_t> FairShareOrder(const std::vector<TaskView>& tasks, const AccountState& accounts,
                                   const ResourceAmounts& fleet);

// Where one queued task stands, for `status --explain`.
struct FairShareStanding {
  std::string account;
  DominantShare dominant;  // of what the account holds now
  double weight = 1;
  uint32_t accounts_waiting = 0;  // accounts with tasks in the queue
  int64_t position = -1;          // 0: next in line; -1: not in the queue given
  size_t queued = 0;              // tasks in the queue
};

// Fair-share standings of a queue, computed once (FairShareOrder) and looked
// up per task.
class FairShareStandings {
 public:
  FairShareStandings(const std::vector<TaskView>& queue, AccountState accounts, ResourceAmounts fleet);
  // `task`'s standing; position -1 if it is not in the queue.
  FairShareStanding Of(const TaskView& task) const;

 private:
  AccountState accounts_;
  ResourceAmounts fleet_;
  std::map<std::string, int64_t> position_;  // TaskKey -> place in fair-share order
  uint32_t accounts_waiting_ = 0;
  size_t queued_ = 0;
};

// "account alice: dominant share 0.42 (gpu) / weight 1 = 0.42; 3 accounts
// waiting; next in line" (or "position 7 of 2020"). The empty account is
// shown as "(none)".
std::string FormatFairShare(const FairShareStanding& standing);

}  // namespace idlegrid::sched
