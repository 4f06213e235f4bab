// Coordinator::LoadSamples and SampleLoad: the dashboard's chart data, a
// sample of the job and node lists every few seconds (metrics/load_history.h
// holds the ring and computes the sample).
#include <spdlog/spdlog.h>

#include "coordinator/coordinator.h"
#include "ledger/accounts.h"

namespace idlegrid::coordinator {

std::vector<metrics::LoadSample> Coordinator::LoadSamples() {
  MutexLock lock(&history_mu_);
  return load_history_.Samples();
}

void Coordinator::SampleLoad() {
  const int64_t now = clock_->NowMs();
  {
    MutexLock lock(&history_mu_);
    if (!load_history_.Due(now, kLoadSamplePeriodMs)) return;
  }
  auto jobs = jobs_->List("");
  auto nodes = ListNodes();
  auto market = Market();
  if (!jobs.ok() || !nodes.ok() || !market.ok()) {
    // A gap in the chart, not a wrong point: the next pass tries again.
    const Status& why = !jobs.ok() ? jobs.status() : !nodes.ok() ? nodes.status() : market.status();
    spdlog::warn("load sample skipped: {}", why.message());
    return;
  }
  metrics::LoadSample sample = metrics::LoadSampleOf(now, *jobs, *nodes);
  for (const auto& row : market->rows()) {
    auto micros = ledger::MicrosFromCredits(row.min_ask());
    if (micros.ok()) sample.lowest_ask_micros[row.device_class()] = *micros;
  }
  MutexLock lock(&history_mu_);
  load_history_.Add(sample);
}

}  // namespace idlegrid::coordinator
