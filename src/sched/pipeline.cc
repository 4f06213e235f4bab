#include "sched/pipeline.h"

#include <algorithm>
#include <bit>
#include <map>
#include <optional>

#include "sched/evaluate.h"
#include "sched/fair_share.h"
#include "sched/standing.h"

namespace idlegrid::sched {
namespace {

// One ranked node in a shape's heap; valid while `version` is the node's.
struct Entry {
  double primary;
  double score;
  uint64_t tiebreak;
  uint32_t node;
  uint32_t version;
  DeviceMask devices;
  double price_per_hour;
  double max_ask;
};

// Heap order: the best entry on top.
bool Worse(const Entry& a, const Entry& b) {
  if (a.primary != b.primary) return a.primary < b.primary;
  if (a.score != b.score) return a.score < b.score;
  if (a.tiebreak != b.tiebreak) return a.tiebreak > b.tiebreak;
  return a.node > b.node;
}

// Tasks that are interchangeable for placement share one shape: its static
// verdict per node is computed once, and a heap keeps its feasible nodes
// ranked. After every placement the changed node is re-ranked in every shape
// still needed, so each heap holds one current entry per feasible node (older
// ones are skipped by version). Capacity only shrinks while a plan is built,
// so a node once infeasible for a shape stays so.
struct Shape {
  Demand demand;
  const CompiledPolicy* policy = nullptr;
  size_t remaining = 0;
  bool active = false;
  std::vector<uint8_t> ok;
  std::vector<DeviceMask> eligible;
  std::vector<Entry> heap;
  std::optional<WaitReason> waiting;  // once computed
  // The standing cap: the feasible nodes of accounts proven for the shape's
  // image, once listed; and, once a task had to be held to them, their own
  // heap, kept current beside `heap`, so a held task does not pass over
  // every unproven node to find one.
  bool proven_listed = false;
  std::vector<uint32_t> proven_nodes;
  std::vector<uint8_t> proven;  // per node, once listed
  bool proven_heap_built = false;
  std::vector<Entry> proven_heap;
  // Whether an unproven node could take a task without exclusions, as of
  // the plan's placement count `held_scan_at` (a held task's reason).
  uint64_t held_scan_at = UINT64_MAX;
  bool held_memo = false;
};

// The shapes of one plan's tasks: shape_of[t] indexes `shapes`, or is -1 for
// a task without one (its policy is unknown).
struct ShapeSet {
  std::vector<Shape> shapes;
  std::vector<int64_t> shape_of;
};

// The tasks the placement loop could not place, in the order it met them;
// capped[t]: task t waits for the standing cap.
struct Unplaced {
  std::vector<size_t> waiting;
  std::vector<uint8_t> capped;
};

class PipelineScheduler : public Scheduler {
 public:
  explicit PipelineScheduler(PipelineOptions options) : options_(std::move(options)) {
    for (const auto& [name, policy] : options_.config.policies) compiled_[name] = Compile(policy);
  }

  using Scheduler::Schedule;
  Plan Schedule(std::vector<NodeView> nodes, const std::vector<TaskView>& tasks,
                const AccountState& accounts) const override;

 private:
  const CompiledPolicy* Find(const TaskView& task) const {
    auto it = compiled_.find(task.policy.empty() ? options_.config.default_policy : task.policy);
    return it == compiled_.end() ? nullptr : &it->second;
  }

  // Groups `tasks` into shapes; a task naming an unknown policy gets no
  // shape and waits in `plan` with that reason.
  ShapeSet GroupIntoShapes(const std::vector<TaskView>& tasks, const Snapshot& snap, Plan* plan) const;

  const PipelineOptions options_;
  std::map<std::string, CompiledPolicy, std::less<>> compiled_;
};

class Run {
 public:
  Run(Snapshot snap, Workload workload) : snap_(std::move(snap)), workload_(std::move(workload)) {}

  void Activate(Shape* s) {
    const size_t n = snap_.nodes.size();
    s->ok.assign(n, 0);
    s->eligible.assign(n, 0);
    s->heap.clear();
    for (uint32_t i = 0; i < n; ++i) {
      DeviceMask eligible = 0;
      if (!StaticFeasible(snap_.nodes[i], s->demand, &eligible, nullptr)) continue;
      s->ok[i] = 1;
      s->eligible[i] = eligible;
      Rank(s, i, /*heapify=*/false);
    }
    std::make_heap(s->heap.begin(), s->heap.end(), Worse);
    s->active = true;
  }

  // Adds node i's current ranking to s's heaps if it can take the demand now.
  void Rank(Shape* s, uint32_t i, bool heapify) {
    const NodeState& node = snap_.nodes[i];
    Ranking r;
    if (!Evaluate(snap_, node, s->demand, *s->policy, s->eligible[i], workload_, &r, nullptr, nullptr)) return;
    const Entry e{r.primary,    r.score,          node.tiebreak,           i,
                  node.version, r.choice.devices, r.choice.price_per_hour, r.choice.max_ask};
    s->heap.push_back(e);
    if (heapify) std::push_heap(s->heap.begin(), s->heap.end(), Worse);
    if (s->proven_heap_built && s->proven[i]) {
      s->proven_heap.push_back(e);
      std::push_heap(s->proven_heap.begin(), s->proven_heap.end(), Worse);
    }
  }

  // Pops the best current entry of `heap` that `task` did not exclude.
  bool PopBest(std::vector<Entry>* heap, const TaskView& task, Entry* out) {
    std::vector<Entry> excluded;
    bool found = false;
    while (!heap->empty()) {
      std::pop_heap(heap->begin(), heap->end(), Worse);
      Entry e = heap->back();
      heap->pop_back();
      if (e.version != snap_.nodes[e.node].version) continue;
      if (Excluded(snap_.nodes[e.node], task, nullptr)) {
        excluded.push_back(e);
        continue;
      }
      *out = e;
      found = true;
      break;
    }
    for (const Entry& e : excluded) {
      heap->push_back(e);
      std::push_heap(heap->begin(), heap->end(), Worse);
    }
    return found;
  }

  // The best node for `task`: any, or, when the standing cap holds it to
  // proven accounts (`proven_only`), one of theirs. *held: it waits for
  // the cap (some other node could take it now).
  bool Best(Shape* s, const TaskView& task, bool proven_only, Entry* out, bool* held) {
    if (!proven_only) return PopBest(&s->heap, task, out);
    if (!s->proven_heap_built) {
      for (const Entry& e : s->heap) {
        if (e.version == snap_.nodes[e.node].version && s->proven[e.node]) s->proven_heap.push_back(e);
      }
      std::make_heap(s->proven_heap.begin(), s->proven_heap.end(), Worse);
      s->proven_heap_built = true;
    }
    if (PopBest(&s->proven_heap, task, out)) return true;
    // Held only if an unproven node could take it now: found by a scan,
    // remembered per shape until the next placement for tasks without
    // exclusions (most of a held queue), so a long queue scans once.
    const bool plain = task.excluded_nodes.empty();
    if (!plain || s->held_scan_at != placements_) {
      const bool any = std::any_of(s->heap.begin(), s->heap.end(), [&](const Entry& e) {
        return e.version == snap_.nodes[e.node].version && !s->proven[e.node] &&
               !Excluded(snap_.nodes[e.node], task, nullptr);
      });
      if (!plain) {
        *held = any;
        return false;
      }
      s->held_scan_at = placements_;
      s->held_memo = any;
    }
    *held = s->held_memo;
    return false;
  }

  // Whether node i could take the shape's demand once free: its dynamic
  // stages and the cost cap passed against its whole capacity. A proven
  // node too small or too dear for the task never takes it, so it must not
  // hold the task back.
  bool CouldEverTake(const Shape& s, uint32_t i) {
    const NodeState& node = snap_.nodes[i];
    NodeState empty = node;
    const uint64_t memory = std::max<uint64_t>(node.view->memory_total, node.ledger.memory_capacity());
    empty.ledger = capacity::NodeLedger(node.cpu_total, memory, node.ledger.FreeDisk());
    for (const auto& d : node.ledger.devices()) empty.ledger.AddDevice(capacity::DeviceLedger(d.vram_capacity()));
    Ranking r;
    return Evaluate(snap_, empty, s.demand, *s.policy, s.eligible[i], workload_, &r, nullptr, nullptr);
  }

  void CountPlacement() { ++placements_; }

  // Whether some node the shape can use, of an account proven for the
  // task's image, is one `task` did not exclude (busy or not: the cap holds
  // work for it rather than hand it to unproven accounts; but not one that
  // could never take it, CouldEverTake).
  bool AnyProven(Shape* s, const TaskView& task, const StandingCap& cap) {
    if (!s->proven_listed) {
      s->proven.assign(snap_.nodes.size(), 0);
      for (uint32_t i = 0; i < snap_.nodes.size(); ++i) {
        if (s->ok[i] && cap.Proven(snap_.views[i].provider, task.image) && CouldEverTake(*s, i)) {
          s->proven_nodes.push_back(i);
          s->proven[i] = 1;
        }
      }
      s->proven_listed = true;
    }
    return std::any_of(s->proven_nodes.begin(), s->proven_nodes.end(),
                       [&](uint32_t i) { return !Excluded(snap_.nodes[i], task, nullptr); });
  }

  void Compact(Shape* s) {
    const auto stale = [&](const Entry& e) { return e.version != snap_.nodes[e.node].version; };
    if (s->heap.size() > 2 * snap_.nodes.size() + 64) {
      std::erase_if(s->heap, stale);
      std::make_heap(s->heap.begin(), s->heap.end(), Worse);
    }
    if (s->proven_heap.size() > 2 * s->proven_nodes.size() + 64) {
      std::erase_if(s->proven_heap, stale);
      std::make_heap(s->proven_heap.begin(), s->proven_heap.end(), Worse);
    }
  }

  Snapshot& snap() { return snap_; }
  const Workload& workload() const { return workload_; }

 private:
  Snapshot snap_;
  const Workload workload_;
  uint64_t placements_ = 0;
};

Placement MakePlacement(const Snapshot& snap, const Shape& s, const TaskView& task, const Entry& e) {
  Placement p;
  p.job_id = task.job_id;
  p.index = task.index;
  const NodeView& view = snap.views[e.node];
  p.node_id = view.id;
  for (size_t i = 0; i < snap.nodes[e.node].devices.size(); ++i) {
    if ((e.devices >> i) & 1) p.device_uuids.push_back(view.gpus[i].uuid());
  }
  p.gpu_milli = s.demand.gpus > 0 ? s.demand.milli : 0;
  p.gpu_memory_bytes = s.demand.share ? s.demand.vram : 0;
  p.policy = s.policy->policy->name;
  p.pricing_rule = market::kPayAsAsk;
  p.ask_per_gpu_hour = e.max_ask;
  p.bid_per_gpu_hour = task.max_price_per_gpu_hour;
  p.price_per_hour = e.price_per_hour;
  p.estimated_cost = e.price_per_hour * s.demand.bid.run_hours;
  return p;
}

WaitReason WaitingSummary(const Snapshot& snap, const Shape& s, const Workload& workload) {
  std::vector<FilterTally> tallies;
  std::vector<std::pair<uint32_t, Ranking>> feasible;
  TallyNodes(snap, s.demand, *s.policy, workload, &tallies, &feasible);
  WaitReason why;
  why.feasible_nodes = static_cast<uint32_t>(feasible.size());
  why.summary = Summarize(static_cast<uint32_t>(snap.nodes.size()), why.feasible_nodes, "", tallies);
  for (const FilterTally& t : tallies) {
    if (t.nodes > 0) why.filtered_by.insert(t.stage);
  }
  return why;
}

ShapeSet PipelineScheduler::GroupIntoShapes(const std::vector<TaskView>& tasks, const Snapshot& snap,
                                            Plan* plan) const {
  ShapeSet set;
  std::vector<Shape>& shapes = set.shapes;
  std::map<std::string, size_t> shape_ids;
  set.shape_of.assign(tasks.size(), -1);
  for (size_t t = 0; t < tasks.size(); ++t) {
    const CompiledPolicy* policy = Find(tasks[t]);
    if (policy == nullptr) {
      plan->waiting[TaskKey(tasks[t].job_id, tasks[t].index)].summary = UnknownPolicy(tasks[t].policy, options_.config);
      continue;
    }
    Demand d = MakeDemand(tasks[t], *policy->policy, snap);
    auto [it, inserted] = shape_ids.try_emplace(ShapeKey(d), shapes.size());
    if (inserted) {
      shapes.emplace_back();
      shapes.back().demand = d;
      shapes.back().policy = policy;
    }
    set.shape_of[t] = static_cast<int64_t>(it->second);
    ++shapes[it->second].remaining;
  }
  return set;
}

// After a placement on `node`, re-ranks it in every active shape still
// needed that can use it, and frees the heaps of shapes with no task left.
void RerankAfterPlacement(Run* run, std::vector<Shape>* shapes, std::vector<size_t>* active, uint32_t node) {
  bool finished = false;
  for (size_t id : *active) {
    Shape& other = (*shapes)[id];
    if (other.remaining == 0) {
      finished = true;
      continue;
    }
    if (other.ok[node]) {
      run->Rank(&other, node, /*heapify=*/true);
      run->Compact(&other);
    }
  }
  if (finished) {
    std::erase_if(*active, [&](size_t id) {
      Shape& done = (*shapes)[id];
      if (done.remaining > 0) return false;
      done.heap = {};
      done.proven_heap = {};
      return true;
    });
  }
}

// Places each task, in the order `fair_share` picks them, on its shape's best
// node (within the standing cap), holding that node's capacity before the
// next; returns the tasks left waiting.
Unplaced PlaceInFairShareOrder(const std::vector<TaskView>& tasks, Run* run, ShapeSet* set, FairShareQueue* fair_share,
                               StandingCap* standing, Plan* plan) {
  Snapshot& snap = run->snap();
  std::vector<Shape>& shapes = set->shapes;
  std::vector<size_t> active;  // shapes with a heap
  Unplaced unplaced;
  unplaced.capped.assign(tasks.size(), 0);
  while (!fair_share->Empty()) {
    const size_t t = fair_share->Next();
    if (set->shape_of[t] < 0) continue;
    Shape& s = shapes[set->shape_of[t]];
    if (!s.active) {
      run->Activate(&s);
      active.push_back(set->shape_of[t]);
    }
    --s.remaining;
    Entry e{};
    const bool weighed = standing->Applies(tasks[t]);
    const bool proven_only = weighed && !standing->UnprovenMayTake(run->AnyProven(&s, tasks[t], *standing));
    bool held = false;
    if (!run->Best(&s, tasks[t], proven_only, &e, &held)) {
      unplaced.capped[t] = held;
      unplaced.waiting.push_back(t);
      continue;
    }
    standing->Placed(tasks[t], snap.views[e.node].provider);
    run->CountPlacement();
    plan->placements.push_back(MakePlacement(snap, s, tasks[t], e));
    ReserveOn(&snap.nodes[e.node], s.demand, e.devices);
    fair_share->Charge(AmountsOf(s.demand.cpu, s.demand.memory, s.demand.gpus, s.demand.device_claim()));
    RerankAfterPlacement(run, &shapes, &active, e.node);
  }
  return unplaced;
}

// Why each waiting task waits, as the nodes stand after this plan.
void ExplainWaiting(const Snapshot& snap, const Workload& workload, const std::vector<TaskView>& tasks,
                    const StandingCap& standing, const Unplaced& unplaced, ShapeSet* set, Plan* plan) {
  for (size_t t : unplaced.waiting) {
    Shape& s = set->shapes[set->shape_of[t]];
    Shape own;
    own.demand = s.demand;
    own.demand.task = &tasks[t];
    own.policy = s.policy;
    WaitReason why;
    if (!tasks[t].excluded_nodes.empty()) {
      why = WaitingSummary(snap, own, workload);
    } else {
      if (!s.waiting) s.waiting = WaitingSummary(snap, own, workload);
      why = *s.waiting;
    }
    if (unplaced.capped[t]) why.summary = standing.WaitingReason() + "; " + why.summary;
    plan->waiting[TaskKey(tasks[t].job_id, tasks[t].index)] = std::move(why);
  }
}

Plan PipelineScheduler::Schedule(std::vector<NodeView> nodes, const std::vector<TaskView>& tasks,
                                 const AccountState& accounts) const {
  Plan plan;
  const ResourceAmounts fleet = FleetTotals(nodes);
  Run run(BuildSnapshot(std::move(nodes), options_.seed), BuildWorkload(tasks));
  ShapeSet set = GroupIntoShapes(tasks, run.snap(), &plan);
  // The fair-share stage picks which task goes next (fair_share.h); a task
  // placed here counts toward its account's share for the next pick.
  FairShareQueue fair_share(tasks, accounts, fleet);
  // The standing stage (standing.h): a verified task goes to an unproven
  // account only while they hold less than their share; each placement
  // counts toward it for the next.
  StandingCap standing(accounts.standing);
  const Unplaced unplaced = PlaceInFairShareOrder(tasks, &run, &set, &fair_share, &standing, &plan);
  ExplainWaiting(run.snap(), run.workload(), tasks, standing, unplaced, &set, &plan);
  return plan;
}

}  // namespace

std::string TaskKey(const std::string& job_id, uint32_t index) { return job_id + "/" + std::to_string(index); }

std::unique_ptr<Scheduler> NewPipelineScheduler(PipelineOptions options) {
  return std::make_unique<PipelineScheduler>(std::move(options));
}

Status ApplyPlacement(NodeView* node, const TaskView& task, const Placement& placement) {
  if (node->id != placement.node_id) {
    return Status::FailedPrecondition("placement is for node " + placement.node_id + ", not " + node->id);
  }
  std::vector<NodeView> one = {*node};
  Snapshot snap = BuildSnapshot(std::move(one), 0);
  NodeState& state = snap.nodes[0];
  static const SchedulingPolicy kAny{"apply", {}, Packing::kSpread, false};
  Demand d = MakeDemand(task, kAny, snap);
  DeviceMask named = 0;
  for (const auto& uuid : placement.device_uuids) {
    bool found = false;
    for (size_t i = 0; i < state.devices.size(); ++i) {
      if (node->gpus[i].uuid() == uuid && !((named >> i) & 1)) {
        named |= DeviceMask{1} << i;
        found = true;
        break;
      }
    }
    if (!found) return Status::FailedPrecondition("no free device " + uuid + " on node " + node->id);
  }
  if (static_cast<uint32_t>(std::popcount(named)) != d.gpus) {
    return Status::FailedPrecondition("placement names " + std::to_string(std::popcount(named)) +
                                      " devices, task needs " + std::to_string(d.gpus));
  }
  Rejection why;
  DeviceMask eligible = named;
  if (!DynamicFeasible(state, d, &eligible, &why) || eligible != named) {
    if (why.reason.empty()) why.reason = "a named device is no longer free";
    return Status::FailedPrecondition(node->id + ": " + why.reason + (why.detail.empty() ? "" : ", " + why.detail));
  }
  ReserveOn(&state, d, named);
  node->cpu_free = state.cpu_free();
  node->memory_free = state.memory_free();
  node->disk_free = state.disk_free();
  node->gpu_free_milli.resize(node->gpus.size(), 0);
  for (size_t i = 0; i < node->gpus.size(); ++i) {
    if (i < state.devices.size()) {
      node->gpu_free_milli[i] = state.free_milli(i);
      node->gpus[i].set_allocatable_memory_bytes(state.free_vram(i));
    }
  }
  return Status::Ok();
}

std::vector<market::Offer> MarketOffers(const std::vector<NodeView>& nodes) {
  std::vector<market::Offer> out;
  for (const NodeView& n : nodes) {
    if (!n.online || !n.unschedulable_reason.empty()) continue;
    std::map<std::string, double> free_by_class;
    for (size_t i = 0; i < n.gpus.size(); ++i) {
      const uint32_t milli = i < n.gpu_free_milli.size()                ? n.gpu_free_milli[i]
                             : n.gpus[i].allocatable_memory_bytes() > 0 ? kWholeGpuMilli
                                                                        : 0;
      free_by_class[n.gpus[i].name()] += milli == kWholeGpuMilli ? 1 : 0;
    }
    for (const auto& [device_class, free] : free_by_class) {
      out.push_back({n.id, device_class, free, market::AskFor(n.asks, device_class)});
    }
    if (n.cpu_free > 0)
      out.push_back({n.id, market::kCpuCoreClass, n.cpu_free, market::AskFor(n.asks, market::kCpuCoreClass)});
  }
  return out;
}

}  // namespace idlegrid::sched
