// Coordinator::Metrics: gathers what /metrics shows from the store, the node
// table and the event counters; metrics/exposition.h prints it.
#include <map>

#include "capacity/node_capacity.h"
#include "coordinator/coordinator.h"
#include "jobs/task_state.h"
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

}  // namespace

Result<std::string> Coordinator::Metrics() {
  IG_ASSIGN_OR_RETURN(auto jobs, jobs_->List(""));
  IG_ASSIGN_OR_RETURN(auto nodes, ListNodes());
  const int64_t now = clock_->NowMs();
  std::vector<Family> out;
  out.push_back(TaskStates(jobs));
  AddEventFamilies(counters_.Read(), out);
  Family gap =
      Gauge("idlegrid_heartbeat_gap_max_seconds", "Longest time between two heartbeats of a node while online.");
  {
    MutexLock lock(&mu_);
    for (const auto& [id, live] : nodes_) {
      if (live.liveness.max_gap_ms() > 0) {
        gap.samples.push_back({{{"node", id}}, static_cast<double>(live.liveness.max_gap_ms()) / 1000.0});
      }
    }
  }
  AddNodeFamilies(nodes, now, std::move(gap), out);
  for (Family& f : metrics::GpuTelemetryFamilies(nodes.nodes(), now)) out.push_back(std::move(f));
  return metrics::Render(out);
}

}  // namespace idlegrid::coordinator
