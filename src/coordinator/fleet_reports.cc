#include "coordinator/fleet_reports.h"

#include <spdlog/spdlog.h>

#include <map>

#include "capacity/node_capacity.h"
#include "common/version.h"
#include "jobs/task_state.h"
#include "ledger/accounts.h"
#include "market/earnings.h"
#include "metrics/exposition.h"
#include "metrics/gpu_telemetry.h"

namespace idlegrid::coordinator {
namespace {

using metrics::Family;
using metrics::Type;

Family Gauge(std::string name, std::string help) {
  return Family{std::move(name), std::move(help), Type::kGauge, {}, {}};
}
Family Counter(std::string name, std::string help) {
  return Family{std::move(name), std::move(help), Type::kCounter, {}, {}};
}
Family Histogram(std::string name, std::string help, const metrics::Histogram& h) {
  Family f{std::move(name), std::move(help), Type::kHistogram, {}, {}};
  f.histograms.emplace_back(metrics::Labels{}, h);
  return f;
}

// Tasks by state over every job the store holds.
Family TaskStates(const v1::ListJobsResponse& jobs) {
  std::map<std::string, uint64_t> tasks;
  for (const auto& j : jobs.jobs()) {
    for (const auto& [state, n] : j.task_counts()) tasks[state] += n;
  }
  Family task_states = Gauge("idlegrid_tasks", "Tasks by state, over all jobs the store holds (queued: the queue).");
  for (const auto& [state, n] : tasks) task_states.samples.push_back({{{"state", state}}, static_cast<double>(n)});
  return task_states;
}

// What the event counters saw since start: waits, run times, outcomes,
// dispatch latency, artifact bytes, heartbeats and the failure detector.
void AddEventFamilies(const EventCounters::Snapshot& counted, std::vector<Family>& out) {
  out.push_back(Histogram("idlegrid_queue_wait_seconds",
                          "Time a task waited in the queue before an attempt was committed for it.",
                          counted.queue_wait));
  out.push_back(Histogram("idlegrid_attempt_run_seconds",
                          "Time an attempt ran, from the report that started it to the one that ended it.",
                          counted.run_time));
  Family ended =
      Counter("idlegrid_attempts_ended_total",
              "Attempts that ended since this coordinator started, by outcome (succeeded or failure class).");
  ended.samples.push_back({{{"reason", "succeeded"}}, static_cast<double>(counted.attempts_succeeded)});
  for (int r = v1::FailureReason_MIN; r <= v1::FailureReason_MAX; ++r) {
    const auto reason = static_cast<v1::FailureReason>(r);
    if (reason == v1::FAILURE_REASON_UNSPECIFIED || !v1::FailureReason_IsValid(r)) continue;
    auto it = counted.attempt_failures.find(reason);
    ended.samples.push_back({{{"reason", jobs::ReasonName(reason)}},
                             static_cast<double>(it == counted.attempt_failures.end() ? 0 : it->second)});
  }
  out.push_back(std::move(ended));
  out.push_back(Histogram("idlegrid_dispatch_plan_seconds",
                          "Time a dispatch pass took from reading the queue to a plan, when it placed something.",
                          counted.dispatch));
  out.push_back(Histogram("idlegrid_dispatch_commit_seconds",
                          "Time the store took to commit a dispatch pass's placements.", counted.commit));
  Family artifacts =
      Counter("idlegrid_artifact_bytes_total",
              "Artifact bytes moved through the coordinator since it started (in: uploads, out: downloads).");
  artifacts.samples.push_back({{{"direction", "in"}}, static_cast<double>(counted.artifact_bytes_in)});
  artifacts.samples.push_back({{{"direction", "out"}}, static_cast<double>(counted.artifact_bytes_out)});
  out.push_back(std::move(artifacts));

  Family heartbeats = Counter("idlegrid_heartbeats_total", "Heartbeats received since this coordinator started.");
  heartbeats.samples.push_back({{}, static_cast<double>(counted.heartbeats_received)});
  out.push_back(std::move(heartbeats));
  Family transitions = Counter("idlegrid_node_transitions_total",
                               "Nodes the failure detector found suspect, and confirmed offline, since start.");
  transitions.samples.push_back({{{"to", "suspect"}}, static_cast<double>(counted.nodes_suspected)});
  transitions.samples.push_back({{{"to", "offline"}}, static_cast<double>(counted.nodes_lost)});
  out.push_back(std::move(transitions));
}

// Nodes by state, then per node: heartbeat age, `gap` (the longest gap,
// which only the node table knows), CPU, memory and each GPU's memory.
void AddNodeFamilies(const v1::ListNodesResponse& nodes, int64_t now, Family gap, std::vector<Family>& out) {
  Family node_states = Gauge("idlegrid_nodes", "Nodes by state.");
  std::map<std::string, uint64_t> by_state;
  for (const auto& n : nodes.nodes()) by_state[n.state()]++;
  for (const auto& [state, n] : by_state) node_states.samples.push_back({{{"state", state}}, static_cast<double>(n)});
  out.push_back(std::move(node_states));

  Family lag = Gauge("idlegrid_node_heartbeat_age_seconds", "Time since each node's last heartbeat.");
  Family cpu =
      Gauge("idlegrid_node_cpu_cores", "CPU cores per node: allocatable (advertised) and allocated to attempts.");
  Family memory =
      Gauge("idlegrid_node_memory_bytes", "Memory per node: allocatable (advertised) and allocated to attempts.");
  Family vram = Gauge("idlegrid_node_gpu_memory_bytes",
                      "GPU memory per device: allocatable (total less the owner's reserve) and allocated to attempts.");
  const auto with = [](metrics::Labels l, const char* kind) {
    l.emplace_back("kind", kind);
    return l;
  };
  for (const auto& n : nodes.nodes()) {
    const metrics::Labels node = {{"node", n.id()}};
    if (n.last_heartbeat_ms() > 0) {
      lag.samples.push_back({node, static_cast<double>(std::max<int64_t>(0, now - n.last_heartbeat_ms())) / 1000.0});
    }
    cpu.samples.push_back({with(node, "allocatable"), n.advertisement().allocatable_cpu()});
    cpu.samples.push_back({with(node, "allocated"), n.cpu_allocated()});
    memory.samples.push_back(
        {with(node, "allocatable"), static_cast<double>(n.advertisement().allocatable_memory_bytes())});
    memory.samples.push_back({with(node, "allocated"), static_cast<double>(n.memory_allocated())});
    for (const auto& g : n.gpus()) {
      const uint64_t usable = capacity::UsableVram(g.memory_total_bytes(), g.reserved_memory_bytes());
      const uint64_t held = usable > g.allocatable_memory_bytes() ? usable - g.allocatable_memory_bytes() : 0;
      metrics::Labels device = {{"node", n.id()}, {"gpu", g.uuid()}};
      vram.samples.push_back({with(device, "allocatable"), static_cast<double>(usable)});
      vram.samples.push_back({with(device, "allocated"), static_cast<double>(held)});
    }
  }
  for (Family* f : {&lag, &gap, &cpu, &memory, &vram}) out.push_back(std::move(*f));
}

// Earnings count every accepted attempt a provider's nodes ran, up to this
// many (newest first): a provider's whole history in any grid this serves.
constexpr size_t kEarningsAttempts = 200'000;

market::NodeOffering OfferingOf(const v1::Node& n) {
  market::NodeOffering o;
  o.node_id = n.id();
  o.name = n.name();
  const v1::Advertisement& ad = n.advertisement();
  for (const auto& d : ad.inventory().gpus().devices()) o.gpu_classes.push_back(d.name());
  o.cpu_cores = ad.capacity().cpu_cores() > 0 ? ad.capacity().cpu_cores() : n.info().cpu_cores();
  for (const auto& a : ad.asks()) o.asks[a.device_class()] = a.per_hour();
  return o;
}

}  // namespace

Result<std::string> FleetReports::Metrics() {
  IG_ASSIGN_OR_RETURN(auto jobs, sources_.jobs());
  IG_ASSIGN_OR_RETURN(auto nodes, sources_.nodes());
  const int64_t now = clock_->NowMs();
  std::vector<Family> out;
  Family build = Gauge("idlegrid_build_info", "The coordinator's version, in a label; always 1.");
  build.samples.push_back({{{"version", BuildVersion()}}, 1.0});
  out.push_back(std::move(build));
  out.push_back(TaskStates(jobs));
  AddEventFamilies(counters_->Read(), out);
  Family gap =
      Gauge("idlegrid_heartbeat_gap_max_seconds", "Longest time between two heartbeats of a node while online.");
  for (const auto& [id, gap_ms] : sources_.heartbeat_gaps()) {
    if (gap_ms > 0) gap.samples.push_back({{{"node", id}}, static_cast<double>(gap_ms) / 1000.0});
  }
  AddNodeFamilies(nodes, now, std::move(gap), out);
  for (Family& f : metrics::GpuTelemetryFamilies(nodes.nodes(), now)) out.push_back(std::move(f));
  return metrics::Render(out);
}

std::vector<metrics::LoadSample> FleetReports::LoadSamples() {
  MutexLock lock(&mu_);
  return history_.Samples();
}

void FleetReports::SampleLoad() {
  const int64_t now = clock_->NowMs();
  {
    MutexLock lock(&mu_);
    if (!history_.Due(now, kLoadSamplePeriodMs)) return;
  }
  auto jobs = sources_.jobs();
  auto nodes = sources_.nodes();
  auto market = sources_.market();
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
  MutexLock lock(&mu_);
  history_.Add(sample);
}

Result<v1::ProviderEarningsResponse> FleetReports::ProviderEarnings(const std::string& provider) {
  if (provider.empty()) {
    return Status::InvalidArgument("name a provider account (--provider NAME): this token's account has no nodes");
  }
  market::EarningsInputs in;
  in.provider = provider;
  in.now_ms = clock_->NowMs();
  IG_ASSIGN_OR_RETURN(in.attempts, store_->ProviderAttempts(provider, 0, kEarningsAttempts));
  IG_ASSIGN_OR_RETURN(v1::ListNodesResponse nodes, sources_.nodes());
  for (const v1::Node& n : nodes.nodes()) {
    if (n.provider() == provider) in.nodes.push_back(OfferingOf(n));
  }
  in.recent = sources_.recent_prices(in.now_ms);
  v1::ProviderEarningsResponse out = market::SummarizeEarnings(in);
  if (ledger_ != nullptr) {
    IG_ASSIGN_OR_RETURN(v1::LedgerBalanceResponse b, ledger_->Balance(provider));
    out.set_ledger(true);
    out.set_pending_micros(b.pending_micros());
    out.set_available_micros(b.available_micros());
    out.set_stake_micros(b.stake_micros());
  }
  return out;
}

}  // namespace idlegrid::coordinator
