#pragma once
// The Store on PostgreSQL: several coordinator processes may share one
// database. One class per role of store.h (PgJobs, PgAttempts, ...), all on
// one shared connection pool, which PostgresStore owns and assembles them
// around. Every method runs as one transaction on a pooled connection:
// - conditional statements (CommitAssignments' "UPDATE ... WHERE state =
//   QUEUED" for the whole batch, RecordAdvertisement's sequence check) run
//   under READ COMMITTED, where a row updated concurrently is re-checked
//   against the condition after the other transaction commits, so a task is
//   granted once however many coordinators commit at the same time;
//   CommitAssignments first locks the batch's node rows (SELECT ... FOR
//   UPDATE, in id order), so its capacity re-check reads sums no other
//   coordinator can change before it commits;
// - read-modify-write transactions (attempt reports, cancel, node loss...)
//   run SERIALIZABLE and are retried on conflict, which gives the same
//   outcomes as SQLite's single writer.
#include <functional>
#include <memory>
#include <string>

#include "jobs/outcome_plan.h"
#include "store/postgres/pg_pool.h"
#include "store/store.h"

namespace idlegrid::store {

// The pool every role shares.
struct PgContext {
  PgContext(const std::string& conninfo, size_t pool_size) : pool(conninfo, pool_size) {}

  pg::ConnectionPool pool;
};

// What each role is built on: the shared pool, and the helpers more than one
// role needs.
class PgRole {
 protected:
  explicit PgRole(PgContext& context) : pool_(context.pool) {}

  // Runs `body` as one transaction (see pg::RunTransaction).
  Status Tx(pg::Isolation isolation, const std::function<Status(pg::Connection&)>& body) {
    return pg::RunTransaction(pool_, isolation, body);
  }
  // Helpers running inside the caller's transaction.
  static Status WriteTask(pg::Connection& c, const std::string& job_id, uint32_t index, const jobs::TaskWrite& write);

  pg::ConnectionPool& pool_;
};

class PgJobs : public virtual JobStore, protected PgRole {
 public:
  explicit PgJobs(PgContext& context) : PgRole(context) {}

  Status CreateJob(const std::string& job_id, const v1::JobSpec& spec, const std::string& spec_digest, int64_t now_ms,
                   const std::string& account) override;
  using JobStore::CreateJob;
  Result<v1::Job> GetJob(const std::string& job_id) override;
  Result<std::vector<v1::Job>> ListJobs(const std::string& account) override;
  using JobStore::ListJobs;
  Result<CancelResult> CancelJob(const std::string& job_id, int64_t now_ms) override;
  Result<int> ExpireQueuedTasks(int64_t now_ms) override;
  Result<v1::Job> ResolveLost(const std::string& job_id, bool retry, int64_t now_ms) override;
  Result<CancelResult> CancelTasks(const std::string& job_id, const jobs::TaskSelection& selection,
                                   int64_t now_ms) override;
  Result<v1::Job> RetryTasks(const std::string& job_id, const jobs::RetrySelection& selection, int64_t now_ms) override;
  Status FailQueuedTask(const std::string& job_id, uint32_t index, v1::FailureReason reason, const std::string& message,
                        int64_t now_ms) override;
  Result<CollectedArtifacts> DeleteJob(const std::string& job_id, int64_t now_ms) override;
  Result<std::vector<std::string>> ExpiredJobs(int64_t now_ms, size_t limit) override;
  Result<CollectedArtifacts> CollectArtifacts(int64_t now_ms) override;
  Result<std::optional<std::string>> JobAccount(const std::string& job_id) override;

 private:
  // Helpers running inside the caller's transaction.
  static Result<v1::Job> ReadJob(pg::Connection& c, const std::string& job_id);
  // The job's (index, state) rows in index order, locked; NotFound for no such job.
  static Result<std::vector<jobs::TaskStateRow>> TaskStates(pg::Connection& c, const std::string& job_id);
  // Moves the task (see jobs::PlanTaskMove); NotFound if there is no such task.
  static Status MoveTask(pg::Connection& c, const std::string& job_id, uint32_t index, const jobs::TaskMove& move,
                         int64_t now_ms);
};

class PgAttempts : public virtual AttemptStore, protected PgRole {
 public:
  explicit PgAttempts(PgContext& context) : PgRole(context) {}

  Result<std::vector<QueuedTask>> QueuedTasks(size_t limit, int64_t now_ms = INT64_MAX) override;
  Result<std::vector<ActiveAttempt>> ActiveAttempts() override;
  Result<std::vector<NewAttempt>> CommitAssignments(const std::vector<NewAttempt>& attempts) override;
  Result<EventResult> ApplyAttemptReport(const std::string& node_id, const v1::ReportAttemptRequest& report,
                                         int64_t now_ms) override;
  Status PutReceipt(const std::string& attempt_id, const v1::Receipt& receipt) override;
  Result<std::vector<EventResult>> FailNodeAttempts(const std::string& node_id, int64_t now_ms) override;
  Result<AttemptOwner> GetAttemptOwner(const std::string& attempt_id) override;
  Result<std::vector<ActiveAttempt>> AssignedAttempts(const std::string& node_id) override;
  Result<std::vector<ActiveAttempt>> UnacknowledgedAttempts(int64_t assigned_before_ms) override;
  Result<std::map<std::string, NodeOutcomes>> RecentNodeOutcomes(int64_t since_ms) override;
  Result<std::vector<NodeAttemptRow>> NodeAttempts(const std::string& node_id,
                                                   std::optional<jobs::AttemptCursor> before, size_t limit) override;

 private:
  // Helpers running inside the caller's transaction.
  // Replaces the task's checkpoint with the one `report` lists.
  static Status RecordCheckpoint(pg::Connection& c, const v1::ReportAttemptRequest& report, const std::string& job_id,
                                 uint32_t index, uint64_t epoch, int64_t now_ms);
  // Executes the writes of a jobs::OutcomePlan for the attempt and its task
  // (all but the checkpoint, which needs the attempt's epoch).
  static Status ExecutePlan(pg::Connection& c, const std::string& attempt_id, const std::string& job_id, uint32_t index,
                            const jobs::OutcomePlan& plan);
};

class PgLogs : public virtual LogStore, protected PgRole {
 public:
  explicit PgLogs(PgContext& context) : PgRole(context) {}

  Status AppendLogs(const std::string& job_id, const std::vector<v1::LogChunk>& chunks,
                    const jobs::LogCap& cap) override;
  Result<std::vector<v1::LogChunk>> ReadLogs(const std::string& job_id, int64_t after_seq, size_t limit) override;
};

class PgNodes : public virtual NodeStore, protected PgRole {
 public:
  explicit PgNodes(PgContext& context) : PgRole(context) {}

  Status UpsertNode(const NodeRecord& node, const std::string& token_hash) override;
  Result<std::optional<NodeRecord>> NodeByTokenHash(const std::string& token_hash) override;
  Result<std::vector<NodeRecord>> ListNodes() override;
  Result<std::optional<NodeRecord>> GetNode(const std::string& node_id) override;
  Status RecordAdvertisement(const std::string& node_id, uint64_t sequence,
                             const v1::Advertisement& advertisement) override;
  Status RecordMeasurement(const std::string& node_id, const v1::Measurement& measurement) override;
  Status SetDrain(const std::string& node_id, bool draining, int64_t deadline_ms) override;
  Status RecordHeartbeat(const std::string& node_id, const v1::NodeInfo& info, int64_t now_ms) override;
  Status RecordHeartbeats(const std::map<std::string, int64_t>& last_heartbeat_ms) override;
  Result<std::string> PinClusterCa(const std::string& fingerprint, bool replace) override;
};

class PgAccounts : public virtual AccountStore, protected PgRole {
 public:
  explicit PgAccounts(PgContext& context) : PgRole(context) {}

  Status CreateAccount(const AccountRecord& account) override;
  Result<std::vector<AccountRecord>> ListAccounts() override;
  Result<std::optional<AccountRecord>> GetAccount(const std::string& name) override;
  Result<AccountUsage> UsageOf(const std::string& account) override;
  Status AddApiToken(const TokenRecord& token) override;
  Result<std::optional<TokenRecord>> TokenByHash(const std::string& token_hash) override;
  Result<std::vector<TokenRecord>> ListTokens(const std::string& account) override;
  Result<TokenRecord> RevokeToken(const std::string& id, int64_t now_ms) override;
  Status AddJoinToken(const JoinTokenRecord& token) override;
  Result<std::optional<JoinTokenRecord>> JoinTokenByHash(const std::string& token_hash) override;
};

class PgArtifacts : public virtual ArtifactStore, protected PgRole {
 public:
  explicit PgArtifacts(PgContext& context) : PgRole(context) {}

  Status RecordArtifact(const std::string& digest, uint64_t size, const std::string& kind, int64_t now_ms) override;
  Result<bool> HasArtifact(const std::string& digest) override;
  Status AddArtifactRefs(const std::vector<ArtifactRef>& refs) override;
  Status SetArtifactPublic(const std::string& digest) override;
  Result<ArtifactAccess> ArtifactAccessOf(const std::string& digest) override;
  Status RegisterImage(const ImageRecord& image, int64_t now_ms) override;
  Result<std::optional<ImageRecord>> GetImage(const std::string& manifest_digest) override;
};

class PgLedger : public virtual LedgerStore, protected PgRole {
 public:
  explicit PgLedger(PgContext& context) : PgRole(context) {}

  Result<int> ApplyPostings(const std::vector<ledger::Posting>& postings, int64_t now_ms) override;
  Result<std::map<ledger::AccountKey, ledger::Micros>> LedgerBalances(const std::optional<std::string>& owner) override;
  Result<std::vector<ledger::BookedPosting>> LedgerPostings(int64_t after_seq, size_t limit,
                                                            const std::optional<std::string>& owner) override;
  Result<std::vector<PendingCharge>> PendingCharges(int64_t charged_before_ms, size_t limit) override;
  Result<int64_t> SettlementCursor(const std::string& sink) override;
  Status SetSettlementCursor(const std::string& sink, int64_t last_seq) override;
};

class PgWorkflows : public virtual WorkflowStore, protected PgRole {
 public:
  explicit PgWorkflows(PgContext& context) : PgRole(context) {}

  Status CreateWorkflow(const std::string& id, const v1::WorkflowSpec& spec, const std::string& account,
                        int64_t now_ms) override;
  Result<v1::Workflow> GetWorkflow(const std::string& id) override;
  Result<std::vector<v1::Workflow>> ListWorkflows(const std::string& account) override;
  Result<std::vector<std::string>> UnsettledWorkflows(size_t limit) override;
  Result<bool> UpdateWorkflow(const WorkflowWrite& write, int64_t now_ms) override;
  Result<std::string> ClaimWorkflowStep(const std::string& workflow_id, const v1::WorkflowStep& step) override;
  Result<std::optional<std::string>> CachedStepJob(const std::string& account, const std::string& cache_key) override;

 private:
  // Helpers running inside the caller's transaction.
  // The workflows `where` selects ($1 bound to `arg`, if any) with their steps.
  static Result<std::vector<v1::Workflow>> ReadWorkflows(pg::Connection& c, const std::string& where,
                                                         const std::string& arg);
};

class PgWebhooks : public virtual WebhookStore, protected PgRole {
 public:
  explicit PgWebhooks(PgContext& context) : PgRole(context) {}

  Status AddWebhook(const WebhookRow& row) override;
  Result<std::vector<WebhookRow>> DueWebhooks(const std::string& state, int64_t now_ms, size_t limit) override;
  Result<bool> UpdateWebhook(const WebhookRow& row, const std::string& from_state, int64_t from_next_ms) override;
  Result<std::vector<v1::WebhookDelivery>> WebhooksOf(const std::string& subject,
                                                      const std::string& subject_id) override;
};

class PgVerification : public virtual VerificationStore, protected PgRole {
 public:
  explicit PgVerification(PgContext& context) : PgRole(context) {}

  Result<std::vector<TaskKey>> HeldTasks(size_t limit) override;
  Result<bool> ApplyVerdict(const VerdictWrite& write, int64_t now_ms) override;
  Result<std::vector<TrustRecord>> TrustOf(const std::string& provider) override;
  Result<std::vector<std::pair<TaskKey, int64_t>>> TasksExcluding(const std::string& prefix, size_t limit) override;
  Result<std::vector<ProviderResult>> ProviderResults(const std::string& provider, int64_t since_ms,
                                                      size_t limit) override;
  Result<std::vector<v1::Attempt>> ProviderAttempts(const std::string& provider, int64_t since_ms,
                                                    size_t limit) override;
};

// Every role on one pool: by dominance each role class's overrides are the
// final overriders of Store's methods.
class PostgresStore final : private PgContext,
                            public Store,
                            public PgJobs,
                            public PgAttempts,
                            public PgLogs,
                            public PgNodes,
                            public PgAccounts,
                            public PgArtifacts,
                            public PgLedger,
                            public PgWorkflows,
                            public PgWebhooks,
                            public PgVerification {
 public:
  // The pool is a base listed first, so it is built before the roles that
  // keep references to it, and closed after them.
  PostgresStore(const std::string& conninfo, size_t pool_size)
      : PgContext(conninfo, pool_size),
        PgJobs(static_cast<PgContext&>(*this)),
        PgAttempts(static_cast<PgContext&>(*this)),
        PgLogs(static_cast<PgContext&>(*this)),
        PgNodes(static_cast<PgContext&>(*this)),
        PgAccounts(static_cast<PgContext&>(*this)),
        PgArtifacts(static_cast<PgContext&>(*this)),
        PgLedger(static_cast<PgContext&>(*this)),
        PgWorkflows(static_cast<PgContext&>(*this)),
        PgWebhooks(static_cast<PgContext&>(*this)),
        PgVerification(static_cast<PgContext&>(*this)) {}
  // Applies pending migrations under a database-wide advisory lock, so
  // coordinators starting together migrate once. FailedPrecondition for a
  // schema newer than this binary.
  Status Migrate();
};

}  // namespace idlegrid::store
