#pragma once
// The dispatcher: the coordinator's shell around the pure scheduler and
// market. Each pass it expires tasks past their queue timeout, reads the
// queue, takes one snapshot of the node table (NodeTable::Views), fails
// capped tasks that spent their budget or are priced out, plans
// (sched::Scheduler), commits the plan through the store's guard and sends
// the assignments. It answers `status --explain` and `market` from the same
// kind of snapshot, and keeps why each queued task waits and the recent
// clearing prices.
//
// It may not change nodes (NodeTable owns them) or end attempts; it writes
// only assignments and the failure of queued tasks.
//
// Lock: mu_ is a leaf (waiting reasons and recent prices). Pass is the loop
// thread's alone (or Tick's caller's); Explain, Market, FillWaiting and
// RecentPrices may be called from any thread.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "coordinator/account_terms.h"
#include "coordinator/assignment_sender.h"
#include "coordinator/change_signal.h"
#include "coordinator/event_counters.h"
#include "coordinator/image_catalog.h"
#include "coordinator/node_table.h"
#include "coordinator/standing_reader.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "market/recent_prices.h"
#include "sched/policy.h"
#include "sched/scheduler.h"
#include "store/store.h"

namespace idlegrid::coordinator {

class Dispatcher {
 public:
  // What a dispatcher reads and writes through; each outlives it.
  struct Parts {
    store::Store* store = nullptr;
    Clock* clock = nullptr;
    NodeTable* nodes = nullptr;
    ImageCatalog* images = nullptr;
    AssignmentSender* sender = nullptr;
    AccountTermsCache* account_terms = nullptr;
    StandingReader* standing = nullptr;
    EventCounters* counters = nullptr;
    ChangeSignal* changes = nullptr;
  };
  Dispatcher(Parts parts, std::unique_ptr<sched::Scheduler> scheduler, sched::PolicyConfig policies);

  // One pass: queue timeouts, then read the queue, plan, fail priced-out
  // tasks, commit, send.
  void Pass();
  // For each queued task of the job: nodes removed per filter and how the
  // best candidates score, on the current snapshot. NotFound for an unknown job.
  Result<v1::ExplainJobResponse> Explain(const std::string& job_id);
  // The market's order book: free units and asks per device class, and the
  // prices recent placements cleared at.
  Result<v1::MarketResponse> Market();
  // Sets each queued task's message to why it waits (as of the last pass).
  void FillWaiting(v1::Job* job);
  std::map<std::string, market::RecentPrice> RecentPrices(int64_t now_ms);

 private:
  // The pass's tasks to plan: those within their account's running-task
  // limit; a capped task that spent its cap is failed instead.
  struct DispatchInput {
    std::vector<sched::TaskView> tasks;
    std::map<std::string, v1::Job> capped;            // jobs with a cost cap, for what their tasks spent
    std::vector<std::pair<size_t, double>> spending;  // tasks (index in `tasks`) that spent part of their cap
  };
  void DispatchOnce();
  DispatchInput DispatchTasks(const std::vector<store::QueuedTask>& queued,
                              const std::vector<store::ActiveAttempt>& active, const sched::DataPolicy& data,
                              const std::map<std::string, int64_t>& running_limits, int64_t now);
  // Fails the capped tasks the plan left waiting with no offer their budget fits.
  void FailPricedOut(const DispatchInput& in, const sched::Plan& plan, int64_t now);
  sched::TaskView TaskViewOf(const store::QueuedTask& task, double spent, const sched::DataPolicy& data) const;
  void RecordClearingPrices(const std::vector<store::NewAttempt>& placed, int64_t now_ms);

  const Parts parts_;
  const std::unique_ptr<sched::Scheduler> scheduler_;
  const sched::PolicyConfig policies_;

  Mutex mu_;                                                       // a leaf
  std::map<std::string, std::string> waiting_ IG_GUARDED_BY(mu_);  // task key -> why it waits
  market::RecentPrices recent_prices_ IG_GUARDED_BY(mu_);

  // Pass's own: no lock.
  int conflict_replans_ = 0;
  static constexpr int kMaxConflictReplans = 3;
};

}  // namespace idlegrid::coordinator
