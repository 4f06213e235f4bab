#pragma once
// What the coordinator reports about its fleet as a whole: the Prometheus
// text of /metrics (docs/metrics.md), the load history the dashboard charts
// (GET /v1/history) and a provider's earnings (docs/provider.md). It reads
// jobs, nodes and the market through the hooks it is given, the event
// counters and the store; it changes nothing but its own ring of samples.
// Thread-safe; its lock (the ring's) is a leaf.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "coordinator/event_counters.h"
#include "coordinator/ledger_requests.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "market/recent_prices.h"
#include "metrics/load_history.h"
#include "store/store.h"

namespace idlegrid::coordinator {

class FleetReports {
 public:
  // What only the node table and the dispatcher know.
  struct Sources {
    std::function<Result<v1::ListJobsResponse>()> jobs;  // every account's
    std::function<Result<v1::ListNodesResponse>()> nodes;
    std::function<Result<v1::MarketResponse>()> market;
    // Per node, the longest gap between two heartbeats while online (ms; 0: none seen).
    std::function<std::map<std::string, int64_t>()> heartbeat_gaps;
    // Clearing prices of recent placements at a time, per device class.
    std::function<std::map<std::string, market::RecentPrice>(int64_t now_ms)> recent_prices;
  };
  // `ledger`: null without the ledger; with it, balances join the
  // earnings. Everything outlives this.
  FleetReports(store::Store* store, EventCounters* counters, LedgerRequests* ledger, Clock* clock, Sources sources)
      : store_(store), counters_(counters), ledger_(ledger), clock_(clock), sources_(std::move(sources)) {}

  // Queue, waits, run times, outcomes, heartbeats, capacity per node,
  // dispatch latency, artifact bytes, GPU telemetry.
  Result<std::string> Metrics();
  // Takes a load sample if one is due (every kLoadSamplePeriodMs); a source
  // that fails leaves a gap, not a wrong point.
  void SampleLoad() IG_EXCLUDES(mu_);
  // The last hour's samples, oldest first.
  std::vector<metrics::LoadSample> LoadSamples() IG_EXCLUDES(mu_);
  static constexpr int64_t kLoadSamplePeriodMs = 5000;
  // What `provider`'s nodes earned and could earn per hour; InvalidArgument
  // for no provider.
  Result<v1::ProviderEarningsResponse> ProviderEarnings(const std::string& provider);

 private:
  static constexpr size_t kLoadHistorySize = 720;  // an hour of samples
  store::Store* const store_;
  EventCounters* const counters_;
  LedgerRequests* const ledger_;
  Clock* const clock_;
  const Sources sources_;
  Mutex mu_;
  metrics::LoadHistory history_ IG_GUARDED_BY(mu_){kLoadHistorySize};
};

}  // namespace idlegrid::coordinator
