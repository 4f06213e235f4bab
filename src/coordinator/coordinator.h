#pragma once
// The coordinator's business logic, independent of gRPC and HTTP: both API
// shells call these methods, so a job submitted with curl and one submitted
// with the CLI take the same path. Thread-safe.
//
// The pieces, each with its own lock and its own file:
//   AgentSessions (agent_session.h)      which Connect stream is each node's;
//                                        commands are pushed through it.
//   AgentTokenCache (agent_tokens.h)     agent token hash -> node id.
//   RunningIndexCache (running_index.h)  recent active attempts per node,
//                                        for heartbeat reconciliation.
//   EventCounters (event_counters.h)     what the metrics count since start.
//   FleetReports (fleet_reports.h)       metrics text, load history, earnings.
//   ChangeSignal (change_signal.h)       the change counter watchers wait on
//                                        and the loop's wake-ups.
//   LedgerSettler (ledger_settler.h)     when the ledger is posted to.
//   ReadinessBenchmarks (readiness_benchmarks.h)  the benchmark images, the
//                                        jobs nodes and GPUs need, their verdicts.
//   ImageCatalog (image_catalog.h)       images, their blobs and signatures
//                                        (as files in the shared directory).
//   WorkflowService (workflow_service.h) workflows: submit, advance, cancel;
//                                        its own lock, before Coordinator::mu_.
//   VerificationService (verification_service.h)  verdicts, backtracking,
//                                        known-answer checks; its own leaf locks.
//   NodeLiveness (jobs/node_liveness.h)       one node's heartbeat record and
//                                        failure-detector state (a value in
//                                        the node table, under mu_).
//   Coordinator::mu_                     the node table (NodeLive: liveness,
//                                        advertisement, measurement, drain,
//                                        reliability), the waiting reasons,
//                                        the data policy.
// Pure rules live outside: liveness verdicts in jobs/liveness.h, attempt
// outcomes in jobs/, placement in sched/, the capacity ledger in capacity/.
//
// Lock order (a thread holding one may take only those after it):
//   WorkflowService::mu_  ->  Coordinator::mu_  ->  AgentSessions  ->  AgentSession
//   VerificationService's verdict lock  ->  Coordinator::mu_ (its hooks; it is held across the verdict's store write)
// AgentTokenCache's, RunningIndexCache's, EventCounters', ChangeSignal's, FleetReports', ReadinessBenchmarks',
// ImageCatalog's pieces', AccountTermsCache's are leaves, taken with nothing else held by them. No lock is held across
// a store write except where a method says so (the readiness hook records a measurement under mu_). StandingReader's
// lock is a leaf too, held across store reads of jobs but never with another lock.
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "artifacts/artifact_store.h"
#include "capacity/node_capacity.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "coordinator/agent_session.h"
#include "coordinator/artifact_rights.h"
#include "coordinator/change_signal.h"
#include "coordinator/attempt_reports.h"
#include "coordinator/account_terms.h"
#include "coordinator/agent_tokens.h"
#include "coordinator/event_counters.h"
#include "coordinator/fleet_reports.h"
#include "coordinator/job_requests.h"
#include "coordinator/ledger_requests.h"
#include "coordinator/ledger_settler.h"
#include "coordinator/readiness_benchmarks.h"
#include "coordinator/ledger_shell.h"
#include "market/recent_prices.h"
#include "coordinator/image_catalog.h"
#include "jobs/node_liveness.h"
#include "coordinator/receipt_desk.h"
#include "coordinator/retention_sweeper.h"
#include "coordinator/running_index.h"
#include "coordinator/standing_reader.h"
#include "coordinator/tenancy.h"
#include "coordinator/verification_service.h"
#include "coordinator/workflow_service.h"
#include "auth/rate_limit.h"
#include "jobs/liveness.h"
#include "jobs/log_cap.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "image/signature.h"
#include "manifest/image_ref.h"
#include "advert/node_key.h"
#include "registry/allow_list.h"
#include "registry/registry_client.h"
#include "verify/spec.h"
#include "verify/task_verdict.h"
#include "readiness/gpu_readiness.h"
#include "sched/data_policy.h"
#include "sched/policy.h"
#include "sched/reliability.h"
#include "sched/scheduler.h"
#include "store/store.h"

namespace idlegrid::coordinator {

struct Options {
  int heartbeat_interval_ms = 5000;
  int heartbeat_margin = 3;           // offline after interval * margin of silence
  int dispatch_period_ms = 1000;      // timeouts are checked at least this often
  bool allow_simulated_gpus = false;  // accept advertisements with simulated devices (tests, demos)
  // Readiness benchmark: kernel rounds per run, and the slowest score (rounds/s)
  // still taken as an honest CPU; a slower one is implausible.
  uint64_t bench_iterations = 20'000'000;
  double min_cpu_score = 5'000'000;
  // GPU readiness benchmark: rounds per device thread (see
  // readiness::kDefaultGpuBenchRounds); tests lower it for the fake driver.
  uint64_t gpu_bench_rounds = readiness::kDefaultGpuBenchRounds;
  int bench_retry_ms = 300'000;       // a failed benchmark is retried after this long
  int ack_timeout_ms = 10'000;        // an assignment not acknowledged by then goes elsewhere
  sched::PolicyConfig policies;       // scheduling policies (built-ins unless a policy file replaced them)
  sched::DataPolicy data_policy;      // data classes and trusted nodes (built-ins unless the policy file has them)
  jobs::LogCap log_cap;               // per task: the first and last bytes of output kept
  auth::Quota default_quota;          // per account, where its own is 0 (0 here: no limit)
  auth::RateLimitConfig rate_limits;  // per API token, and failed authentications per peer
  uint32_t default_retention_seconds = 7 * 24 * 3600;  // jobs that name none
  // Fair share between accounts (docs/scheduling.md): account -> weight; a
  // missing account weighs 1. The hook the accounts table fills.
  std::map<std::string, double> account_weights;
  // Image signatures (docs/containment.md, Signatures). With require_signed_images, a job
  // is refused at submit unless its image carries a valid signature by one
  // of trusted_image_keys.
  bool require_signed_images = false;
  std::vector<image::ImagePublicKey> trusted_image_keys;
  // Signs the readiness benchmark images this coordinator builds, so nodes
  // that require signed images can run them if their owner trusts it.
  std::optional<image::ImageSigningKey> readiness_image_key;
  // OCI registries jobs may name images from, and whether a tag is resolved
  // at submit (docs/registries.md); none by default.
  registry::OperatorRegistries registries;
  // The ledger (issue 13, docs/ledger.md): off by default; on, a job must set
  // maxCost, which is escrowed from its account at submit, succeeded attempts
  // are charged and what is left is refunded when the job ends.
  LedgerOptions ledger;
  // Countersigns attempts' receipts (docs/receipts.md); none: exit reports'
  // statements are still checked, but no receipt is issued.
  std::optional<advert::NodeKey> receipt_key;
  // Result verification (docs/verification.md): the default mode for jobs
  // that name none (`none` here: a one-machine grid has one provider, and
  // replicas need several) and the parameters a job may leave unset.
  verify::VerificationPolicy verification = DefaultVerification();
  static verify::VerificationPolicy DefaultVerification() {
    verify::VerificationPolicy p;
    p.default_mode = verify::Mode::kNone;
    return p;
  }
};

class Coordinator {
 public:
  Coordinator(std::unique_ptr<store::Store> store, std::unique_ptr<artifacts::ArtifactStore> artifacts,
              std::unique_ptr<sched::Scheduler> scheduler, std::string join_secret, Options options,
              Clock* clock = SystemClock::Get(), std::unique_ptr<registry::RegistryClient> registry = nullptr);
  ~Coordinator();

  // Starts the dispatch/monitor thread. Call once.
  void Start();
  void Stop();
  // Runs one pass of that thread's loop on the caller's thread: liveness
  // (suspect/offline nodes, lease expiry, acknowledgement timeouts, queue
  // timeouts), heartbeat persistence, reliability, drain deadlines, readiness
  // benchmarks, one dispatch, then a load sample when due. For tests and tools driving a coordinator
  // that was not Start()ed, with a manual clock; never concurrently with the
  // loop thread or another Tick (their bookkeeping is the loop's alone).
  void Tick();

  // --- authentication (tokens arrive as "Bearer <token>") ---
  // Accounts, API tokens, join tokens and quotas (requester tokens are
  // authenticated there).
  Tenancy& tenancy() { return tenancy_; }
  // Shared by both front doors: a token's budget is one, whichever door.
  auth::RequestRateLimits& rate_limits() { return rate_limits_; }
  Clock* clock() { return clock_; }
  // The node id the agent token belongs to.
  Result<std::string> AuthenticateAgent(const std::string& bearer);

  // --- requester operations ---
  // Jobs: submit, read, list, cancel, retry, delete, logs (job_requests.h).
  JobRequests& jobs() { return *jobs_; }

  // --- workflows (workflow_service.h, docs/workflows.md) ---
  WorkflowService& workflows() { return *workflows_; }
  Result<v1::ListNodesResponse> ListNodes();
  // For each queued task of the job: nodes removed per filter and how the
  // best candidates score, on the current snapshot. NotFound for an unknown job.
  Result<v1::ExplainJobResponse> ExplainJob(const std::string& job_id);
  // The market's order book: free units and asks per device class.
  Result<v1::MarketResponse> Market();
  // Metrics, the load history and providers' earnings (fleet_reports.h).
  FleetReports& reports() { return *reports_; }
  // Bytes an artifact transfer moved (`received`: into the coordinator).
  void CountArtifactBytes(bool received, uint64_t bytes) { counters_.ArtifactBytes(received, bytes); }
  // Drain (or undo): no new work; at the deadline, running attempts are
  // stopped and handed back. NotFound for an unknown node.
  Result<v1::Node> DrainNode(const v1::DrainNodeRequest& request);
  // Replaces the data policy (an operator assigned or withdrew a node's
  // trust tier, or changed a class's rule); the next dispatch and explanation
  // use it. Jobs already submitted keep the class they were stamped with.
  void SetDataPolicy(sched::DataPolicy policy);
  // Images: registered from archives or blob by blob, from registries, and
  // their signatures (image_catalog.h).
  ImageCatalog& images() { return images_; }
  // Readiness benchmarks: their images, the jobs nodes need, their verdicts
  // (readiness_benchmarks.h).
  ReadinessBenchmarks& benchmarks() { return *readiness_; }
  // The change counter status and log streams wait on (change_signal.h).
  ChangeSignal& changes() { return changes_; }

  // The ledger shell, or null when the coordinator runs without --ledger.
  LedgerShell* ledger() { return ledger_.get(); }
  // The ledger's requester operations (ledger_requests.h): balances,
  // history, deposits, withdrawals, stakes.
  LedgerRequests& ledger_requests() { return ledger_requests_; }

  // --- agent operations ---
  Result<v1::RegisterResponse> RegisterNode(const v1::RegisterRequest& request, const std::string& peer);
  std::shared_ptr<AgentSession> OpenSession(const std::string& node_id, const v1::NodeInfo& info,
                                            const std::string& peer);
  void CloseSession(const std::string& node_id, const std::shared_ptr<AgentSession>& session);
  Result<v1::HeartbeatResponse> Heartbeat(const std::string& node_id, const v1::HeartbeatRequest& request);
  // Attempt reports and log chunks from agents (attempt_reports.h).
  AttemptReports& attempts() { return *attempts_; }
  // Receipts: statements checked, countersigned, read back (receipt_desk.h).
  ReceiptDesk& receipts() { return receipts_; }
  artifacts::ArtifactStore* artifact_store() { return artifacts_.get(); }
  store::Store* store() { return store_.get(); }
  // Artifact tokens, what a node may read and write, upload holds (artifact_rights.h).
  ArtifactRights& artifact_rights() { return artifact_rights_; }

 private:
  // What this coordinator knows of one node, beyond the store. Whether it
  // is connected is AgentSessions' to say.
  struct NodeLive {
    v1::NodeInfo info;
    std::string peer;
    // Heartbeats, signs of life and the failure detector's state.
    jobs::NodeLiveness liveness;
    bool online = false;
    std::string public_key;
    std::string provider;  // the provider account it joined under (verification counts votes per provider)
    uint64_t last_sequence = 0;
    v1::Advertisement ad;
    v1::Measurement measurement;
    // RUNNING attempts the agent's heartbeats did not list, and how many
    // heartbeats in a row did not. Two in a row means the agent lost them
    // (it restarted): heartbeats are sequential, so the second was built after
    // the STARTED report that made the attempt RUNNING had been answered.
    std::map<std::string, int> unlisted;
    bool draining = false;
    int64_t drain_deadline_ms = 0;   // 0: none
    bool drain_handed_back = false;  // the deadline's stop commands went out
    // Reliability inputs kept in memory (outcomes come from the store; the
    // heartbeats' lateness is liveness.lateness()).
    uint32_t throttle_reports = 0;
    // The owner's pauses as its agent counts them (NodePause): shown, not held against it.
    uint32_t owner_pauses = 0;
    int64_t owner_paused_ms = 0;
    sched::Reliability reliability;
    sched::ReliabilityInputs reliability_inputs;  // what `reliability` was scored from
    // The owner's pause as its last heartbeat said (docs/provider.md): no
    // new work while paused; not a fault of the node's.
    v1::NodePause pause;
  };

  // advertisements.cc: advertisements, what nodes and devices may take.
  Status AcceptAdvertisement(const std::string& node_id, const v1::SignedAdvertisement& signed_ad);
  Status CheckSimulated(const v1::Advertisement& ad) const;
  // The readiness service's view of the node table (readiness_benchmarks.h).
  ReadinessBenchmarks::Hooks ReadinessHooks();
  // "" when the node may take ordinary work; otherwise why not.
  std::string UnschedulableReasonLocked(const NodeLive& node) const IG_REQUIRES(mu_);
  // Why device `d` of `node` takes no ordinary work, "" when it does: held
  // back by its owner, or its readiness benchmark pending or failed. The
  // node's other devices and its CPUs are not affected.
  std::string GpuUnavailableReasonLocked(const NodeLive& node, const v1::GpuDevice& d) const IG_REQUIRES(mu_);
  // What `node` offers less what `mine` (its active attempts) hold: the
  // capacity ledger's rule, the one the store's commit guard applies too.
  static capacity::NodeCapacity HeldCapacity(const NodeLive& node, const std::vector<store::ActiveAttempt>& mine);
  // The advertised devices with their owner's reserve and what `held` leaves
  // allocatable; measured only after the coordinator's own benchmark.
  std::vector<v1::GpuDevice> AccountedGpusLocked(const NodeLive& node, const capacity::NodeCapacity& held) const
      IG_REQUIRES(mu_);

  // placement.cc: snapshot building, dispatch, explain, market.
  std::vector<sched::NodeView> NodeViewsLocked(const std::vector<store::ActiveAttempt>& active) const IG_REQUIRES(mu_);
  sched::TaskView TaskViewOf(const store::QueuedTask& task, double spent, const sched::DataPolicy& data) const;
  // One pass: read the queue, plan, fail priced-out tasks, commit, send.
  void DispatchOnce();
  // The pass's tasks to plan: those within their account's running-task
  // limit; a capped task that spent its cap is failed instead.
  struct DispatchInput {
    std::vector<sched::TaskView> tasks;
    std::map<std::string, v1::Job> capped;            // jobs with a cost cap, for what their tasks spent
    std::vector<std::pair<size_t, double>> spending;  // tasks (index in `tasks`) that spent part of their cap
  };
  DispatchInput DispatchTasks(const std::vector<store::QueuedTask>& queued,
                              const std::vector<store::ActiveAttempt>& active, const sched::DataPolicy& data,
                              const std::map<std::string, int64_t>& running_limits, int64_t now);
  // Fails the capped tasks the plan left waiting with no offer their budget fits.
  void FailPricedOut(const DispatchInput& in, const sched::Plan& plan, int64_t now);
  // standing.cc: the standing stage's inputs for a dispatch pass (which
  // provider accounts are proven for which image, and how the verified work
  // in flight splits); no cap when the operator set none or no queued task
  // is verified.
  sched::StandingState StandingStateOf(const std::vector<store::QueuedTask>& queued,
                                       const std::vector<store::ActiveAttempt>& active);

  void Loop();
  void CheckHeartbeats();
  void EnforceDrainDeadlines();
  void PersistHeartbeats();
  // Recomputes every node's reliability from the last day's attempts.
  void RefreshReliability();
  // Fair-share weights and running-task limits of the accounts (account_terms.h).
  AccountTerms CurrentAccountTerms() { return account_terms_.Current(); }
  static constexpr int64_t kReliabilityWindowMs = 24 * 3600 * 1000;
  static constexpr int64_t kReliabilityRefreshMs = 10000;
  // Active attempts, at most kActiveCacheMs old: heartbeats (thousands a
  // second) reconcile against it instead of querying the store each time.
  Result<std::shared_ptr<const RunningIndex>> RecentRunningAttempts();
  static constexpr int64_t kActiveCacheMs = 250;
  static constexpr int64_t kHeartbeatPersistMs = 5000;
  // Heartbeats reach the store at least this often (so other coordinators
  // on the same database can judge this one's nodes).
  int64_t PersistPeriodMs() const { return std::min<int64_t>(kHeartbeatPersistMs, options_.heartbeat_interval_ms); }
  void ExpireUnconnectedLeases();
  // Fails the node's active attempts as node_lost (counting them, judging
  // readiness jobs); returns how many.
  size_t FailLostNode(const std::string& node_id, int64_t now);
  // Fails RUNNING attempts the node's agent no longer runs (see NodeLive::unlisted).
  void ReconcileRunning(const std::string& node_id, const v1::HeartbeatRequest& request);
  // The data policy now (SetDataPolicy may replace it; this copy stays valid).
  std::shared_ptr<const sched::DataPolicy> CurrentDataPolicy();
  // `job`: the attempt's job as just read (a batch reads each job once);
  // null: read it here.
  Status SendAssignment(const store::NewAttempt& attempt, const v1::Job* job = nullptr);

  // Constant after construction.
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<artifacts::ArtifactStore> artifacts_;
  std::unique_ptr<sched::Scheduler> scheduler_;
  const std::string join_secret_hash_;
  const Options options_;
  Clock* const clock_;
  const std::unique_ptr<registry::RegistryClient> registry_;  // null: registry images are refused
  Tenancy tenancy_;
  auth::RequestRateLimits rate_limits_;
  ImageCatalog images_;  // no lock of its own; its pieces' are leaves
  ArtifactRights artifact_rights_;
  // Clearing prices of recent placements (earnings.cc), guarded by mu_.
  market::RecentPrices recent_prices_;
  void RecordClearingPrices(const std::vector<store::NewAttempt>& placed, int64_t now_ms);
  std::unique_ptr<LedgerShell> ledger_;  // null unless options_.ledger.enabled; its own lock (a leaf)
  LedgerRequests ledger_requests_;
  LedgerSettler settler_;  // the loop thread sweeps; the hooks settle
  ReceiptDesk receipts_;
  std::unique_ptr<JobRequests> jobs_;               // no lock of its own
  std::unique_ptr<AttemptReports> attempts_;        // no lock of its own
  std::unique_ptr<WorkflowService> workflows_;      // its own lock, taken before mu_
  std::unique_ptr<FleetReports> reports_;           // its own lock (a leaf)
  std::unique_ptr<ReadinessBenchmarks> readiness_;  // its own lock (a leaf)

  // Thread-safe pieces with locks of their own (see the lock order above).
  AgentSessions sessions_;
  AgentTokenCache agent_tokens_;
  RunningIndexCache running_index_;
  EventCounters counters_;

  ChangeSignal changes_;  // a leaf

  Mutex mu_;
  std::map<std::string, NodeLive> nodes_ IG_GUARDED_BY(mu_);
  std::map<std::string, std::string> waiting_ IG_GUARDED_BY(mu_);  // task key -> why it waits
  // Replaced whole by SetDataPolicy; readers copy the pointer under mu_.
  std::shared_ptr<const sched::DataPolicy> data_policy_ IG_GUARDED_BY(mu_);
  int64_t heartbeats_persisted_ms_ IG_GUARDED_BY(mu_) = 0;
  jobs::LivenessParams LivenessParamsOf() const { return {options_.heartbeat_interval_ms, options_.heartbeat_margin}; }

  // The loop thread's own (or Tick's caller's): no lock.
  int64_t reliability_refreshed_ms_ = 0;

  // The provider account owning a node (the operator's when unknown).
  std::string ProviderOf(const std::string& node_id);
  // Sets each queued task's message to why it waits (waiting_).
  void FillWaiting(v1::Job* job);
  std::unique_ptr<VerificationService> verification_;  // its own locks (leaves)
  // Tells each attempt's node to stop it (a node not connected learns at its
  // next heartbeat).
  void StopCancelled(const std::vector<store::ActiveAttempt>& stopped);
  AccountTermsCache account_terms_;  // its own lock (a leaf)
  StandingReader standing_;          // its own lock (a leaf)
  RetentionSweeper retention_;       // the loop thread's
  int64_t unconnected_checked_ms_ = 0;
  int64_t heartbeats_checked_ms_ = 0;  // the last liveness check
  int conflict_replans_ = 0;
  static constexpr int kMaxConflictReplans = 3;
  int64_t started_ms_ = 0;  // set by Start, before the loop thread exists
  std::thread loop_;
};

}  // namespace idlegrid::coordinator
