#pragma once
#include <sqlite3.h>

#include <mutex>

#include "jobs/outcome_plan.h"
#include "store/sqlite/db.h"
#include "store/store.h"

namespace idlegrid::store {

// One connection guarded by mu_: SQLite serialises writers anyway, and one
// coordinator process is the only writer of its database file.
class SqliteStore : public Store {
 public:
  explicit SqliteStore(sqlite3* db) : db_(db) {}
  ~SqliteStore() override { sqlite3_close(db_); }
  Status Migrate();

  Status CreateJob(const std::string& job_id, const v1::JobSpec& spec, const std::string& spec_digest, int64_t now_ms,
                   const std::string& account) override;
  using Store::CreateJob;
  Result<v1::Job> GetJob(const std::string& job_id) override;
  Result<std::vector<v1::Job>> ListJobs(const std::string& account) override;
  using Store::ListJobs;
  Result<std::vector<QueuedTask>> QueuedTasks(size_t limit, int64_t now_ms = INT64_MAX) override;
  Result<std::vector<ActiveAttempt>> ActiveAttempts() override;
  Result<std::vector<NewAttempt>> CommitAssignments(const std::vector<NewAttempt>& attempts) override;
  Result<EventResult> ApplyAttemptReport(const std::string& node_id, const v1::ReportAttemptRequest& report,
                                         int64_t now_ms) override;
  Status PutReceipt(const std::string& attempt_id, const v1::Receipt& receipt) override;
  Result<std::vector<EventResult>> FailNodeAttempts(const std::string& node_id, int64_t now_ms) override;
  Result<CancelResult> CancelJob(const std::string& job_id, int64_t now_ms) override;
  Result<int> ExpireQueuedTasks(int64_t now_ms) override;
  Result<v1::Job> ResolveLost(const std::string& job_id, bool retry, int64_t now_ms) override;
  Result<CancelResult> CancelTasks(const std::string& job_id, const jobs::TaskSelection& selection,
                                   int64_t now_ms) override;
  Result<v1::Job> RetryTasks(const std::string& job_id, const jobs::RetrySelection& selection, int64_t now_ms) override;
  Result<AttemptOwner> GetAttemptOwner(const std::string& attempt_id) override;
  Result<std::vector<ActiveAttempt>> AssignedAttempts(const std::string& node_id) override;
  Result<std::vector<ActiveAttempt>> UnacknowledgedAttempts(int64_t assigned_before_ms) override;
  Status FailQueuedTask(const std::string& job_id, uint32_t index, v1::FailureReason reason, const std::string& message,
                        int64_t now_ms) override;
  Result<std::map<std::string, NodeOutcomes>> RecentNodeOutcomes(int64_t since_ms) override;

  Status AppendLogs(const std::string& job_id, const std::vector<v1::LogChunk>& chunks,
                    const jobs::LogCap& cap) override;
  Result<std::vector<v1::LogChunk>> ReadLogs(const std::string& job_id, int64_t after_seq, size_t limit) override;

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

  Status RecordArtifact(const std::string& digest, uint64_t size, const std::string& kind, int64_t now_ms) override;
  Result<bool> HasArtifact(const std::string& digest) override;
  Result<CollectedArtifacts> DeleteJob(const std::string& job_id, int64_t now_ms) override;
  Result<std::vector<std::string>> ExpiredJobs(int64_t now_ms, size_t limit) override;
  Result<CollectedArtifacts> CollectArtifacts(int64_t now_ms) override;
  Result<std::optional<std::string>> JobAccount(const std::string& job_id) override;
  Status AddArtifactRefs(const std::vector<ArtifactRef>& refs) override;
  Status SetArtifactPublic(const std::string& digest) override;
  Result<ArtifactAccess> ArtifactAccessOf(const std::string& digest) override;
  Status RegisterImage(const ImageRecord& image, int64_t now_ms) override;
  Result<std::optional<ImageRecord>> GetImage(const std::string& manifest_digest) override;

  Result<int> ApplyPostings(const std::vector<ledger::Posting>& postings, int64_t now_ms) override;
  Result<std::map<ledger::AccountKey, ledger::Micros>> LedgerBalances(const std::optional<std::string>& owner) override;
  Result<std::vector<ledger::BookedPosting>> LedgerPostings(int64_t after_seq, size_t limit,
                                                            const std::optional<std::string>& owner) override;
  Result<std::vector<PendingCharge>> PendingCharges(int64_t charged_before_ms, size_t limit) override;
  Result<int64_t> SettlementCursor(const std::string& sink) override;
  Status SetSettlementCursor(const std::string& sink, int64_t last_seq) override;
  Result<std::vector<TaskKey>> HeldTasks(size_t limit) override;
  Result<bool> ApplyVerdict(const VerdictWrite& write, int64_t now_ms) override;
  Result<std::vector<TrustRecord>> TrustOf(const std::string& provider) override;
  Result<std::vector<std::pair<TaskKey, int64_t>>> TasksExcluding(const std::string& prefix, size_t limit) override;
  Result<std::vector<ProviderResult>> ProviderResults(const std::string& provider, int64_t since_ms,
                                                      size_t limit) override;
  Result<std::vector<v1::Attempt>> ProviderAttempts(const std::string& provider, int64_t since_ms,
                                                    size_t limit) override;

  Status CreateWorkflow(const std::string& id, const v1::WorkflowSpec& spec, const std::string& account,
                        int64_t now_ms) override;
  Result<v1::Workflow> GetWorkflow(const std::string& id) override;
  Result<std::vector<v1::Workflow>> ListWorkflows(const std::string& account) override;
  Result<std::vector<std::string>> UnsettledWorkflows(size_t limit) override;
  Result<bool> UpdateWorkflow(const WorkflowWrite& write, int64_t now_ms) override;
  Result<std::string> ClaimWorkflowStep(const std::string& workflow_id, const v1::WorkflowStep& step) override;
  Result<std::optional<std::string>> CachedStepJob(const std::string& account, const std::string& cache_key) override;

 private:
  // Helpers; callers hold mu_ (and usually a transaction).
  // Removes each digest with no live reference left (rows only).
  Status CollectUnheldLocked(const std::set<std::string>& digests, int64_t now_ms, CollectedArtifacts* out);
  // Executes the writes of a jobs::OutcomePlan for the attempt and its task
  // (all but the checkpoint, which needs the attempt's epoch).
  Status ExecutePlanLocked(const std::string& attempt_id, const std::string& job_id, uint32_t index,
                           const jobs::OutcomePlan& plan);
  Status WriteTaskLocked(const std::string& job_id, uint32_t index, const jobs::TaskWrite& write);
  // Replaces the task's checkpoint with the one `report` lists.
  Status RecordCheckpointLocked(const v1::ReportAttemptRequest& report, const std::string& job_id, uint32_t index,
                                uint64_t epoch, int64_t now_ms);
  Status LoadCheckpointsLocked(const std::string& job_id, const std::map<uint32_t, v1::Task*>& tasks);
  // The job's (index, state) rows in index order; NotFound for no such job.
  Result<std::vector<jobs::TaskStateRow>> TaskStatesLocked(const std::string& job_id);
  // Moves the task (see jobs::PlanTaskMove); NotFound if there is no such task.
  Status MoveTaskLocked(const std::string& job_id, uint32_t index, const jobs::TaskMove& move, int64_t now_ms);
  // Reads the workflows `where` selects (bound to `arg`, if any) with their steps.
  Result<std::vector<v1::Workflow>> ReadWorkflowsLocked(const char* where, const std::string& arg);

  std::mutex mu_;
  sqlite3* db_;  // guarded by mu_
};

}  // namespace idlegrid::store
