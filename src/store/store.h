#pragma once
// The coordinator's durable state. One interface, Store, the sum of one
// interface per role (JobStore, AttemptStore, LogStore, NodeStore,
// AccountStore, ArtifactStore, LedgerStore, WorkflowStore,
// VerificationStore), and two implementations with the same contract: SQLite
// (the default, one coordinator) and PostgreSQL (several coordinators may
// share one database). Every method is
// one transaction and is safe to call from any thread. Methods that change a
// task's state validate the transition with jobs::CheckTaskTransition and
// reject illegal ones with FailedPrecondition, changing nothing.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "jobs/log_cap.h"
#include "jobs/node_history.h"
#include "jobs/task_select.h"
#include "jobs/attempt_events.h"
#include "jobs/task_write.h"
#include "ledger/posting.h"
#include "ledger/settlement.h"

namespace idlegrid::store {

// Owns what was stored before accounts existed, and the first credential.
inline constexpr char kOperatorAccount[] = "operator";

// Verification (docs/verification.md): a provider's record per image (and,
// with image "", the provider's own reliability and catches).
struct TrustRecord {
  std::string provider;
  std::string image;
  uint32_t consecutive = 0;     // verified results in a row (verify/adaptive.h)
  uint32_t reliability = 1000;  // per mille (verify/caught.h)
  uint32_t caught = 0;          // times proven wrong
  int64_t updated_ms = 0;
};

struct TaskKey {
  std::string job_id;
  uint32_t index = 0;
};

// What a verdict on a verified task writes, decided by verify::DecideTask and
// the coordinator (coordinator/verification_service.h); the store checks the task is
// where the verdict expects it and writes everything in one transaction.
struct VerdictWrite {
  std::string job_id;
  uint32_t index = 0;
  // Where the task must be for the write to apply.
  enum class Expect {
    kHeld,       // QUEUED, held for the verdict (jobs::kVerdictHoldMs)
    kSucceeded,  // SUCCEEDED: reopened to re-verify a result or send a known-answer check
    kQueued,     // QUEUED and not held: a known-answer check withdrawn
  };
  Expect expect = Expect::kHeld;
  jobs::TaskWrite task;
  std::string verification;              // v1::Task.verification
  std::optional<int64_t> not_before_ms;  // when the task may be offered again
  std::vector<std::string> exclude;      // appended to its excluded list ("provider:NAME")
  bool reset_exclusions = false;         // the excluded list is emptied before `exclude` is appended
  struct Vote {
    std::string attempt_id;
    std::string vote;
    std::string reason;
    bool failed = false;  // the attempt becomes FAILED with VERIFICATION_FAILED
    // The failed attempt's message (both backends write it as is).
    std::string FailedMessage() const { return "result rejected by verification: " + reason; }
  };
  std::vector<Vote> votes;
  std::vector<TrustRecord> trust;  // rows written as given
};

// A provider's accepted result, for backtracking (verify/caught.h).
struct ProviderResult {
  std::string attempt_id;
  std::string job_id;
  uint32_t index = 0;
  std::string vote;  // "agreed" or "unverified"
  int64_t finished_ms = 0;
};

struct QueuedTask {
  std::string job_id;
  uint32_t index = 0;
  v1::JobSpec spec;
  std::vector<std::string> excluded_nodes;
  int64_t queued_ms = 0;
  std::string account;  // the job's requester account (fair share)
};

struct ActiveAttempt {
  std::string attempt_id;
  std::string job_id;
  uint32_t index = 0;
  std::string node_id;
  v1::TaskState state = v1::ASSIGNED;
  double cpu = 0;
  uint64_t memory = 0;
  uint32_t gpus = 0;
  std::vector<std::string> device_uuids;  // GPUs held
  uint64_t gpu_memory_bytes = 0;          // per held GPU; 0 = the whole device
  uint64_t lease_epoch = 0;
  uint32_t gpu_milli = 0;  // compute share of each held GPU; 0 or 1000 = whole
  std::string account;     // the job's requester account (fair share)
};

struct NewAttempt {
  std::string attempt_id;
  std::string job_id;
  uint32_t index = 0;
  std::string node_id;
  int64_t now_ms = 0;
  std::vector<std::string> device_uuids;  // GPUs the placement reserves
  uint64_t lease_epoch = 0;               // set by CommitAssignments
  v1::PlacementRecord placement;          // policy and market terms, stored with the attempt
  // Verified jobs: the provider account of the attempt's node. The attempt
  // then restores the task's checkpoint only when a node of that same account
  // wrote it, so a replica never resumes from state written by the provider
  // it is meant to check (docs/verification.md). "": any checkpoint.
  std::string restore_only_from;
};

// Whether `a` may restore a checkpoint that a node of provider account
// `writer` wrote (NewAttempt::restore_only_from). Both stores' commits ask.
inline bool MayRestoreFrom(const NewAttempt& a, const std::string& writer) {
  return a.restore_only_from.empty() || a.restore_only_from == writer;
}

// One attempt of a node's history (AttemptStore::NodeAttempts): whose task
// it was, where it stands in the history, and the attempt as GetJob shows it.
struct NodeAttemptRow {
  std::string job_id;
  uint32_t task_index = 0;
  jobs::AttemptCursor cursor;
  v1::Attempt attempt;
};

// Per-node outcomes of attempts that ended in a time window (reliability).
struct NodeOutcomes {
  uint32_t succeeded = 0;    // attempts that ran to success
  uint32_t job_failed = 0;   // the job's own failures (not the node's fault)
  uint32_t node_lost = 0;    // leases lost: the node vanished mid-attempt
  uint32_t node_failed = 0;  // platform failures, ack timeouts on this node

  // Counts `n` attempts that ended so (see jobs::FaultOf).
  void Add(v1::TaskState attempt_state, v1::FailureReason reason, uint32_t n) {
    switch (jobs::FaultOf(attempt_state, reason)) {
      case jobs::AttemptFault::kSucceeded:
        succeeded += n;
        break;
      case jobs::AttemptFault::kJob:
        job_failed += n;
        break;
      case jobs::AttemptFault::kNodeLost:
        node_lost += n;
        break;
      case jobs::AttemptFault::kNode:
        node_failed += n;
        break;
      case jobs::AttemptFault::kUncounted:
        break;
    }
  }
};

struct EventResult {
  std::string job_id;
  uint32_t index = 0;
  jobs::AttemptOutcome outcome;
};

struct CancelResult {
  v1::Job job;
  std::vector<ActiveAttempt> stopped;  // attempts whose containers must be killed
};

struct NodeRecord {
  std::string id;
  std::string name;
  v1::NodeInfo info;
  int64_t registered_ms = 0;
  int64_t last_heartbeat_ms = 0;
  std::string public_key;      // Ed25519; the node id derives from it
  uint64_t last_sequence = 0;  // highest advertisement sequence accepted
  v1::Advertisement advertisement;
  v1::Measurement measurement;
  bool draining = false;
  int64_t drain_deadline_ms = 0;            // 0: none
  std::string provider = kOperatorAccount;  // the account whose join token enrolled it
};

struct ImageRecord {
  std::string manifest_digest;
  std::string config_digest;
  std::string archive_digest;
};

// --- tenancy (issue 11) ---

struct AccountRecord {
  std::string name;
  std::string role;  // "operator" | "requester" | "provider"
  int64_t created_ms = 0;
  double weight = 1;              // fair share
  uint32_t max_queued_tasks = 0;  // 0: no account limit (the coordinator's default applies)
  uint32_t max_running_tasks = 0;
  uint64_t max_stored_bytes = 0;
};

struct AccountUsage {
  uint32_t queued_tasks = 0;
  uint32_t running_tasks = 0;  // ASSIGNED or RUNNING
  uint64_t stored_bytes = 0;   // artifacts it holds references to, and its jobs' kept logs
};

struct TokenRecord {
  std::string id;    // not secret: 16 hex digits of the hash, names it for revoke
  std::string hash;  // Sha256Digest of the token; the token itself is never stored
  std::string account;
  std::string role;  // the account's role (read back joined; ignored on insert)
  std::string name;
  uint32_t scopes = 0;  // auth::Scope bits
  int64_t created_ms = 0;
  int64_t expires_ms = 0;  // 0: never
  int64_t revoked_ms = 0;  // 0: live
};

struct JoinTokenRecord {
  std::string hash;
  std::string provider;
  int64_t created_ms = 0;
  int64_t expires_ms = 0;  // 0: never
};

// Who may read an artifact: accounts holding a reference to it, or anyone if public.
struct ArtifactAccess {
  bool exists = false;
  bool is_public = false;
  std::set<std::string> accounts;
};

// A reason to keep a blob: a job that uses or made it ("job:<id>"), or an
// upload not yet used by a job ("upload:<account>", until expires_ms).
struct ArtifactRef {
  std::string digest;
  std::string holder;
  std::string account;
  int64_t expires_ms = 0;  // 0: as long as the holder exists
};

struct CollectedArtifacts {
  std::vector<std::string> digests;  // rows removed: unlink their blobs
  uint64_t bytes = 0;
};

// --- ledger (issue 13) ---

// A provider's earnings for one attempt, inside or past its dispute window.
struct PendingCharge {
  std::string provider;
  std::string attempt_id;
  std::string job_id;
  ledger::Micros pending = 0;  // the attempt's pending balance (> 0)
  int64_t charged_ms = 0;      // when its charge was applied
};

// --- workflows (issue 14, docs/workflows.md) ---

// What one pass of the coordinator's workflow advance writes (workflow/plan.h
// decided it): each step's state and message, the workflow's state, and
// whether it is settled (every step done: no pass needs to look at it again).
struct WorkflowWrite {
  std::string id;
  std::string state;
  bool settled = false;
  std::vector<v1::WorkflowStep> steps;  // name, state, message (job ids: ClaimWorkflowStep)
};

// --- jobs and tasks ---
class JobStore {
 public:
  virtual ~JobStore() = default;

  // Inserts the job and `spec.array_count` QUEUED tasks. AlreadyExists if the id is taken.
  virtual Status CreateJob(const std::string& job_id, const v1::JobSpec& spec, const std::string& spec_digest,
                           int64_t now_ms, const std::string& account) = 0;
  Status CreateJob(const std::string& job_id, const v1::JobSpec& spec, const std::string& spec_digest, int64_t now_ms) {
    return CreateJob(job_id, spec, spec_digest, now_ms, kOperatorAccount);
  }
  // The job with its tasks, their attempts and outputs. NotFound if absent.
  virtual Result<v1::Job> GetJob(const std::string& job_id) = 0;
  // The job's account, or nullopt if there is no such job (cheap: one row).
  virtual Result<std::optional<std::string>> JobAccount(const std::string& job_id) = 0;
  // Jobs of `account` ("": every account's), newest first, with task_counts but without tasks.
  virtual Result<std::vector<v1::Job>> ListJobs(const std::string& account) = 0;
  Result<std::vector<v1::Job>> ListJobs() { return ListJobs(""); }
  // Every non-terminal task -> CANCELLED; returns the attempts to stop, in the
  // order they were assigned.
  virtual Result<CancelResult> CancelJob(const std::string& job_id, int64_t now_ms) = 0;
  // The tasks `selection` matches -> CANCELLED, as jobs::PlanCancelTasks
  // decides; returns their attempts to stop (the job's other attempts run
  // on). NotFound for no such job; the plan's errors as they are.
  virtual Result<CancelResult> CancelTasks(const std::string& job_id, const jobs::TaskSelection& selection,
                                           int64_t now_ms) = 0;
  // The tasks `selection` names -> QUEUED, as jobs::PlanRetryTasks decides
  // (their attempts are kept). NotFound for no such job.
  virtual Result<v1::Job> RetryTasks(const std::string& job_id, const jobs::RetrySelection& selection,
                                     int64_t now_ms) = 0;
  // LOST tasks of the job -> QUEUED (retry) or FAILED (abandon).
  // FailedPrecondition if it has none.
  virtual Result<v1::Job> ResolveLost(const std::string& job_id, bool retry, int64_t now_ms) = 0;
  // QUEUED tasks waiting longer than their queue timeout -> FAILED(QUEUE_TIMEOUT). Returns how many.
  virtual Result<int> ExpireQueuedTasks(int64_t now_ms) = 0;
  // Removes a job (jobs::CheckDeletable decides whether it may go) with its
  // tasks, attempts, logs, checkpoint and references, and the artifacts no
  // longer held by anything (their rows, and images built on them); returns
  // those for the caller to unlink. Artifacts that never had a reference
  // (stored before v11, benchmark images) are never collected.
  virtual Result<CollectedArtifacts> DeleteJob(const std::string& job_id, int64_t now_ms) = 0;
  // Up to `limit` jobs whose retention ran out (jobs::RetentionExpired over
  // their last task change), oldest first.
  virtual Result<std::vector<std::string>> ExpiredJobs(int64_t now_ms, size_t limit) = 0;
  // Artifacts held only by expired upload holds: removed as DeleteJob does.
  virtual Result<CollectedArtifacts> CollectArtifacts(int64_t now_ms) = 0;
  // Fails a QUEUED task that can never run (e.g. unknown image).
  virtual Status FailQueuedTask(const std::string& job_id, uint32_t index, v1::FailureReason reason,
                                const std::string& message, int64_t now_ms) = 0;
};

// --- attempts: placement, leases and reports ---
class AttemptStore {
 public:
  virtual ~AttemptStore() = default;

  // QUEUED tasks in submission order, at most `limit`, leaving out those
  // still backing off from a failure at `now_ms` (INT64_MAX: include all).
  virtual Result<std::vector<QueuedTask>> QueuedTasks(size_t limit, int64_t now_ms = INT64_MAX) = 0;
  // Attempts ASSIGNED or RUNNING (they hold node capacity).
  virtual Result<std::vector<ActiveAttempt>> ActiveAttempts() = 0;
  // In one transaction, for each new attempt whose task is still QUEUED and
  // whose node still has room: task -> ASSIGNED and the attempt inserted under
  // the task's next lease epoch (restoring the task's checkpoint, if any),
  // with the job's cpu/memory/gpu_memory and placement.gpu_milli as what it
  // holds. Returns the ones committed, with lease_epoch set; others (task no
  // longer queued, or no room left) are skipped, not errors: the caller
  // re-plans them from a fresh snapshot.
  // The capacity guard re-checks, in the transaction and in batch order,
  // against the sum of the node's active (ASSIGNED/RUNNING) attempts plus
  // those admitted before in the batch, by the capacity ledger's rule
  // (capacity/batch_admission.h, capacity/ledger.h): cpu <= info.cpu_cores -
  // advertisement.policy.reserved_cpu; memory <= info.memory_bytes; per named
  // GPU device, a device held whole (gpu_milli 1000, or 0 with gpu_memory 0;
  // whatever gpu_memory it names) has no other tenant before or after, compute
  // shares add up to at most 1000 milli, VRAM slices to at most the
  // inventory's memory_total_bytes minus policy.reserved_gpu_memory_bytes.
  // Nodes with no stored capacity (no
  // row, 0 cores) are not checked. It is race-free across coordinators:
  // SQLite commits under BEGIN IMMEDIATE (one writer), PostgreSQL locks the
  // batch's node rows (FOR UPDATE, in id order) before summing.
  virtual Result<std::vector<NewAttempt>> CommitAssignments(const std::vector<NewAttempt>& attempts) = 0;
  // Applies an agent's report. PermissionDenied if the attempt belongs to
  // another node; FailedPrecondition (nothing changed) for a stale report: the
  // attempt has ended, or the report's lease epoch (when set) is not the
  // attempt's, or a newer attempt of the task superseded it. CHECKPOINTED
  // reports replace the task's checkpoint (every file must be a stored
  // artifact: NotFound otherwise).
  virtual Result<EventResult> ApplyAttemptReport(const std::string& node_id, const v1::ReportAttemptRequest& report,
                                                 int64_t now_ms) = 0;
  // Stores `receipt` as the attempt's receipt (docs/receipts.md; the caller
  // passes the countersigned one), replacing any: it is not checked here.
  // Wherever the attempt is read back (GetJob, ProviderAttempts) its
  // metering is the receipt statement's. NotFound for no such attempt.
  virtual Status PutReceipt(const std::string& attempt_id, const v1::Receipt& receipt) = 0;
  // Ends every active (ASSIGNED or RUNNING) attempt of the node, in one
  // transaction, as jobs::PlanNodeLost plans it: an attempt whose task was
  // cancelled becomes CANCELLED; any other FAILED with NODE_LOST, its task
  // QUEUED again where jobs::ShouldRetry allows, else LOST when the job is
  // not idempotent and FAILED when its retries are used up. Returns what
  // happened to each, in the order they were assigned.
  virtual Result<std::vector<EventResult>> FailNodeAttempts(const std::string& node_id, int64_t now_ms) = 0;
  // (job_id, node_id, task index) of an attempt; NotFound if absent.
  struct AttemptOwner {
    std::string job_id;
    std::string node_id;
    uint32_t index = 0;
    v1::TaskState state = v1::ASSIGNED;
  };
  virtual Result<AttemptOwner> GetAttemptOwner(const std::string& attempt_id) = 0;
  // Assignment commands for the node's attempts that are still ASSIGNED (to
  // re-send when its agent reconnects).
  virtual Result<std::vector<ActiveAttempt>> AssignedAttempts(const std::string& node_id) = 0;
  // ASSIGNED attempts never acknowledged (ACCEPTED) and assigned before the cutoff.
  virtual Result<std::vector<ActiveAttempt>> UnacknowledgedAttempts(int64_t assigned_before_ms) = 0;
  // Attempt outcomes per node for attempts that finished at or after `since_ms`.
  virtual Result<std::map<std::string, NodeOutcomes>> RecentNodeOutcomes(int64_t since_ms) = 0;
  // Up to `limit` of the node's attempts, newest first (by assignment time,
  // then commit order), only those older than `before` when it is given.
  virtual Result<std::vector<NodeAttemptRow>> NodeAttempts(const std::string& node_id,
                                                           std::optional<jobs::AttemptCursor> before, size_t limit) = 0;
};

// --- logs ---
class LogStore {
 public:
  virtual ~LogStore() = default;

  // Appends within each task's log cap (jobs/log_cap.h decides what is kept).
  virtual Status AppendLogs(const std::string& job_id, const std::vector<v1::LogChunk>& chunks,
                            const jobs::LogCap& cap) = 0;
  // Chunks of the job with seq > after_seq, in order, at most `limit`.
  virtual Result<std::vector<v1::LogChunk>> ReadLogs(const std::string& job_id, int64_t after_seq, size_t limit) = 0;
};

// --- nodes and credentials ---
class NodeStore {
 public:
  virtual ~NodeStore() = default;

  virtual Status UpsertNode(const NodeRecord& node, const std::string& token_hash) = 0;
  virtual Result<std::optional<NodeRecord>> NodeByTokenHash(const std::string& token_hash) = 0;
  virtual Result<std::vector<NodeRecord>> ListNodes() = 0;
  virtual Result<std::optional<NodeRecord>> GetNode(const std::string& node_id) = 0;
  // Stores a verified advertisement only if `sequence` is above the stored
  // one (FailedPrecondition otherwise): replays lose even under races.
  virtual Status RecordAdvertisement(const std::string& node_id, uint64_t sequence,
                                     const v1::Advertisement& advertisement) = 0;
  virtual Status RecordMeasurement(const std::string& node_id, const v1::Measurement& measurement) = 0;
  // NotFound for an unknown node.
  virtual Status SetDrain(const std::string& node_id, bool draining, int64_t deadline_ms) = 0;
  virtual Status RecordHeartbeat(const std::string& node_id, const v1::NodeInfo& info, int64_t now_ms) = 0;
  // Last heartbeat times of many nodes in one transaction.
  virtual Status RecordHeartbeats(const std::map<std::string, int64_t>& last_heartbeat_ms) = 0;
  // The fingerprint of the CA the database's nodes pin: `fingerprint` is
  // recorded if none is (or if `replace`), and the recorded one returned, so
  // a coordinator can tell it serves another CA than the database's nodes
  // trust (coordinators that do not share --shared-dir).
  virtual Result<std::string> PinClusterCa(const std::string& fingerprint, bool replace) = 0;
};

// --- accounts and credentials ---
class AccountStore {
 public:
  virtual ~AccountStore() = default;

  // AlreadyExists if the name is taken.
  virtual Status CreateAccount(const AccountRecord& account) = 0;
  virtual Result<std::vector<AccountRecord>> ListAccounts() = 0;
  virtual Result<std::optional<AccountRecord>> GetAccount(const std::string& name) = 0;
  virtual Result<AccountUsage> UsageOf(const std::string& account) = 0;
  // NotFound if the token's account does not exist.
  virtual Status AddApiToken(const TokenRecord& token) = 0;
  // The token with its account's role, or nullopt; revoked and expired ones
  // are returned too (the caller decides, and says which).
  virtual Result<std::optional<TokenRecord>> TokenByHash(const std::string& token_hash) = 0;
  // Tokens of `account` ("": all), oldest first.
  virtual Result<std::vector<TokenRecord>> ListTokens(const std::string& account) = 0;
  // Marks it revoked (idempotent); NotFound for an unknown id.
  virtual Result<TokenRecord> RevokeToken(const std::string& id, int64_t now_ms) = 0;
  // NotFound if the provider account does not exist.
  virtual Status AddJoinToken(const JoinTokenRecord& token) = 0;
  virtual Result<std::optional<JoinTokenRecord>> JoinTokenByHash(const std::string& token_hash) = 0;
};

// --- artifacts and images ---
class ArtifactStore {
 public:
  virtual ~ArtifactStore() = default;

  virtual Status RecordArtifact(const std::string& digest, uint64_t size, const std::string& kind, int64_t now_ms) = 0;
  virtual Result<bool> HasArtifact(const std::string& digest) = 0;
  // Adds references (an existing one is renewed: its expiry becomes the later).
  virtual Status AddArtifactRefs(const std::vector<ArtifactRef>& refs) = 0;
  // Marks a stored artifact readable by anyone.
  virtual Status SetArtifactPublic(const std::string& digest) = 0;
  virtual Result<ArtifactAccess> ArtifactAccessOf(const std::string& digest) = 0;
  virtual Status RegisterImage(const ImageRecord& image, int64_t now_ms) = 0;
  virtual Result<std::optional<ImageRecord>> GetImage(const std::string& manifest_digest) = 0;
};

// --- ledger (docs/ledger.md): executes plans made by src/ledger, decides nothing ---
class LedgerStore {
 public:
  virtual ~LedgerStore() = default;

  // Applies `postings` in order in ONE transaction and returns how many were
  // applied now: a posting whose key was applied before is skipped (a replay
  // after a crash or a retry changes nothing), an empty one too. All or
  // nothing: Internal for an unbalanced posting (ledger::CheckBalanced),
  // FailedPrecondition naming the account when one that may not go negative
  // (ledger::MayGoNegative) would. Postings get increasing seq numbers in the
  // order they commit (PostgreSQL serialises ledger writers on an advisory
  // lock), which settlement cursors rely on.
  virtual Result<int> ApplyPostings(const std::vector<ledger::Posting>& postings, int64_t now_ms) = 0;
  // Every account of `owner` that was ever posted to ("" : the grid's own
  // accounts, nullopt: every account) with its balance, zeros included.
  virtual Result<std::map<ledger::AccountKey, ledger::Micros>> LedgerBalances(
      const std::optional<std::string>& owner) = 0;
  // Postings with seq > after_seq, in seq order, at most `limit`; with an
  // owner, only those with an entry on one of its accounts.
  virtual Result<std::vector<ledger::BookedPosting>> LedgerPostings(int64_t after_seq, size_t limit,
                                                                    const std::optional<std::string>& owner) = 0;
  // Positive pending balances whose charge was applied before
  // `charged_before_ms`, oldest first, at most `limit`.
  virtual Result<std::vector<PendingCharge>> PendingCharges(int64_t charged_before_ms, size_t limit) = 0;
  // The last seq a settlement sink accepted (0: none yet), and its update.
  virtual Result<int64_t> SettlementCursor(const std::string& sink) = 0;
  virtual Status SetSettlementCursor(const std::string& sink, int64_t last_seq) = 0;
};

// --- workflows (docs/workflows.md): rows for coordinator/workflow_service.h ---
class WorkflowStore {
 public:
  virtual ~WorkflowStore() = default;

  // Inserts the workflow (state "running", not settled) for `account` with a
  // "waiting" row per step of `spec`, in spec order. AlreadyExists if the id is taken.
  virtual Status CreateWorkflow(const std::string& id, const v1::WorkflowSpec& spec, const std::string& account,
                                int64_t now_ms) = 0;
  // The workflow with its steps' rows in spec order. NotFound if absent.
  virtual Result<v1::Workflow> GetWorkflow(const std::string& id) = 0;
  // Workflows of `account` ("": every account's), newest first, with their steps.
  virtual Result<std::vector<v1::Workflow>> ListWorkflows(const std::string& account) = 0;
  // Ids of workflows not yet settled, oldest first, at most `limit`.
  virtual Result<std::vector<std::string>> UnsettledWorkflows(size_t limit) = 0;
  // Writes the steps' states and messages and the workflow's state and
  // settled flag, in one transaction, only while the workflow is running,
  // or cancelled (then its state stays cancelled). Returns false, writing
  // nothing, for a workflow that is done (succeeded, failed, or cancelled
  // and settled) or absent. Never writes job ids or cache keys.
  virtual Result<bool> UpdateWorkflow(const WorkflowWrite& write, int64_t now_ms) = 0;
  // Claims a job for a step that has none yet: sets its job id, cache key,
  // cached flag, state and message as `step` gives them. Returns the job id
  // the step holds afterwards: `step.job_id()` when the claim won, another
  // one when a claim came first (nothing is written then). NotFound for no
  // such step. This compare-and-set is what keeps a step from running twice
  // when coordinators (or a restarted one) advance the same workflow.
  virtual Result<std::string> ClaimWorkflowStep(const std::string& workflow_id, const v1::WorkflowStep& step) = 0;
  // The job of the latest succeeded step of `account`'s workflows whose cache
  // key is `cache_key` (nullopt: none), for reuse by a resubmitted workflow.
  virtual Result<std::optional<std::string>> CachedStepJob(const std::string& account,
                                                           const std::string& cache_key) = 0;
};

// --- webhooks (docs/webhooks.md) ---
// One callback: its delivery (id, subject, url, state, tries; state
// "waiting" until its subject ends, then "pending", "delivered" or
// "failed"), the key it is signed with and the body POSTed ("" while waiting).
struct WebhookRow {
  v1::WebhookDelivery delivery;
  std::string secret;
  std::string body;
};

class WebhookStore {
 public:
  virtual ~WebhookStore() = default;

  // Inserts the row; one already stored under its id is kept as it is (a
  // replayed submit registers once).
  virtual Status AddWebhook(const WebhookRow& row) = 0;
  // Rows in `state` whose next try is due at `now_ms`, soonest first, at most `limit`.
  virtual Result<std::vector<WebhookRow>> DueWebhooks(const std::string& state, int64_t now_ms, size_t limit) = 0;
  // Writes `row` over the stored one with its id only if that one is still in
  // `from_state` with next try at `from_next_ms` (a compare-and-set: of two
  // coordinators, one claims a try). False, writing nothing, otherwise.
  virtual Result<bool> UpdateWebhook(const WebhookRow& row, const std::string& from_state, int64_t from_next_ms) = 0;
  // The deliveries about one subject ("job", id), oldest first.
  virtual Result<std::vector<v1::WebhookDelivery>> WebhooksOf(const std::string& subject,
                                                              const std::string& subject_id) = 0;
};

// --- verification (docs/verification.md) ---
class VerificationStore {
 public:
  virtual ~VerificationStore() = default;

  // Tasks held for a verdict (QUEUED with jobs::kVerdictHoldMs), oldest first.
  virtual Result<std::vector<TaskKey>> HeldTasks(size_t limit) = 0;
  // Writes a verdict; false (and nothing written) when the task is not where
  // write.reopen says it must be (another coordinator decided first).
  virtual Result<bool> ApplyVerdict(const VerdictWrite& write, int64_t now_ms) = 0;
  // QUEUED tasks whose excluded list has an entry starting with `prefix`
  // (known-answer checks waiting for their provider), oldest change first,
  // with when they last changed.
  virtual Result<std::vector<std::pair<TaskKey, int64_t>>> TasksExcluding(const std::string& prefix, size_t limit) = 0;
  // Every record of `provider` (its images, and "" for itself).
  virtual Result<std::vector<TrustRecord>> TrustOf(const std::string& provider) = 0;
  // Its SUCCEEDED attempts voted "agreed" or "unverified" that finished at or
  // after `since_ms`, oldest first.
  virtual Result<std::vector<ProviderResult>> ProviderResults(const std::string& provider, int64_t since_ms,
                                                              size_t limit) = 0;
  // Earnings (docs/provider.md): the SUCCEEDED attempts run by its nodes that
  // finished at or after `since_ms`, newest first, at most `limit`: id,
  // node_id, times, placement, vote and metering (from the receipt). Which
  // of them count as earned is jobs::IsAcceptedResult's to say.
  virtual Result<std::vector<v1::Attempt>> ProviderAttempts(const std::string& provider, int64_t since_ms,
                                                            size_t limit) = 0;
};

// The whole store: every role above, each a virtual base, so that a backend
// implements each role in a class of its own (SqliteJobs, PgJobs, ...) and
// its store class (SqliteStore, PostgresStore) assembles them. Callers hold
// a Store.
class Store : public virtual JobStore,
              public virtual AttemptStore,
              public virtual LogStore,
              public virtual NodeStore,
              public virtual AccountStore,
              public virtual ArtifactStore,
              public virtual LedgerStore,
              public virtual WorkflowStore,
              public virtual WebhookStore,
              public virtual VerificationStore {
 public:
  ~Store() override = default;
};

// Opens (creating if needed) the SQLite database at `path` in WAL mode and
// applies pending schema migrations.
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path);

struct PostgresOptions {
  size_t pool_size = 8;  // connections opened on demand, at most this many
};

// Connects to PostgreSQL (`conninfo`: a libpq "key=value ..." string or a
// postgresql:// URL) and applies pending schema migrations; coordinators that
// start together migrate once. Unavailable if the server cannot be reached,
// FailedPrecondition for a schema newer than this binary. Several processes
// may share one database.
Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& conninfo, const PostgresOptions& options = {});

// `location` is a postgresql:// or postgres:// URL (PostgreSQL) or a file path (SQLite).
Result<std::unique_ptr<Store>> OpenStore(const std::string& location);

}  // namespace idlegrid::store
