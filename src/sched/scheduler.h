#pragma once
// The scheduling core: pure placement over an immutable snapshot. No I/O, no
// clock, no threads. The coordinator builds the snapshot, calls Schedule, and
// commits the returned plan in one transaction that re-checks each placement.
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "idlegrid/v1/idlegrid.pb.h"
#include "sched/data_policy.h"

namespace idlegrid::sched {

// An entry of TaskView::excluded_nodes that rules out every node of a
// provider account: "provider:" + account.
inline constexpr char kProviderExclusion[] = "provider:";
// An entry that rules out every node NOT of a provider account: a
// known-answer check meant for that provider (docs/verification.md).
inline constexpr char kOnlyProvider[] = "only-provider:";

// One layer of a layered image, for layer locality: a node that holds most of
// an image's bytes (its base layers, under another image) fetches only the rest.
struct ImageLayer {
  std::string digest;
  uint64_t bytes = 0;  // as stored (compressed)
};

struct NodeView {
  std::string id;
  std::string provider;  // the provider account that owns it (verification: one vote per provider)
  bool online = false;
  double cpu_free = 0;       // cores not held by active attempts
  uint64_t memory_free = 0;  // bytes not held by active attempts
  // Devices with allocatable_memory_bytes already net of the owner's reserve
  // and of what active attempts hold.
  std::vector<v1::GpuDevice> gpus;
  std::vector<std::string> runtimes;
  std::vector<std::string> job_classes;  // job classes the owner approves (JobSpec.job_class)
  v1::Enforcement enforcement;
  // Why the node takes no ordinary work ("" if it does): readiness benchmark
  // pending or failed, paused by its owner, ...
  std::string unschedulable_reason;

  // --- Used by the pipeline scheduler (pipeline.h). The defaults keep callers
  // that fill only the fields above working and never make a node infeasible.
  double cpu_total = 0;                 // offered cores, for spread/pack (0: cpu_free is taken as the total)
  uint64_t memory_total = 0;            // offered bytes, for fair share's fleet total (0: memory_free is taken)
  uint64_t disk_free = kDiskUnknown;    // scratch bytes free; kDiskUnknown: not checked
  std::string region;                   // data-residency region ("eu-west", ...)
  int trust_tier = 0;                   // see kTrust* in pipeline.h
  double reliability = 0.5;             // 0..1, share of attempts that ended well; 0.5: no history
  std::set<std::string> cached_images;  // image digests verified and loaded on the node
  std::set<std::string> cached_inputs;  // input artifact digests in the node's input cache
  // Layers of the images in `cached_images` (those pushed by layer); null:
  // none known. Shared between nodes holding the same images.
  std::shared_ptr<const std::set<std::string>> cached_layers;
  std::map<std::string, double, std::less<>> asks;  // device class (GPU name) or "cpu-core" -> ask per hour
  bool allows_sharing = false;                      // owner lets several tasks share one GPU
  uint32_t max_run_seconds = 0;                     // owner's limit on one run; 0: none
  std::set<std::string> allowed_registries;         // OCI registries the owner lets it pull from; empty: none
  double energy_headroom = -1;                      // 0..1 thermal/power headroom; < 0: unknown
  // Parallel to `gpus`: free compute share of each device in milli-GPUs
  // (1000 = no tenant). Empty: 1000 for a device with allocatable memory, 0
  // for one without (held whole).
  std::vector<uint32_t> gpu_free_milli;
  // Ids of the keys the owner trusts for images (docs/containment.md, Signatures); not
  // empty: the node runs only images one of them signed.
  std::set<std::string> trusted_image_keys;
  // The owner accepts no tenant's GPU job (policy.yaml tenantGpuJobs: false);
  // its agent would refuse one.
  bool tenant_gpu_jobs_refused = false;

  static constexpr uint64_t kDiskUnknown = std::numeric_limits<uint64_t>::max();
};

struct TaskView {
  std::string job_id;
  uint32_t index = 0;
  std::string account;  // the job's account, for fair share (fair_share.h); "" is an account too
  // A tenant's job, not the operator's: as the coordinator marks its
  // assignments (Assignment.untrusted_tenant), which agents sandbox harder.
  bool untrusted_tenant = false;
  v1::Resources resources;
  std::string runtime;
  std::string job_class;  // "" for none
  // Nodes that rejected or lost it before, and "provider:NAME" for providers
  // that already ran a replica of it (verification: distinct providers).
  std::set<std::string> excluded_nodes;
  std::string pinned_node;    // only this node may run it (readiness benchmarks)
  bool readiness = false;     // a benchmark: runs on nodes not yet schedulable
  std::string pinned_device;  // only this GPU (a GPU benchmark measures one device)

  // --- Used by the pipeline scheduler; the defaults ask for nothing extra.
  // A share of one GPU: 1..999 milli-GPUs of one device (resources.gpus() must
  // be 0 or 1). 0 or 1000: resources.gpus() whole devices.
  uint32_t gpu_milli = 0;
  // A VRAM slice of one device: resources.gpu_memory_bytes() of it and
  // gpu_milli of its compute (may be 0), co-located with other tenants.
  bool vram_slice = false;
  bool co_tenancy_allowed = true;      // the job's data class lets it share a GPU
  std::string policy;                  // scheduling policy name; "": the default
  std::set<std::string> gpu_models;    // allowed GPU models (device names); empty: any
  std::string min_compute_capability;  // "8.0"; "": any
  std::string min_cuda_version;        // driver's CUDA version, "12.2"; "": any
  std::set<std::string> regions;       // allowed regions; empty: any
  int min_trust_tier = 0;
  // The job's data class as the coordinator's data policy resolves it
  // (data_policy.h); checked by the `data-class` stage. No name: no class applies.
  DataClassRule data_class;
  std::string image;  // manifest digest, for cache locality
  // `image`'s layers when it was pushed by layer; null: one archive, or not known.
  std::shared_ptr<const std::vector<ImageLayer>> image_layers;
  std::vector<std::string> inputs;    // this task's input digests (placeholders filled), for input locality
  std::string registry;               // OCI registry the image is pulled from; "": pushed to the coordinator
  double max_price_per_gpu_hour = 0;  // bid; 0: no limit
  double max_price_per_cpu_core_hour = 0;
  double max_cost = 0;               // cap on one run's estimated cost; 0: none
  uint32_t run_timeout_seconds = 0;  // run-time bound (cost estimate, owner limits); 0: none
  // Ids of the keys with a valid signature over `image` (the coordinator
  // verified them), for nodes that require signed images.
  std::set<std::string> image_signers;
  // Its results are verified (the job's verification mode is not none): the
  // standing cap (StandingState) weighs it.
  bool verified = false;
};

struct Placement {
  std::string job_id;
  uint32_t index = 0;
  std::string node_id;
  std::vector<std::string> device_uuids;  // GPUs reserved for it

  uint32_t gpu_milli = 0;         // held of each device (1000: whole)
  uint64_t gpu_memory_bytes = 0;  // VRAM held of each device
  std::string policy;             // the policy that ranked it
  std::string pricing_rule;       // market::kPayAsAsk
  double ask_per_gpu_hour = 0;    // highest ask among its devices
  double bid_per_gpu_hour = 0;    // the task's bid (0: none)
  double price_per_hour = 0;      // what the placement costs under pricing_rule
  double estimated_cost = 0;      // price_per_hour x run-time bound (0 if unbounded)
};

// Why a task was not placed this round, as the nodes stand after the plan:
// the words users see and the facts the dispatcher acts on (a capped task
// priced out of every node), so nothing has to explain the task again.
struct WaitReason {
  std::string summary;  // "2 nodes: 1 offline, 1 insufficient memory"
  uint32_t feasible_nodes = 0;
  std::set<std::string> filtered_by;  // the stages that removed at least one node
  bool operator==(const WaitReason&) const = default;
};

struct Plan {
  std::vector<Placement> placements;
  std::map<std::string, WaitReason> waiting;  // job_id/index -> why it waits
};

// The three resources fair share weighs between accounts.
struct ResourceAmounts {
  double cpu = 0;  // cores
  double memory_bytes = 0;
  double gpus = 0;  // devices; a share of one counts as milli / 1000

  ResourceAmounts& operator+=(const ResourceAmounts& o) {
    cpu += o.cpu;
    memory_bytes += o.memory_bytes;
    gpus += o.gpus;
    return *this;
  }
};

// Providers' standing for verified work (standing.h): which accounts are
// proven for which image, and how the verified work in flight is split.
// unproven_share 1 (the default): no cap.
struct StandingState {
  double unproven_share = 1;
  std::map<std::string, std::set<std::string>, std::less<>> proven;  // image digest -> provider accounts
  uint64_t verified_in_flight = 0;                                   // active attempts of verified tasks
  uint64_t unproven_in_flight = 0;  // ... of them on an account not proven for their image
};

// What a plan needs beyond nodes and tasks: what fair share (fair_share.h)
// weighs between requester accounts, and the standing of providers. The
// fleet's totals come from the nodes themselves (FleetTotals). Empty: every
// account weighs 1 and holds nothing, and no standing cap applies.
struct AccountState {
  // Account name -> weight; a missing account, or a weight that is not a
  // positive number, weighs 1.
  std::map<std::string, double> account_weights;
  // Account name -> what its running and assigned attempts hold now.
  std::map<std::string, ResourceAmounts> account_allocation;
  StandingState standing;
};

// A replaceable placement strategy. Schedule must be deterministic for a given
// input and never place more than a node's free resources.
class Scheduler {
 public:
  virtual ~Scheduler() = default;
  // Places what it can of `tasks` on `nodes`, taking tasks in fair-share
  // order between their accounts (what `accounts` says each holds and
  // weighs); every task not placed gets a reason in Plan::waiting.
  virtual Plan Schedule(std::vector<NodeView> nodes, const std::vector<TaskView>& tasks,
                        const AccountState& accounts) const = 0;
  // The same when no account holds anything and all weigh the same.
  Plan Schedule(std::vector<NodeView> nodes, const std::vector<TaskView>& tasks) const {
    return Schedule(std::move(nodes), tasks, AccountState{});
  }
};

// The pipeline (pipeline.h) is the one implementation: NewPipelineScheduler.

// "job_id/index": the key of Plan::waiting.
std::string TaskKey(const std::string& job_id, uint32_t index);

}  // namespace idlegrid::sched
