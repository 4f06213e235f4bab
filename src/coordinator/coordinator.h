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
//   EventCounters (event_counters.h)     what Metrics() counts since start.
//   history_mu_                          the load samples the dashboard
//                                        charts (metrics/load_history.h).
//   ImageSignatureFiles (image_signatures.h)  signatures over images, as
//                                        files in the shared directory.
//   WorkflowService (workflow_service.h) workflows: submit, advance, cancel;
//                                        its own lock, before Coordinator::mu_.
//   NodeLiveness (jobs/node_liveness.h)       one node's heartbeat record and
//                                        failure-detector state (a value in
//                                        the node table, under mu_).
//   Coordinator::mu_                     the node table (NodeLive: liveness,
//                                        advertisement, measurement, drain,
//                                        reliability), the waiting reasons,
//                                        the benchmark images, the data
//                                        policy, the change
//                                        counter and loop wake-ups.
// Pure rules live outside: liveness verdicts in jobs/liveness.h, attempt
// outcomes in jobs/, placement in sched/, the capacity ledger in capacity/.
//
// Lock order (a thread holding one may take only those after it):
//   WorkflowService::mu_  ->  Coordinator::mu_  ->  AgentSessions  ->  AgentSession
// AgentTokenCache's, RunningIndexCache's, EventCounters', ImageSignatureFiles', AccountTermsCache's and history_mu_ are
// leaves, taken with nothing else held by them. No lock is held across a store write except where a method says so
// (JudgeReadiness records a measurement under mu_). standing_mu_ is a leaf too, held across store reads of jobs
// (StandingStateOf) but never with another lock.
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
#include "coordinator/account_terms.h"
#include "coordinator/agent_tokens.h"
#include "coordinator/event_counters.h"
#include "coordinator/ledger_shell.h"
#include "market/recent_prices.h"
#include "coordinator/image_signatures.h"
#include "coordinator/manifest_blob_cache.h"
#include "jobs/node_liveness.h"
#include "coordinator/running_index.h"
#include "coordinator/tenancy.h"
#include "coordinator/workflow_service.h"
#include "auth/rate_limit.h"
#include "jobs/liveness.h"
#include "jobs/log_cap.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "image/signature.h"
#include "manifest/image_ref.h"
#include "metrics/load_history.h"
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

class Coordinator : private StepJobs {
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
  // Submits for `account`, within its quota. An image from an OCI registry
  // must be allowed by options.registries; it is resolved through the
  // registry client then (a tag to the digest it names now) and stored
  // pinned: JobSpec.image by digest, JobSpec.registry_image with what was
  // asked for and the config digest. The registry's errors are returned
  // with "spec.image" context and nothing is stored.
  Result<v1::Job> SubmitJob(const v1::SubmitJobRequest& request, const std::string& account);
  Result<v1::Job> SubmitJob(const v1::SubmitJobRequest& request) { return SubmitJob(request, store::kOperatorAccount); }
  Result<v1::Job> GetJob(const std::string& job_id);

  // --- workflows (workflow_service.h, docs/workflows.md) ---
  WorkflowService& workflows() { return *workflows_; }
  // The requester API's names for the workflow service's calls.
  Result<v1::Workflow> SubmitWorkflow(const v1::SubmitWorkflowRequest& request, const std::string& account) {
    return workflows_->Submit(request, account);
  }
  Result<v1::Workflow> GetWorkflow(const std::string& id) { return workflows_->Get(id); }
  Result<v1::ListWorkflowsResponse> ListWorkflows(const std::string& account = "") { return workflows_->List(account); }
  Result<v1::Workflow> CancelWorkflow(const std::string& id) { return workflows_->Cancel(id); }
  // Jobs of `account` ("": all accounts').
  Result<v1::ListJobsResponse> ListJobs(const std::string& account = "");
  Result<v1::Job> CancelJob(const std::string& job_id);
  // With task indices and/or states, cancels only the matching tasks
  // (jobs::PlanCancelTasks) and stops their attempts; without, the whole job.
  // The escrow comes back as for a whole cancel: when the job has ended.
  Result<v1::Job> CancelJob(const v1::CancelJobRequest& request);
  // Sends the job's failed (and/or named failed or cancelled) tasks back to
  // the queue (jobs::PlanRetryTasks); their attempts are kept. With the
  // ledger on, only while the job still holds escrow (LedgerShell::Requeue).
  Result<v1::Job> RetryJob(const v1::RetryJobRequest& request);
  // Removes a settled job with its logs, and the artifacts nothing else
  // holds. FailedPrecondition while any task can still run.
  Result<v1::DeleteJobResponse> DeleteJob(const std::string& job_id);
  Result<v1::Job> ResolveLost(const v1::ResolveLostRequest& request);
  Result<v1::ListNodesResponse> ListNodes();
  // For each queued task of the job: nodes removed per filter and how the
  // best candidates score, on the current snapshot. NotFound for an unknown job.
  Result<v1::ExplainJobResponse> ExplainJob(const std::string& job_id);
  // The market's order book: free units and asks per device class.
  Result<v1::MarketResponse> Market();
  // earnings.cc: what `provider`'s nodes earned and could earn per hour.
  Result<v1::ProviderEarningsResponse> ProviderEarnings(const std::string& provider);
  // Prometheus text (docs/metrics.md): queue, waits, run times, outcomes,
  // heartbeats, capacity per node, dispatch latency, artifact bytes.
  Result<std::string> Metrics();
  // The fleet's load (queued and running tasks, GPUs allocated of total),
  // sampled by the loop every kLoadSamplePeriodMs over the last hour, oldest
  // first: what the dashboard charts (GET /v1/history).
  std::vector<metrics::LoadSample> LoadSamples();
  static constexpr int64_t kLoadSamplePeriodMs = 5000;
  // Bytes an artifact transfer moved (`received`: into the coordinator).
  void CountArtifactBytes(bool received, uint64_t bytes) { counters_.ArtifactBytes(received, bytes); }
  // Drain (or undo): no new work; at the deadline, running attempts are
  // stopped and handed back. NotFound for an unknown node.
  Result<v1::Node> DrainNode(const v1::DrainNodeRequest& request);
  // Replaces the data policy (an operator assigned or withdrew a node's
  // trust tier, or changed a class's rule); the next dispatch and explanation
  // use it. Jobs already submitted keep the class they were stamped with.
  void SetDataPolicy(sched::DataPolicy policy);
  Result<v1::PushImageResponse> RegisterImage(const std::string& archive_digest);
  // image_layers.cc. Registers an image pushed blob by blob: its manifest,
  // config and every layer must be stored already, each of the size the
  // manifest states, and `may_read` must allow each (a pusher cannot name
  // another account's private layer into an image of its own). The image
  // record's archive_digest is then the manifest's own digest.
  Result<v1::PushImageResponse> RegisterLayeredImage(const std::string& manifest_digest,
                                                     const std::function<Status(const std::string&)>& may_read);
  // The blobs of a layered image (manifest, config, layers), or none for an
  // image pushed as one archive.
  Result<std::vector<v1::ArtifactRef>> ImageBlobsOf(const store::ImageRecord& image);
  // signatures.cc. Stores a signature over an image `account` may use, after
  // verifying it: NotFound for an image that is missing or not the
  // account's to use (the same answer), InvalidArgument for a malformed
  // request or a signature that does not verify. Returns the stored record.
  Result<v1::ImageSignature> AddImageSignature(const v1::AddImageSignatureRequest& request, const std::string& account);
  // The image's signatures that verify (any key), ordered by key id.
  std::vector<v1::ImageSignature> ImageSignaturesOf(const std::string& image) const;
  // The uploading account holds a fresh upload for a grace period (a job
  // that uses it then holds it for good); `make_public` lets anyone read it.
  Status HoldUpload(const std::string& digest, const std::string& account, bool make_public);
  // Builds the readiness benchmark image from the static benchmark program
  // and registers it. Until it succeeds no node becomes schedulable.
  Status PrepareBenchmark(const std::string& bench_binary, const std::string& work_dir);
  // The same for the GPU benchmark; without it real GPUs are not offered
  // (they cannot be measured), with this error as their reason; their
  // nodes' CPUs still work.
  Status PrepareGpuBenchmark(const std::string& gpu_bench_binary, const std::string& work_dir);
  // Log chunks after `after_seq`; when none are ready and `wait_ms` > 0,
  // waits for new ones (or a job change) up to wait_ms.
  Result<std::vector<v1::LogChunk>> ReadLogs(const std::string& job_id, int64_t after_seq, int wait_ms);
  // Waits until the job differs from `known_version` or wait_ms passes.
  // Returns the current change counter.
  uint64_t WaitForChange(uint64_t known_version, int wait_ms);
  uint64_t version();

  // The ledger shell, or null when the coordinator runs without --ledger.
  LedgerShell* ledger() { return ledger_.get(); }
  // ledger_api.cc: the ledger's requester operations; FailedPrecondition
  // when the coordinator runs without --ledger, NotFound for an unknown
  // account. Who may call them is the gate's (auth/authz.cc).
  Result<v1::LedgerBalanceResponse> LedgerBalance(const std::string& account);
  Result<v1::LedgerHistoryResponse> LedgerHistory(const std::string& account, int64_t after_seq, uint32_t limit);
  // A deposit (world -> available) or a withdrawal (available -> world).
  Result<v1::LedgerBalanceResponse> LedgerTransfer(const v1::LedgerTransferRequest& request, bool deposit);
  Result<v1::LedgerBalanceResponse> LedgerStake(const v1::LedgerStakeRequest& request);

  // --- agent operations ---
  Result<v1::RegisterResponse> RegisterNode(const v1::RegisterRequest& request, const std::string& peer);
  std::shared_ptr<AgentSession> OpenSession(const std::string& node_id, const v1::NodeInfo& info,
                                            const std::string& peer);
  void CloseSession(const std::string& node_id, const std::shared_ptr<AgentSession>& session);
  Result<v1::HeartbeatResponse> Heartbeat(const std::string& node_id, const v1::HeartbeatRequest& request);
  // Applies an agent's report. A provenance record in it names the node as
  // this coordinator authenticated it (AttestNodeIdentity), whatever the
  // agent claimed.
  Status ReportAttempt(const std::string& node_id, const v1::ReportAttemptRequest& request);
  // The countersigned receipt of one of the job's attempts: `attempt_id`'s,
  // else the latest attempt with one of task `task_index` (if set), else of
  // the job. NotFound when there is none.
  Result<v1::Receipt> GetReceipt(const v1::GetReceiptRequest& request);
  Status AppendLogs(const std::string& node_id, const v1::AppendLogsRequest& request);
  // May the node read this artifact for this attempt? Only with the
  // attempt's artifact token, while the node holds the attempt under a live
  // lease, and only its image archive, inputs and checkpoint
  // (docs/tenancy.md, "Agents act only as themselves"); NotFound otherwise,
  // logged.
  Status NodeMayRead(const std::string& node_id, const std::string& attempt_id, const std::string& token,
                     const std::string& digest);
  // May it upload for this attempt (outputs, checkpoints)? The same token
  // and lease rules.
  Status NodeMayWrite(const std::string& node_id, const std::string& attempt_id, const std::string& token);
  artifacts::ArtifactStore* artifact_store() { return artifacts_.get(); }
  store::Store* store() { return store_.get(); }
  Status RecordArtifact(const std::string& digest, uint64_t size, const std::string& kind);

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
    std::string readiness_job;                              // in flight, if any
    int64_t readiness_failed_ms = 0;                        // when the last benchmark failed
    std::map<std::string, std::string> gpu_readiness_jobs;  // device uuid -> job in flight
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

  // Sets the provenance's node id to `node_id` (the node whose agent token
  // the report came with) and its key fingerprint to that of the key the
  // node registered ("" if none is known); a claim that differed is logged.
  // Only a failed store read is an error.
  Status AttestNodeIdentity(const std::string& node_id, v1::Provenance* provenance);
  // receipts.cc. The node's enrolled key and provider account.
  Result<std::pair<std::string, std::string>> NodeKeyAndProvider(const std::string& node_id);
  // An EXITED report's receipt statement checked against the node's
  // enrolled key (receipt::CheckStatement); Ok when it carries none. A
  // refusal is the node's fault: the caller turns the report into a
  // PLATFORM_FAILURE error, so its outputs are not accepted.
  Status CheckReceiptStatement(const std::string& node_id, const v1::ReportAttemptRequest& report);
  // After the exit was applied: countersigns the receipt around the checked
  // statement and stores it with the attempt. Failures are logged: the
  // attempt's outcome stands without a receipt.
  void IssueReceipt(const std::string& node_id, const v1::Job& job, const v1::ReportAttemptRequest& report);

  // advertisements.cc: advertisements, readiness benchmarks, node views.
  Status AcceptAdvertisement(const std::string& node_id, const v1::SignedAdvertisement& signed_ad);
  Status CheckSimulated(const v1::Advertisement& ad) const;
  void EnsureReadiness();
  void JudgeReadiness(const std::string& job_id);
  void JudgeReadiness(const v1::Job& job);  // as read after the report that ended it
  void JudgeGpuReadiness(const v1::Job& job);
  Result<std::string> ImportImageArchive(const std::string& archive);
  // signatures.cc: the operator's rule at submit (Options::require_signed_images).
  Status CheckImageTrusted(const std::string& image) const;
  // Signs an image the coordinator built itself with the readiness key, if any.
  void SignOwnImage(const std::string& image);
  // Why a node whose owner requires signed images cannot run the readiness
  // benchmark, or "" (placement.cc's reason for a pending benchmark).
  std::string ReadinessKeyUntrusted(const v1::Advertisement& ad) const;
  v1::JobSpec ReadinessSpec(const std::string& node_id, const std::string& image, const std::string& entrypoint,
                            const std::vector<std::string>& args) const;
  void CreateReadinessJob(const std::string& node_id, const std::string& device_uuid, const v1::JobSpec& spec);
  // "" when the node may take ordinary work; otherwise why not.
  std::string UnschedulableReasonLocked(const NodeLive& node) const IG_REQUIRES(mu_);
  // Why device `d` of `node` takes no ordinary work, "" when it does: held
  // back by its owner, or its readiness benchmark pending or failed. The
  // node's other devices and its CPUs are not affected.
  std::string GpuUnavailableReasonLocked(const NodeLive& node, const v1::GpuDevice& d) const IG_REQUIRES(mu_);
  static std::string StackOf(const v1::Advertisement& ad);
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
  // Active attempts by node id, so per-node work does not rescan them all.
  static std::map<std::string, std::vector<store::ActiveAttempt>> GroupByNode(
      const std::vector<store::ActiveAttempt>& active);
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
  struct JobStanding {
    bool verified = false;
    std::string image;  // manifest digest
  };
  Mutex standing_mu_;
  // Jobs of the last pass's queued and active tasks: an active attempt's job
  // is read once, not once per pass.
  std::map<std::string, JobStanding> standing_jobs_ IG_GUARDED_BY(standing_mu_);
  // Each provider's proven images as last read, for a pass whose read fails.
  std::map<std::string, std::vector<std::string>> proven_images_ IG_GUARDED_BY(standing_mu_);

  void Loop();
  void CheckHeartbeats();
  void EnforceDrainDeadlines();
  void PersistHeartbeats();
  // Recomputes every node's reliability from the last day's attempts.
  void RefreshReliability();
  // SubmitJob in two halves: every check (and the spec as it will be
  // stored, registry image pinned), then the escrow and the store under a
  // chosen id. A workflow checks all its steps' jobs first and stores each
  // when its step is ready. StoreJob with an id already stored is
  // AlreadyExists and changes nothing.
  struct PreparedJob {
    v1::JobSpec spec;
    std::string image_archive;  // a pushed image's archive, held by the job; "" from a registry
  };
  Result<PreparedJob> PrepareJob(v1::JobSpec spec, const std::string& account);
  Result<v1::Job> StoreJob(const PreparedJob& job, const std::string& job_id, const std::string& account);
  // workflows.cc: the jobs side of workflows (StepJobs).
  Status CheckJob(const v1::JobSpec& spec, const std::string& account) override;
  Status SubmitJobAs(const v1::JobSpec& spec, const std::string& job_id, const std::string& account) override;
  Status CancelStepJob(const std::string& job_id) override;
  v1::JobSpec PinStepImage(v1::JobSpec spec) override;
  // Deletes jobs past their retention and artifacts nothing holds any more
  // (at most once a minute).
  void EnforceRetention();
  // Unlinks the blobs of artifacts the store has let go.
  void UnlinkCollected(const store::CollectedArtifacts& collected);
  // Fair-share weights and running-task limits of the accounts (account_terms.h).
  AccountTerms CurrentAccountTerms() { return account_terms_.Current(); }
  // registry_image.cc: checks `ref` (a registry reference, spec's image)
  // against options_.registries, resolves it and rewrites `spec` pinned.
  Status PinRegistryImage(const manifest::ImageRef& ref, v1::JobSpec* spec);
  // Whether `account` may name the artifact in a job: its own upload or
  // job's, a public one, or anything for the operator.
  Result<bool> MayUse(const std::string& account, const std::string& digest);
  // The node's live attempt that `token` is the artifact token of; NotFound
  // (logged) otherwise.
  Result<store::ActiveAttempt> LiveAttemptFor(const std::string& node_id, const std::string& attempt_id,
                                              const std::string& token);
  static constexpr int64_t kRetentionPeriodMs = 60'000;
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
  void Notify();  // something changed: wake the loop and watchers
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
  // Signs per-attempt artifact tokens; derived from the join secret, which
  // coordinators sharing a database share, so any of them can check a token.
  const std::string artifact_key_;
  const Options options_;
  Clock* const clock_;
  const std::unique_ptr<registry::RegistryClient> registry_;  // null: registry images are refused
  Tenancy tenancy_;
  auth::RequestRateLimits rate_limits_;
  ImageSignatureFiles image_signatures_;  // thread-safe, its own lock (a leaf)
  ManifestBlobCache manifest_blobs_;      // thread-safe, its own lock (a leaf)
  // Clearing prices of recent placements (earnings.cc), guarded by mu_.
  market::RecentPrices recent_prices_;
  void RecordClearingPrices(const std::vector<store::NewAttempt>& placed, int64_t now_ms);
  std::unique_ptr<LedgerShell> ledger_;         // null unless options_.ledger.enabled; its own lock (a leaf)
  std::unique_ptr<WorkflowService> workflows_;  // its own lock, taken before mu_

  // Thread-safe pieces with locks of their own (see the lock order above).
  AgentSessions sessions_;
  AgentTokenCache agent_tokens_;
  RunningIndexCache running_index_;
  EventCounters counters_;

  Mutex mu_;
  CondVar cv_;  // with mu_: loop wake-ups and watchers
  std::map<std::string, NodeLive> nodes_ IG_GUARDED_BY(mu_);
  std::map<std::string, std::string> waiting_ IG_GUARDED_BY(mu_);  // task key -> why it waits
  // Replaced whole by SetDataPolicy; readers copy the pointer under mu_.
  std::shared_ptr<const sched::DataPolicy> data_policy_ IG_GUARDED_BY(mu_);
  std::string bench_image_ IG_GUARDED_BY(mu_);  // manifest digest, once prepared
  std::string bench_error_ IG_GUARDED_BY(mu_);  // why there is none
  std::string gpu_bench_image_ IG_GUARDED_BY(mu_);
  std::string gpu_bench_error_ IG_GUARDED_BY(mu_) = "no GPU readiness benchmark on the coordinator";
  uint64_t version_ IG_GUARDED_BY(mu_) = 0;
  int64_t heartbeats_persisted_ms_ IG_GUARDED_BY(mu_) = 0;
  bool dirty_ IG_GUARDED_BY(mu_) = true;
  bool stopping_ IG_GUARDED_BY(mu_) = false;
  jobs::LivenessParams LivenessParamsOf() const { return {options_.heartbeat_interval_ms, options_.heartbeat_margin}; }

  // The loop thread's own (or Tick's caller's): no lock.
  int64_t reliability_refreshed_ms_ = 0;
  int64_t retention_checked_ms_ = 0;
  int64_t ledger_swept_ms_ = 0;
  static constexpr int64_t kLedgerSweepMs = 2000;
  // Settles the ledger (releases, refunds, settlement export) at most every
  // kLedgerSweepMs; nothing without the ledger.
  void SweepLedger();
  // Ok when the ledger is on and `account` exists.
  Status CheckLedgerAccount(const std::string& account);
  // Charges and refunds what the job's latest change allows (ledger only);
  // errors are logged: the sweep makes the posting later.
  void SettleJobLedger(const std::string& job_id);
  void SettleJobLedger(const v1::Job& job);

  // --- verification (verification.cc, docs/verification.md) ---
  // Fills in the operator's default mode and checks the job's verification.
  Status ResolveVerification(v1::JobSpec* spec);
  // The provider account owning a node (the operator's when unknown).
  std::string ProviderOf(const std::string& node_id);
  // The verdict on a task whose result is held for it; errors are logged
  // (VerifyHeldTasks, every kVerdictSweepMs, finds the task again).
  void VerifyTask(const std::string& job_id, uint32_t index);
  Status DecideAndWriteVerdict(const std::string& job_id, uint32_t index);
  void VerifyHeldTasks();
  // A task's runs as verify::DecideTask reads them: each attempt's provider,
  // vote and outputs (the bytes of those compared by their numbers).
  std::vector<verify::RunRecord> RunRecordsOf(const v1::Task& task, const verify::VerificationSpec& spec);
  // Re-verifies what `provider` had accepted on its word since its last
  // verified result, after it was caught on attempt `caught_on`, and demotes
  // its votes in the quorums it took part in (Demote).
  void Backtrack(const std::string& provider, const std::string& caught_on);
  // verify::DecideDemote over each task of `results` whose attempt is in
  // `attempts`: the provider's agreeing votes stop counting, and a task left
  // short of its quorum is reopened for another run.
  void Demote(const std::string& provider, const std::string& caught_on,
              const std::vector<store::ProviderResult>& results, const std::vector<std::string>& attempts, int64_t now);
  // Challenge: sends `provider` a task of `job` with a known answer it never
  // ran; WithdrawStaleChecks returns those not taken within a minute.
  void SendKnownAnswerCheck(const v1::Job& job, const std::string& provider, int64_t now);
  // A task of `job` but `except` with a known answer `provider` never ran:
  // a known-answer check can reach it.
  const v1::Task* KnownAnswerFor(const v1::Job& job, uint32_t except, const std::string& provider);
  void WithdrawStaleChecks();
  Mutex verdict_mu_;  // one verdict at a time (trust counts are read and written back)
  Mutex rng_mu_;
  std::mt19937_64 rng_ IG_GUARDED_BY(rng_mu_){std::random_device{}()};
  int64_t verdicts_swept_ms_ = 0;
  static constexpr int64_t kVerdictSweepMs = 5000;
  // Tells each attempt's node to stop it (a node not connected learns at its
  // next heartbeat).
  void StopCancelled(const std::vector<store::ActiveAttempt>& stopped);
  AccountTermsCache account_terms_;  // its own lock (a leaf)
  int64_t unconnected_checked_ms_ = 0;
  int64_t heartbeats_checked_ms_ = 0;  // the last liveness check
  int conflict_replans_ = 0;
  static constexpr int kMaxConflictReplans = 3;
  int64_t started_ms_ = 0;  // set by Start, before the loop thread exists
  // load_history.cc: takes a load sample when one is due (the loop's).
  void SampleLoad();
  static constexpr size_t kLoadHistorySize = 720;  // an hour of samples
  Mutex history_mu_;                               // a leaf
  metrics::LoadHistory load_history_ IG_GUARDED_BY(history_mu_){kLoadHistorySize};
  std::thread loop_;
};

}  // namespace idlegrid::coordinator
