// Dispatcher (dispatcher.h): the snapshot of queued tasks (with their bids and
// what they have spent) beside the node table's, the plan, its commit, and
// the answers of `status --explain` and `market`.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string_view>

#include "capacity/node_capacity.h"
#include "common/failpoint.h"
#include "common/random.h"
#include "coordinator/dispatcher.h"
#include "coordinator/node_views.h"
#include "sched/cost_cap.h"
#include "sched/data_class.h"
#include "jobs/attempt_events.h"
#include "manifest/items.h"
#include "jobs/lease.h"
#include "jobs/task_state.h"
#include "manifest/manifest.h"
#include "market/earnings.h"
#include "market/market.h"
#include "sched/fair_share.h"
#include "sched/layer_locality.h"
#include "sched/feasibility.h"
#include "sched/pipeline.h"
#include "sched/snapshot.h"

namespace idlegrid::coordinator {
namespace {

// The tasks of a plan whose data class is not public, for one log line per
// placement of them (policy decisions are logged, never payloads).
struct SensitivePlacements {
  std::map<std::string, std::string> class_of;  // task key -> data class
  std::map<std::string, int> tier_of;           // node id -> trust tier, when any task is listed
};

SensitivePlacements NonPublicClasses(const std::vector<sched::TaskView>& tasks,
                                     const std::vector<sched::NodeView>& nodes) {
  SensitivePlacements out;
  for (const auto& t : tasks) {
    const std::string& name = t.data_class.name;
    if (!name.empty() && name != sched::kDataPublic) out.class_of[sched::TaskKey(t.job_id, t.index)] = name;
  }
  if (out.class_of.empty()) return out;
  for (const auto& n : nodes) out.tier_of[n.id] = n.trust_tier;
  return out;
}

// Ids, class and tier only: never the job's command, environment or data.
void LogDataPolicyDecision(const SensitivePlacements& placed, const store::NewAttempt& a) {
  auto it = placed.class_of.find(sched::TaskKey(a.job_id, a.index));
  if (it == placed.class_of.end()) return;
  auto tier = placed.tier_of.find(a.node_id);
  spdlog::info("data policy: job {} task {} (data class {}) placed on node {} (trust tier {}) as attempt {}", a.job_id,
               a.index, it->second, a.node_id, tier == placed.tier_of.end() ? -1 : tier->second, a.attempt_id);
}

// The explanation's text with the data policy's verdict under its summary line.
std::string WithDataPolicy(std::string text, const std::string& data_policy) {
  if (data_policy.empty()) return text;
  const size_t eol = text.find('\n');
  text.insert(eol == std::string::npos ? text.size() : eol + 1, "  " + data_policy + "\n");
  return text;
}

// What each account's active attempts hold (assigned, running, and stopping
// ones whose containers may still run: whatever holds capacity), for fair share.
sched::AccountState AccountStateOf(const std::vector<store::ActiveAttempt>& active,
                                   const std::map<std::string, double>& weights) {
  sched::AccountState out;
  out.account_weights = weights;
  for (const auto& a : active) {
    const uint32_t devices = a.device_uuids.empty() ? a.gpus : static_cast<uint32_t>(a.device_uuids.size());
    out.account_allocation[a.account] +=
        sched::AmountsOf(a.cpu, a.memory, devices, capacity::ClaimOf(a.gpu_milli, a.gpu_memory_bytes));
  }
  return out;
}

// What each account at a running-task limit may still start this pass: its
// limit less its active attempts. Accounts without a limit are not listed.
std::map<std::string, int64_t> RunningRoom(const std::map<std::string, int64_t>& limits,
                                           const std::vector<store::ActiveAttempt>& active) {
  std::map<std::string, int64_t> room(limits.begin(), limits.end());
  for (const auto& a : active) {
    if (auto r = room.find(a.account); r != room.end()) --r->second;
  }
  return room;
}

// Takes one slot of `account`'s room; false when it has none left.
bool TakeRoom(std::map<std::string, int64_t>& room, const std::string& account) {
  auto r = room.find(account);
  if (r == room.end()) return true;
  if (r->second <= 0) return false;
  --r->second;
  return true;
}

// What a capped task's attempts spent so far, and how many it made; the job
// is read once per pass into `capped`. NotFound-like errors leave it unread.
Result<std::pair<double, int>> SpentOf(store::Store& store, const store::QueuedTask& q,
                                       std::map<std::string, v1::Job>& capped, int64_t now) {
  auto it = capped.find(q.job_id);
  if (it == capped.end()) {
    IG_ASSIGN_OR_RETURN(v1::Job job, store.GetJob(q.job_id));
    it = capped.emplace(q.job_id, std::move(job)).first;
  }
  if (q.index >= static_cast<uint32_t>(it->second.tasks_size())) return std::pair<double, int>{0, 0};
  v1::Task* task = it->second.mutable_tasks(static_cast<int>(q.index));
  return std::pair<double, int>{jobs::FillCosts(task, now), task->attempts_size()};
}

std::vector<store::NewAttempt> AttemptsOf(const sched::Plan& plan, int64_t now) {
  std::vector<store::NewAttempt> attempts;
  for (const auto& p : plan.placements) {
    store::NewAttempt a{NewId("a"), p.job_id, p.index, p.node_id, now, p.device_uuids, 0, {}};
    a.placement.set_policy(p.policy);
    a.placement.set_pricing_rule(p.pricing_rule);
    a.placement.set_ask_per_gpu_hour(p.ask_per_gpu_hour);
    a.placement.set_bid_per_gpu_hour(p.bid_per_gpu_hour);
    a.placement.set_price_per_hour(p.price_per_hour);
    a.placement.set_estimated_cost(p.estimated_cost);
    a.placement.set_gpu_milli(p.gpu_milli);
    attempts.push_back(std::move(a));
  }
  return attempts;
}

// A verified task's attempt restores only a checkpoint its own node's
// provider wrote (NewAttempt::restore_only_from): its result must be
// independent of the providers it is compared with.
void KeepReplicasIndependent(std::vector<store::NewAttempt>& attempts, const std::vector<store::QueuedTask>& queued,
                             NodeTable& nodes) {
  std::set<std::string_view> verified;
  for (const auto& q : queued) {
    const std::string& mode = q.spec.verification().mode();
    if (!mode.empty() && mode != "none") verified.insert(q.job_id);
  }
  for (store::NewAttempt& a : attempts) {
    if (verified.count(a.job_id)) a.restore_only_from = nodes.ProviderOf(a.node_id);
  }
}

// Queue waits of the tasks this pass placed. Keyed by what was committed (a
// pass's few placements), not by the queue it read (up to 5000 tasks): no
// copy of the queue per pass.
void CountQueueWaits(EventCounters& counters, const std::vector<store::QueuedTask>& queued,
                     const std::vector<store::NewAttempt>& committed, int64_t now) {
  std::map<std::pair<std::string_view, uint32_t>, bool> placed;
  for (const auto& a : committed) placed[{a.job_id, a.index}] = true;
  for (const auto& q : queued) {
    if (placed.count({q.job_id, q.index})) {
      counters.QueueWait(static_cast<double>(std::max<int64_t>(0, now - q.queued_ms)) / 1000.0);
    }
  }
}

// Layer locality for a pass (sched/layer_locality.h): each task's image
// layers, and which of them each node's cached images hold. Reads the store
// once per distinct image; call with no lock held.
void AttachImageLayers(ImageCatalog& images, std::vector<sched::NodeView>& views, std::vector<sched::TaskView*> tasks) {
  sched::AttachImageLayers(views, std::move(tasks),
                           [&images](const std::string& image) { return images.LayersOf(image); });
}

std::vector<sched::TaskView*> PointersTo(std::vector<sched::TaskView>& tasks) {
  std::vector<sched::TaskView*> out;
  out.reserve(tasks.size());
  for (sched::TaskView& t : tasks) out.push_back(&t);
  return out;
}

// Sends the committed attempts. Each job is read once per batch, not once per
// attempt (a 500-task array would otherwise be loaded 500 times: quadratic in
// the sweep). An attempt not sent ends by the acknowledgement timeout.
void SendAll(store::Store& store, AssignmentSender& sender, const std::vector<store::NewAttempt>& committed,
             const SensitivePlacements& placed_classes) {
  std::map<std::string, v1::Job> jobs;
  for (const auto& a : committed) {
    LogDataPolicyDecision(placed_classes, a);
    auto it = jobs.find(a.job_id);
    if (it == jobs.end()) {
      auto job = store.GetJob(a.job_id);
      if (!job.ok()) {
        spdlog::warn("assignment {} not sent yet: {}", a.attempt_id, job.status().message());
        continue;
      }
      it = jobs.emplace(a.job_id, std::move(*job)).first;
    }
    Status st = sender.Send(a, &it->second);
    if (!st.ok()) spdlog::warn("assignment {} not sent yet: {}", a.attempt_id, st.message());
  }
}

}  // namespace

sched::TaskView Dispatcher::TaskViewOf(const store::QueuedTask& q, double spent, const sched::DataPolicy& data) const {
  const v1::JobSpec& spec = q.spec;
  sched::TaskView t;
  t.job_id = q.job_id;
  t.index = q.index;
  t.account = q.account;
  // The same rule as Assignment.untrusted_tenant (coordinator.cc).
  t.untrusted_tenant = !q.account.empty() && q.account != store::kOperatorAccount;
  t.resources = spec.resources();
  t.runtime = spec.runtime();
  t.job_class = spec.job_class();
  t.excluded_nodes.insert(q.excluded_nodes.begin(), q.excluded_nodes.end());
  t.pinned_node = spec.pinned_node();
  t.readiness = spec.readiness();
  t.pinned_device = spec.pinned_device();
  t.gpu_milli = spec.resources().gpu_milli();
  // One GPU with a VRAM amount is a slice of a device others may share,
  // unless the job's data class forbids co-tenancy (then a whole device with
  // at least that much VRAM).
  t.vram_slice = capacity::IsVramSlice(spec.resources(), spec.exclusive_gpu());
  t.co_tenancy_allowed = !spec.exclusive_gpu();
  t.policy = spec.policy();
  const auto& c = spec.constraints();
  t.gpu_models.insert(c.gpu_models().begin(), c.gpu_models().end());
  t.min_compute_capability = c.min_compute_capability();
  t.min_cuda_version = c.min_cuda_version();
  t.regions.insert(c.regions().begin(), c.regions().end());
  t.min_trust_tier = static_cast<int>(c.min_trust_tier());
  t.image = manifest::ImageDigestOf(spec.image());
  for (const v1::InputSpec& in : manifest::InputsForTask(spec, q.index)) t.inputs.push_back(in.artifact());
  t.image_signers = parts_.images->SignersOf(t.image);
  t.registry = spec.registry_image().registry();
  t.max_price_per_gpu_hour = spec.max_price_per_gpu_hour();
  t.max_price_per_cpu_core_hour = spec.max_price_per_cpu_core_hour();
  // The cap covers all of a task's attempts: the next one may use what is left.
  t.max_cost = sched::BudgetLeft(spec.max_cost(), spent);
  t.run_timeout_seconds = spec.run_timeout_seconds();
  t.verified = jobs::VerifiedJob(spec);
  sched::ApplyDataClass(sched::DataClassOf(data, spec), &t);
  return t;
}

Dispatcher::DispatchInput Dispatcher::DispatchTasks(const std::vector<store::QueuedTask>& queued,
                                                    const std::vector<store::ActiveAttempt>& active,
                                                    const sched::DataPolicy& data,
                                                    const std::map<std::string, int64_t>& running_limits, int64_t now) {
  DispatchInput in;
  // An account at its running-task quota places nothing more this round.
  std::map<std::string, int64_t> room = RunningRoom(running_limits, active);
  for (const auto& q : queued) {
    if (!TakeRoom(room, q.account)) continue;
    double spent = 0;
    if (q.spec.max_cost() > 0) {
      Result<std::pair<double, int>> so_far = SpentOf(*parts_.store, q, in.capped, now);
      if (!so_far.ok()) continue;
      spent = so_far->first;
      if (std::string msg = sched::CapSpentReason(spent, q.spec.max_cost(), so_far->second); !msg.empty()) {
        if (Status st = parts_.store->FailQueuedTask(q.job_id, q.index, v1::COST_CAP_REACHED, msg, now); !st.ok()) {
          // The task stays queued; the next pass finds it over its cap again.
          spdlog::warn("task {}/{} over its cost cap could not be failed: {}", q.job_id, q.index, st.message());
        }
        parts_.changes->Notify();
        continue;
      }
    }
    if (spent > 0) in.spending.emplace_back(in.tasks.size(), spent);
    in.tasks.push_back(TaskViewOf(q, spent, data));
  }
  return in;
}

void Dispatcher::FailPricedOut(const DispatchInput& in, const sched::Plan& plan, int64_t now) {
  // A task whose earlier attempts spent part of its cap and whose remaining
  // budget no feasible offer fits stops here, with its own failure class,
  // rather than waiting out its queue timeout. The plan says why it waits.
  for (const auto& [i, spent] : in.spending) {
    const sched::TaskView& t = in.tasks[i];
    auto why = plan.waiting.find(sched::TaskKey(t.job_id, t.index));
    if (why == plan.waiting.end()) continue;
    std::string msg = sched::PricedOutReason(why->second, spent, in.capped.at(t.job_id).spec().max_cost());
    if (msg.empty()) continue;
    if (Status st = parts_.store->FailQueuedTask(t.job_id, t.index, v1::COST_CAP_REACHED, msg, now); !st.ok()) {
      spdlog::warn("task {}/{} over its cost cap could not be failed: {}", t.job_id, t.index, st.message());
    }
    parts_.changes->Notify();
  }
}

Dispatcher::Dispatcher(Parts parts, std::unique_ptr<sched::Scheduler> scheduler, sched::PolicyConfig policies)
    : parts_(parts), scheduler_(std::move(scheduler)), policies_(std::move(policies)) {}

void Dispatcher::Pass() {
  auto expired = parts_.store->ExpireQueuedTasks(parts_.clock->NowMs());
  if (expired.ok() && *expired > 0) parts_.changes->Notify();
  DispatchOnce();
}

void Dispatcher::FillWaiting(v1::Job* job) {
  MutexLock lock(&mu_);
  for (auto& task : *job->mutable_tasks()) {
    if (task.state() != v1::QUEUED) continue;
    auto it = waiting_.find(sched::TaskKey(job->id(), task.index()));
    if (it != waiting_.end()) task.set_message(it->second);
  }
}

std::map<std::string, market::RecentPrice> Dispatcher::RecentPrices(int64_t now_ms) {
  MutexLock lock(&mu_);
  return recent_prices_.All(now_ms);
}

void Dispatcher::RecordClearingPrices(const std::vector<store::NewAttempt>& placed, int64_t now_ms) {
  const std::vector<NodeTable::ClearingAsk> asks = parts_.nodes->ClearingAsks(placed);
  MutexLock lock(&mu_);
  for (const auto& a : asks) recent_prices_.Record(a.device_class, a.per_hour, now_ms);
}

void Dispatcher::DispatchOnce() {
  int64_t now = parts_.clock->NowMs();
  auto queued = parts_.store->QueuedTasks(5000, now);
  if (!queued.ok()) {
    spdlog::error("dispatch: {}", queued.status().ToString());
    return;
  }
  if (queued->empty()) return;
  const auto started = std::chrono::steady_clock::now();
  auto active = parts_.store->ActiveAttempts();
  if (!active.ok()) return;
  NodeTable::Snapshot snapshot = parts_.nodes->Views(*active);
  const AccountTerms terms = parts_.account_terms->Current();
  DispatchInput in = DispatchTasks(*queued, *active, *snapshot.data, terms.running_limits, now);
  AttachImageLayers(*parts_.images, snapshot.views, PointersTo(in.tasks));
  const auto placed_classes = NonPublicClasses(in.tasks, snapshot.views);
  sched::AccountState accounts = AccountStateOf(*active, terms.weights);
  accounts.standing = parts_.standing->Read(*queued, *active, parts_.nodes->StandingFleet());
  sched::Plan plan = scheduler_->Schedule(std::move(snapshot.views), in.tasks, accounts);
  {
    MutexLock lock(&mu_);
    waiting_.clear();
    for (const auto& [key, why] : plan.waiting) waiting_.emplace(key, why.summary);
  }
  FailPricedOut(in, plan, now);
  if (plan.placements.empty()) return;
  // Stamped as late as possible: the attempt exists from its commit on (the
  // fault matrix's history checker compares these times with attempts' ends).
  std::vector<store::NewAttempt> attempts = AttemptsOf(plan, parts_.clock->NowMs());
  KeepReplicasIndependent(attempts, *queued, *parts_.nodes);
  const auto planned = std::chrono::steady_clock::now();
  auto committed = parts_.store->CommitAssignments(attempts);
  if (!committed.ok()) {
    spdlog::error("dispatch commit: {}", committed.status().ToString());
    return;
  }
  RecordClearingPrices(*committed, now);
  const auto seconds = [](auto d) { return std::chrono::duration<double>(d).count(); };
  parts_.counters->Dispatched(seconds(planned - started), seconds(std::chrono::steady_clock::now() - planned));
  CountQueueWaits(*parts_.counters, *queued, *committed, now);
  // The store's guard refused placements another coordinator (or a change
  // since the snapshot) made stale: re-plan at once from a fresh snapshot, a
  // bounded number of times in a row, then at the normal pace.
  if (committed->size() < attempts.size()) {
    spdlog::info("dispatch: {} of {} placements conflicted; re-planning", attempts.size() - committed->size(),
                 attempts.size());
    if (conflict_replans_ < kMaxConflictReplans) {
      ++conflict_replans_;
      parts_.changes->Notify();
    }
  } else {
    conflict_replans_ = 0;
  }
  // Failpoint: committed, not sent (the acknowledgement timeout requeues them).
  if (IG_FAILPOINT("coordinator.dispatch.after_commit")) return;
  SendAll(*parts_.store, *parts_.sender, *committed, placed_classes);
  parts_.changes->Notify();
}

Result<v1::ExplainJobResponse> Dispatcher::Explain(const std::string& job_id) {
  int64_t now = parts_.clock->NowMs();
  IG_ASSIGN_OR_RETURN(v1::Job job, parts_.store->GetJob(job_id));
  IG_ASSIGN_OR_RETURN(auto active, parts_.store->ActiveAttempts());
  NodeTable::Snapshot snapshot = parts_.nodes->Views(active);
  std::vector<sched::NodeView>& views = snapshot.views;
  const std::shared_ptr<const sched::DataPolicy> data = snapshot.data;
  // The queue shapes the fragmentation scorer as it does in Schedule; its
  // entries also carry the nodes each task may no longer use, as the store
  // keeps them (tasks still backing off included).
  std::vector<sched::TaskView> queue;
  std::map<uint32_t, store::QueuedTask> mine;
  if (auto queued = parts_.store->QueuedTasks(5000); queued.ok()) {
    for (const auto& q : *queued) {
      queue.push_back(TaskViewOf(q, 0, *data));
      if (q.job_id == job_id) mine.emplace(q.index, q);
    }
  }
  // The job's own tasks are explained from views made below: its image too.
  sched::TaskView job_image;
  job_image.image = manifest::ImageDigestOf(job.spec().image());
  std::vector<sched::TaskView*> located = PointersTo(queue);
  located.push_back(&job_image);
  AttachImageLayers(*parts_.images, views, std::move(located));
  const sched::FairShareStandings standings(queue, AccountStateOf(active, parts_.account_terms->Current().weights),
                                            sched::FleetTotals(views));
  v1::ExplainJobResponse out;
  out.set_job_id(job_id);
  for (auto& task : *job.mutable_tasks()) {
    if (task.state() != v1::QUEUED) continue;
    auto it = mine.find(task.index());
    store::QueuedTask q =
        it != mine.end() ? it->second : store::QueuedTask{job_id, task.index(), job.spec(), {}, 0, job.account()};
    sched::TaskView view = TaskViewOf(q, jobs::FillCosts(&task, now), *data);
    if (view.image == job_image.image) view.image_layers = job_image.image_layers;
    sched::Explanation e = sched::Explain(views, view, policies_, 3, 0, queue);
    e.fair_share = sched::FormatFairShare(standings.Of(view));
    v1::TaskExplanation* t = out.add_tasks();
    t->set_index(task.index());
    t->set_state(task.state());
    t->set_policy(e.policy);
    t->set_total_nodes(e.total_nodes);
    t->set_feasible_nodes(e.feasible_nodes);
    for (const auto& f : e.filtered) {
      v1::FilterCount* fc = t->add_filtered();
      fc->set_stage(f.stage);
      fc->set_reason(f.reason);
      fc->set_nodes(f.nodes);
      fc->set_example_node(f.example_node);
      fc->set_example_detail(f.example_detail);
    }
    for (const auto& c : e.top) {
      v1::Candidate* cand = t->add_top();
      cand->set_node_id(c.node_id);
      for (const auto& d : c.device_uuids) cand->add_device_uuids(d);
      cand->set_price_per_hour(c.price_per_hour);
      cand->set_total(c.total);
      for (const auto& term : c.terms) {
        v1::ScoreTerm* st = cand->add_terms();
        st->set_scorer(term.scorer);
        st->set_value(term.value);
        st->set_weight(term.weight);
        st->set_contribution(term.contribution);
      }
    }
    t->set_summary(e.summary);
    t->set_fair_share(e.fair_share);
    t->set_data_policy(sched::DescribeDataClass(view.data_class));
    t->set_text(WithDataPolicy(sched::FormatExplanation(e), t->data_policy()));
  }
  return out;
}

Result<v1::MarketResponse> Dispatcher::Market() {
  IG_ASSIGN_OR_RETURN(auto active, parts_.store->ActiveAttempts());
  const std::vector<sched::NodeView> views = parts_.nodes->Views(active).views;
  const std::map<std::string, market::RecentPrice> recent = RecentPrices(parts_.clock->NowMs());
  auto rows = market::OrderBook(sched::MarketOffers(views));
  v1::MarketResponse out;
  std::string text = market::FormatOrderBook(rows);
  for (const auto& r : rows) {
    v1::MarketRow* row = out.add_rows();
    row->set_device_class(r.device_class);
    row->set_providers(r.providers);
    row->set_free_units(r.free_units);
    row->set_min_ask(r.min_ask);
    row->set_median_ask(r.median_ask);
    row->set_max_ask(r.max_ask);
  }
  market::AddRecentPrices(recent, out.mutable_rows());
  for (const auto& row : out.rows()) {
    if (row.recent_placements() == 0) continue;
    text += "recent " + row.device_class() + ": " + market::DescribeRecentPrice(row) + " in the last hour\n";
  }
  out.set_pricing_rule(market::kPayAsAsk);
  out.set_text(text);
  return out;
}

}  // namespace idlegrid::coordinator
