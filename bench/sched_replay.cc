// Trace replay (Alibaba GPU cluster trace, 2023): feeds the trace's tasks in
// arrival order to the pure scheduling core, with no departures, pass after
// pass (workload inflation) until a whole pass places nothing, and reports
// the GPU allocation ratio (allocated milli-GPUs / total milli-GPUs) when the
// first task cannot be placed and at saturation — for each shipped policy and
// for a plain best-fit baseline implemented here.
//
//   bench_sched_replay [NODE_CSV POD_CSV [max_passes [POLICY_YAML]]]
//
// POLICY_YAML (docs/scheduling.md) adds policies to replay besides the
// shipped ones.
// NODE_CSV columns: sn, cpu_milli, memory_mib, gpu, model. POD_CSV columns:
// name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec (optional),
// creation_time (optional: without it, file order is arrival order).
// VRAM per model is not in the trace; public figures are used (P100, T4,
// V100M16 16 GB; V100M32 32 GB; A10 24 GB) and the undisclosed G2/G3 are
// assumed to have 32 GB. Tasks ask for no VRAM, so VRAM never binds here.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/fs.h"
#include "sched/pipeline.h"

namespace {

using idlegrid::sched::NodeView;
using idlegrid::sched::TaskView;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

using Row = std::map<std::string, std::string>;

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::stringstream ss(line);
  while (std::getline(ss, cell, ',')) {
    if (!cell.empty() && cell.back() == '\r') cell.pop_back();
    out.push_back(cell);
  }
  if (!line.empty() && line.back() == ',') out.push_back("");
  return out;
}

std::vector<Row> ReadCsv(const std::string& path, const std::vector<std::string>& required) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    std::exit(2);
  }
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = SplitCsvLine(line);
  for (const auto& r : required) {
    if (std::find(header.begin(), header.end(), r) == header.end()) {
      std::fprintf(stderr, "%s: missing column %s\n", path.c_str(), r.c_str());
      std::exit(2);
    }
  }
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto cells = SplitCsvLine(line);
    Row row;
    for (size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

double Num(const Row& row, const std::string& key) {
  auto it = row.find(key);
  return it == row.end() || it->second.empty() ? 0 : std::strtod(it->second.c_str(), nullptr);
}

uint64_t VramOf(const std::string& model) {
  static const std::map<std::string, uint64_t> kVram = {
      {"P100", 16 * kGiB}, {"T4", 16 * kGiB}, {"V100M16", 16 * kGiB}, {"V100M32", 32 * kGiB},
      {"A10", 24 * kGiB},  {"G2", 32 * kGiB}, {"G3", 32 * kGiB}};
  auto it = kVram.find(model);
  return it == kVram.end() ? 16 * kGiB : it->second;
}

std::vector<NodeView> LoadNodes(const std::string& path) {
  std::vector<NodeView> nodes;
  for (const Row& row : ReadCsv(path, {"sn", "cpu_milli", "memory_mib", "gpu", "model"})) {
    NodeView n;
    n.id = row.at("sn");
    n.online = true;
    n.cpu_free = n.cpu_total = Num(row, "cpu_milli") / 1000.0;
    n.memory_free = static_cast<uint64_t>(Num(row, "memory_mib")) * kMiB;
    n.runtimes = {"runc"};
    n.enforcement.set_memory("cgroup");
    n.enforcement.set_cpu("cgroup");
    n.allows_sharing = true;
    const std::string model = row.at("model");
    for (int i = 0; i < static_cast<int>(Num(row, "gpu")); ++i) {
      idlegrid::v1::GpuDevice g;
      g.set_index(i);
      g.set_uuid(n.id + "-" + std::to_string(i));
      g.set_name(model);
      g.set_memory_total_bytes(VramOf(model));
      g.set_allocatable_memory_bytes(VramOf(model));
      n.gpus.push_back(g);
      n.gpu_free_milli.push_back(1000);
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

struct TraceTask {
  TaskView view;
  uint32_t milli = 0;  // GPU milli it holds in total
  double arrival = 0;
};

std::vector<TraceTask> LoadTasks(const std::string& path) {
  std::vector<TraceTask> tasks;
  for (const Row& row : ReadCsv(path, {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"})) {
    TraceTask t;
    t.view.job_id = row.at("name");
    t.view.runtime = "runc";
    t.view.resources.set_cpu(Num(row, "cpu_milli") / 1000.0);
    t.view.resources.set_memory_bytes(static_cast<uint64_t>(Num(row, "memory_mib")) * kMiB);
    const uint32_t gpus = static_cast<uint32_t>(Num(row, "num_gpu"));
    const uint32_t milli = static_cast<uint32_t>(Num(row, "gpu_milli"));
    if (gpus == 1 && milli > 0 && milli < 1000) {
      t.view.gpu_milli = milli;
      t.milli = milli;
    } else {
      t.view.resources.set_gpus(gpus);
      t.milli = 1000 * gpus;
    }
    auto spec = row.find("gpu_spec");
    if (spec != row.end() && !spec->second.empty()) {
      std::stringstream ss(spec->second);
      std::string model;
      while (std::getline(ss, model, '|')) t.view.gpu_models.insert(model);
    }
    t.arrival = Num(row, "creation_time");
    tasks.push_back(std::move(t));
  }
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const TraceTask& a, const TraceTask& b) { return a.arrival < b.arrival; });
  return tasks;
}

struct Outcome {
  double first_failure_ratio = -1;  // when the first task could not be placed
  double saturation_ratio = 0;
  int passes = 0;
  int last_gpu_pass = 0;  // the last pass that placed a GPU task
  size_t placed = 0;
  double seconds = 0;
};

// The pipeline scheduler with one policy, one Schedule call per pass.
Outcome ReplayPipeline(std::vector<NodeView> nodes, const std::vector<TraceTask>& trace, const std::string& policy,
                       const idlegrid::sched::PolicyConfig& config, double total_milli, int max_passes) {
  Outcome out;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i].id] = i;
  auto scheduler = idlegrid::sched::NewPipelineScheduler({config, 0});
  double allocated = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int pass = 0; pass < max_passes; ++pass) {
    std::vector<TaskView> tasks;
    tasks.reserve(trace.size());
    for (size_t i = 0; i < trace.size(); ++i) {
      TaskView t = trace[i].view;
      t.job_id = "p" + std::to_string(pass);
      t.index = static_cast<uint32_t>(i);
      t.policy = policy;
      tasks.push_back(std::move(t));
    }
    idlegrid::sched::Plan plan = scheduler->Schedule(nodes, tasks);
    ++out.passes;
    if (out.first_failure_ratio < 0 && !plan.waiting.empty()) {
      // Allocation just before the first task in arrival order that waited.
      std::vector<bool> placed(tasks.size(), false);
      for (const auto& p : plan.placements) placed[p.index] = true;
      double running = allocated;
      for (size_t i = 0; i < tasks.size(); ++i) {
        if (!placed[i]) break;
        running += trace[i].milli;
      }
      out.first_failure_ratio = running / total_milli;
    }
    for (const auto& p : plan.placements) {
      idlegrid::Status st = idlegrid::sched::ApplyPlacement(&nodes[index.at(p.node_id)], tasks[p.index], p);
      if (!st.ok()) {
        std::fprintf(stderr, "over-allocation: %s\n", st.ToString().c_str());
        std::exit(1);
      }
      allocated += trace[p.index].milli;
      if (trace[p.index].milli > 0) out.last_gpu_pass = pass + 1;
    }
    out.placed += plan.placements.size();
    if (plan.placements.empty()) break;
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.saturation_ratio = allocated / total_milli;
  return out;
}

// Plain best fit: the node (and device) left with the least free GPU milli,
// then the fewest free cores; ties by node order.
Outcome ReplayBestFit(const std::vector<NodeView>& fleet, const std::vector<TraceTask>& trace, double total_milli,
                      int max_passes) {
  struct Bin {
    double cpu;
    uint64_t memory;
    std::string model;
    std::vector<uint32_t> free;
  };
  std::vector<Bin> bins;
  for (const auto& n : fleet) {
    bins.push_back({n.cpu_free, n.memory_free, n.gpus.empty() ? "" : n.gpus[0].name(), n.gpu_free_milli});
  }
  Outcome out;
  double allocated = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int pass = 0; pass < max_passes; ++pass) {
    ++out.passes;
    size_t placed = 0;
    for (const TraceTask& task : trace) {
      const auto& r = task.view.resources;
      const bool share = task.view.gpu_milli > 0;
      size_t best = bins.size();
      int best_device = -1;
      double best_left = 0, best_cpu = 0;
      for (size_t b = 0; b < bins.size(); ++b) {
        const Bin& bin = bins[b];
        if (bin.cpu + 1e-9 < r.cpu() || bin.memory < r.memory_bytes()) continue;
        if (!task.view.gpu_models.empty() && !task.view.gpu_models.count(bin.model)) continue;
        double free_total = 0;
        uint32_t whole = 0;
        int device = -1;
        for (size_t d = 0; d < bin.free.size(); ++d) {
          free_total += bin.free[d];
          whole += bin.free[d] == 1000;
          if (share && bin.free[d] >= task.view.gpu_milli && (device < 0 || bin.free[d] < bin.free[device])) {
            device = static_cast<int>(d);
          }
        }
        if (share ? device < 0 : whole < r.gpus()) continue;
        const double left = free_total - task.milli;
        const double cpu_left = bin.cpu - r.cpu();
        if (best == bins.size() || left < best_left || (left == best_left && cpu_left < best_cpu)) {
          best = b;
          best_device = device;
          best_left = left;
          best_cpu = cpu_left;
        }
      }
      if (best == bins.size()) {
        if (out.first_failure_ratio < 0) out.first_failure_ratio = allocated / total_milli;
        continue;
      }
      Bin& bin = bins[best];
      bin.cpu -= r.cpu();
      bin.memory -= r.memory_bytes();
      if (share) {
        bin.free[best_device] -= task.view.gpu_milli;
      } else {
        uint32_t need = r.gpus();
        for (auto& f : bin.free) {
          if (need > 0 && f == 1000) {
            f = 0;
            --need;
          }
        }
      }
      allocated += task.milli;
      if (task.milli > 0) out.last_gpu_pass = pass + 1;
      ++placed;
    }
    out.placed += placed;
    if (placed == 0) break;
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.saturation_ratio = allocated / total_milli;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = "/work/shared/traces/alibaba-gpu-2023/";
  const std::string node_csv = argc > 2 ? argv[1] : dir + "openb_node_list_gpu_node.csv";
  const std::string pod_csv = argc > 2 ? argv[2] : dir + "openb_pod_list_default.csv";
  const int max_passes = argc > 3 ? std::atoi(argv[3]) : 100;
  idlegrid::sched::PolicyConfig config;
  if (argc == 2) {
    std::fprintf(stderr, "usage: bench_sched_replay [NODES.csv PODS.csv [MAX_PASSES [POLICY_FILE]]]\n");
    return 2;
  }
  if (argc > 4) {
    auto text = idlegrid::ReadFile(argv[4]);
    if (!text.ok()) {
      std::fprintf(stderr, "policy file: %s\n", text.status().ToString().c_str());
      return 2;
    }
    auto parsed = idlegrid::sched::ParsePolicyConfig(*text, argv[4]);
    if (!parsed.ok()) {
      std::fprintf(stderr, "%s\n", parsed.status().ToString().c_str());
      return 2;
    }
    config = *parsed;
  }
  const std::vector<NodeView> nodes = LoadNodes(node_csv);
  const std::vector<TraceTask> trace = LoadTasks(pod_csv);
  double total_milli = 0;
  for (const auto& n : nodes) total_milli += 1000.0 * n.gpus.size();
  size_t shares = 0;
  for (const auto& t : trace) shares += t.view.gpu_milli > 0;
  std::printf("trace: %zu nodes, %.0f GPUs; %zu tasks per pass (%zu GPU shares)\n", nodes.size(), total_milli / 1000,
              trace.size(), shares);
  std::printf("%-10s %7s %9s %8s %20s %17s %8s\n", "policy", "passes", "GPU-pass", "placed", "alloc@first-failure",
              "alloc@saturation", "seconds");
  auto print = [](const std::string& name, const Outcome& o) {
    std::printf("%-10s %7d %9d %8zu %19.1f%% %16.1f%% %8.2f\n", name.c_str(), o.passes, o.last_gpu_pass, o.placed,
                100 * o.first_failure_ratio, 100 * o.saturation_ratio, o.seconds);
  };
  print("best-fit", ReplayBestFit(nodes, trace, total_milli, max_passes));
  for (const auto& [name, policy] : config.policies) {
    print(name, ReplayPipeline(nodes, trace, name, config, total_milli, max_passes));
  }
  return 0;
}
