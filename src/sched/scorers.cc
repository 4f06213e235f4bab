#include "sched/scorers.h"

#include <algorithm>
#include <bit>
#include <map>
#include <tuple>

#include "sched/policy.h"

namespace idlegrid::sched {
namespace {

bool HasBit(DeviceMask mask, size_t i) { return (mask >> i) & 1; }

}  // namespace

Workload BuildWorkload(const std::vector<TaskView>& tasks, size_t max_classes) {
  std::map<std::tuple<uint32_t, uint32_t, double, uint64_t>, size_t> counts;
  for (const auto& t : tasks) {
    const bool share = t.gpu_milli > 0 && t.gpu_milli < kWholeGpuMilli;
    const uint32_t gpus = share ? 1 : t.resources.gpus();
    if (gpus == 0) continue;
    ++counts[{gpus, share ? t.gpu_milli : kWholeGpuMilli, t.resources.cpu(), t.resources.memory_bytes()}];
  }
  std::vector<std::pair<size_t, WorkloadClass>> ranked;
  for (const auto& [key, n] : counts) {
    WorkloadClass c{std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key), 0};
    ranked.push_back({n, c});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  if (ranked.size() > max_classes) ranked.resize(max_classes);
  size_t kept = 0;
  for (const auto& r : ranked) kept += r.first;
  Workload out;
  for (auto& [n, c] : ranked) {
    c.weight = static_cast<double>(n) / static_cast<double>(kept);
    out.push_back(c);
  }
  return out;
}

// FGD (Weng et al., ATC'23), per node: for each task class, the free GPU
// milli it could not use — all of it if the class does not fit the node at
// all, else the free milli of devices too full for one of its GPUs — weighted
// by the class's share of the workload.
double NodeFragmentation(const NodeState& node, const Workload& workload, const uint32_t* milli_taken, double cpu,
                         uint64_t memory) {
  uint32_t free[kMaxDevicesPerNode];
  uint32_t total_free = 0;
  const size_t n = node.devices.size();
  for (size_t i = 0; i < n; ++i) {
    const uint32_t free_milli = node.free_milli(i);
    free[i] = free_milli - std::min(free_milli, milli_taken[i]);
    total_free += free[i];
  }
  const double cpu_left = node.cpu_free() - cpu;
  const uint64_t memory_free = node.memory_free();
  const uint64_t mem_left = memory_free - std::min(memory_free, memory);
  double fragmentation = 0;
  for (const WorkloadClass& c : workload) {
    const bool host_fits = c.cpu <= cpu_left + 1e-9 && c.memory <= mem_left;
    uint32_t usable = 0, unusable_milli = 0;
    for (size_t i = 0; i < n; ++i) {
      if (free[i] >= c.milli) {
        ++usable;
      } else {
        unusable_milli += free[i];
      }
    }
    const bool fits = host_fits && usable >= c.gpus;
    fragmentation += c.weight * (fits ? unusable_milli : total_free);
  }
  return fragmentation;
}

DeviceChoice ChooseDevices(const NodeState& node, const Demand& d, DeviceMask free, const Workload& workload) {
  DeviceChoice choice;
  if (d.gpus == 0) {
    choice.price_per_hour = market::HourlyPrice({}, 0, d.cpu, node.cpu_ask);
    if (!workload.empty() && !node.devices.empty()) {
      // A CPU task can strand a node's GPUs by taking the cores their tasks need.
      const uint32_t none[kMaxDevicesPerNode] = {};
      choice.fragmentation =
          (NodeFragmentation(node, workload, none, d.cpu, d.memory) - NodeFragmentation(node, workload, none, 0, 0)) /
          1000.0;
    }
    return choice;
  }
  const size_t n = node.devices.size();
  size_t order[kMaxDevicesPerNode];
  size_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    if (HasBit(free, i)) order[count++] = i;
  }
  const bool frag = d.share && !workload.empty();
  uint32_t taken[kMaxDevicesPerNode] = {};
  double frag_before = 0;
  double frag_after[kMaxDevicesPerNode] = {};
  if (!workload.empty()) frag_before = NodeFragmentation(node, workload, taken, 0, 0);
  if (frag) {
    // Devices in the same state give the same answer: evaluate each state once.
    for (size_t k = 0; k < count; ++k) {
      const size_t i = order[k];
      bool seen = false;
      for (size_t j = 0; j < k && !seen; ++j) {
        if (node.free_milli(order[j]) == node.free_milli(i)) {
          frag_after[i] = frag_after[order[j]];
          seen = true;
        }
      }
      if (seen) continue;
      taken[i] = d.milli;
      frag_after[i] = NodeFragmentation(node, workload, taken, d.cpu, d.memory);
      taken[i] = 0;
    }
  }
  std::sort(order, order + count, [&](size_t a, size_t b) {
    const DeviceState& x = node.devices[a];
    const DeviceState& y = node.devices[b];
    if (x.ask != y.ask) return x.ask < y.ask;
    if (frag && frag_after[a] != frag_after[b]) return frag_after[a] < frag_after[b];
    if (d.share && node.free_milli(a) != node.free_milli(b)) return node.free_milli(a) < node.free_milli(b);
    if (node.free_vram(a) != node.free_vram(b)) return node.free_vram(a) < node.free_vram(b);
    return a < b;
  });
  double asks[kMaxDevicesPerNode];
  size_t chosen = 0;
  for (uint32_t k = 0; k < d.gpus && k < count; ++k) {
    choice.devices |= DeviceMask{1} << order[k];
    asks[chosen++] = node.devices[order[k]].ask;
    choice.max_ask = std::max(choice.max_ask, node.devices[order[k]].ask);
  }
  const double share = d.share ? d.milli / 1000.0 : 1.0;
  choice.price_per_hour = market::HourlyPrice({asks, chosen}, share, d.cpu, node.cpu_ask);
  if (!workload.empty()) {
    double after = 0;
    if (frag && count > 0) {
      after = frag_after[order[0]];
    } else {
      for (size_t i = 0; i < n; ++i) taken[i] = HasBit(choice.devices, i) ? d.milli : 0;
      after = NodeFragmentation(node, workload, taken, d.cpu, d.memory);
    }
    // Milli the placement itself takes would otherwise be counted as removed
    // fragmentation by classes that cannot use the node; FGD compares the
    // change in fragmentation only.
    choice.fragmentation = (after - frag_before) / 1000.0;
  }
  return choice;
}

double ScorePrice(const ScoreContext& c) {
  if (c.demand.gpus > 0) return c.snap.max_gpu_ask > 0 ? 1.0 - c.choice.max_ask / c.snap.max_gpu_ask : 1.0;
  return c.snap.max_cpu_ask > 0 ? 1.0 - c.node.cpu_ask / c.snap.max_cpu_ask : 1.0;
}

namespace {

bool HoldsImage(const NodeView& node, const TaskView& task) {
  return !task.image.empty() && node.cached_images.count(task.image) > 0;
}

// The share of the task's image the node holds: 1 for the image itself; else
// the share of its layer bytes among the layers of the node's cached images.
double ImageShareHeld(const NodeView& node, const TaskView& task) {
  if (HoldsImage(node, task)) return 1.0;
  if (!task.image_layers || !node.cached_layers) return 0.0;
  uint64_t total = 0, held = 0;
  for (const ImageLayer& layer : *task.image_layers) {
    total += layer.bytes;
    if (node.cached_layers->count(layer.digest)) held += layer.bytes;
  }
  return total == 0 ? 0.0 : static_cast<double>(held) / static_cast<double>(total);
}

size_t InputsHeld(const NodeView& node, const TaskView& task) {
  return static_cast<size_t>(std::count_if(task.inputs.begin(), task.inputs.end(),
                                           [&](const std::string& d) { return node.cached_inputs.count(d) > 0; }));
}

}  // namespace

double ScoreCache(const ScoreContext& c) {
  const TaskView& task = *c.demand.task;
  const double image = ImageShareHeld(*c.node.view, task);
  if (task.inputs.empty()) return image;
  return (image + static_cast<double>(InputsHeld(*c.node.view, task)) / static_cast<double>(task.inputs.size())) / 2;
}

std::string DescribeLocality(const NodeView& node, const TaskView& task) {
  std::string out = "lacks image";
  if (HoldsImage(node, task)) {
    out = "holds image";
  } else if (const double share = ImageShareHeld(node, task); share > 0) {
    // Floored: "100%" only for every byte.
    out = "holds " + std::to_string(static_cast<int>(share * 100)) + "% of the image's layers";
  }
  if (!task.inputs.empty()) {
    out += ", " + std::to_string(InputsHeld(node, task)) + "/" + std::to_string(task.inputs.size()) + " inputs";
  }
  return out;
}

double ScoreReliability(const ScoreContext& c) { return std::clamp(c.node.view->reliability, 0.0, 1.0); }

double ScorePacking(const ScoreContext& c) {
  double utilization = 0;
  if (c.demand.gpus > 0 && !c.node.devices.empty()) {
    double free = 0;
    for (size_t i = 0; i < c.node.devices.size(); ++i) {
      uint32_t f = c.node.free_milli(i);
      if (HasBit(c.choice.devices, i)) f -= std::min(f, c.demand.milli);
      free += f;
    }
    utilization = 1.0 - free / (1000.0 * c.node.devices.size());
  } else if (c.node.cpu_total > 0) {
    utilization = 1.0 - std::max(0.0, c.node.cpu_free() - c.demand.cpu) / c.node.cpu_total;
  }
  return c.demand.policy->packing == Packing::kPack ? utilization : 1.0 - utilization;
}

double ScoreEnergy(const ScoreContext& c) {
  if (c.node.view->energy_headroom >= 0) return std::min(c.node.view->energy_headroom, 1.0);
  double sum = 0;
  int known = 0;
  for (size_t i = 0; i < c.node.devices.size(); ++i) {
    if (HasBit(c.choice.devices, i) && c.node.devices[i].headroom >= 0) {
      sum += c.node.devices[i].headroom;
      ++known;
    }
  }
  return known > 0 ? sum / known : 0.5;
}

double ScoreFragmentation(const ScoreContext& c) { return -c.choice.fragmentation; }

ScorerFn FindScorer(const std::string& name) {
  static const std::map<std::string, ScorerFn, std::less<>> kScorers = {
      {kScorePrice, ScorePrice},     {kScoreCache, ScoreCache},   {kScoreReliability, ScoreReliability},
      {kScorePacking, ScorePacking}, {kScoreEnergy, ScoreEnergy}, {kScoreFragmentation, ScoreFragmentation},
  };
  auto it = kScorers.find(name);
  return it == kScorers.end() ? nullptr : it->second;
}

}  // namespace idlegrid::sched
