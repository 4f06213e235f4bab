#pragma once
// The node table: what this coordinator knows of each node beyond the store.
// It owns registration, agent sessions' opening and closing, heartbeats and
// the failure detector (jobs/node_liveness.h), lease expiry of nodes lost or
// connected elsewhere, reconciliation of what agents say they run, verified
// advertisements, drain, reliability, the data policy (a node's trust tier),
// and the capacity each node and device has left (capacity/node_capacity.h,
// the one rule the store's commit guard applies too). It hands the dispatcher
// one snapshot (Views) and the readiness service its view (ReadinessHooks).
//
// It may not place work, write jobs or attempts other than failing a lost
// node's, or judge readiness: those go through its hooks.
//
// Files: node_table.cc (sessions, registration, listing, drain),
// advertisements.cc (advertisements, what nodes and devices may take, views),
// liveness.cc (heartbeats, timeouts, reconciliation, reliability).
//
// Lock order: mu_ -> AgentSessions -> AgentSession. The hooks are called
// without mu_, except cpu_bench_error, gpu_bench_error and
// readiness_key_untrusted (leaves) and the readiness service's
// update_measurement, which writes the measurement to the store under mu_.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "capacity/node_capacity.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "coordinator/agent_session.h"
#include "coordinator/agent_tokens.h"
#include "coordinator/event_counters.h"
#include "coordinator/options.h"
#include "coordinator/readiness_benchmarks.h"
#include "coordinator/running_index.h"
#include "coordinator/standing_reader.h"
#include "coordinator/tenancy.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "jobs/liveness.h"
#include "jobs/node_liveness.h"
#include "sched/data_policy.h"
#include "sched/reliability.h"
#include "sched/snapshot.h"
#include "store/store.h"

namespace idlegrid::coordinator {

class NodeTable {
 public:
  struct Hooks {
    // Reports an attempt's end as if its node had (ack timeouts, attempts
    // an agent no longer runs); AttemptReports::Report.
    std::function<Status(const std::string& node_id, const v1::ReportAttemptRequest&)> report_attempt;
    // Sends a committed attempt again (a reconnecting agent may have missed it).
    std::function<Status(const store::NewAttempt&)> resend;
    // The readiness service: judge a job that ended, forget an offline node,
    // and why no benchmark can run ("" when one can).
    std::function<void(const std::string& job_id)> judge_readiness;
    std::function<void(const std::string& node_id)> forget_readiness;
    std::function<std::string()> cpu_bench_error;
    std::function<std::string()> gpu_bench_error;
    // Why the node cannot trust the readiness image's signer ("" when it can).
    std::function<std::string(const v1::Advertisement&)> readiness_key_untrusted;
    std::function<void()> changed;
  };
  // The dispatcher's snapshot: nodes as placement sees them, and the data
  // policy they were rated under.
  struct Snapshot {
    std::vector<sched::NodeView> views;
    std::shared_ptr<const sched::DataPolicy> data;
  };
  // The unit price a placement cleared at (pay-as-ask): its device's ask.
  struct ClearingAsk {
    std::string device_class;
    double per_hour = 0;
  };

  NodeTable(store::Store* store, Clock* clock, const Options& options, std::string join_secret_hash, Tenancy* tenancy,
            AgentSessions* sessions, EventCounters* counters, Hooks hooks);

  // Loads the stored nodes, each with a fresh grace period: a restarted
  // coordinator does not declare its fleet dead. Call once, before Sweep.
  void Load(int64_t started_ms);
  // One pass of the loop's node work: liveness (suspect/offline nodes, ack
  // timeouts), heartbeat persistence, leases of nodes connected elsewhere,
  // reliability, drain deadlines. The loop thread's (or Tick's caller's) alone.
  void Sweep();

  // --- agents ---
  // The node id the agent token ("Bearer <token>") belongs to.
  Result<std::string> Authenticate(const std::string& bearer);
  Result<v1::RegisterResponse> Register(const v1::RegisterRequest& request, const std::string& peer);
  std::shared_ptr<AgentSession> OpenSession(const std::string& node_id, const v1::NodeInfo& info,
                                            const std::string& peer);
  void CloseSession(const std::string& node_id, const std::shared_ptr<AgentSession>& session);
  Result<v1::HeartbeatResponse> Heartbeat(const std::string& node_id, const v1::HeartbeatRequest& request);

  // --- operators and requesters ---
  Result<v1::ListNodesResponse> List();
  // Drain (or undo): no new work; at the deadline, running attempts are
  // stopped and handed back. NotFound for an unknown node.
  Result<v1::Node> Drain(const v1::DrainNodeRequest& request);
  // A page of the attempts the node ran or runs, newest first, with their
  // costs so far. NotFound for an unknown node; InvalidArgument for a page
  // token or limit that is not one (jobs/node_history.h).
  Result<v1::ListNodeAttemptsResponse> Attempts(const v1::ListNodeAttemptsRequest& request);
  // Replaces the data policy (an operator assigned or withdrew a node's
  // trust tier, or changed a class's rule); the next dispatch and explanation
  // use it. Jobs already submitted keep the class they were stamped with.
  void SetDataPolicy(sched::DataPolicy policy);
  // The data policy now (SetDataPolicy may replace it; this copy stays valid).
  std::shared_ptr<const sched::DataPolicy> DataPolicy();

  // --- the other services' views ---
  Snapshot Views(const std::vector<store::ActiveAttempt>& active);
  StandingReader::Fleet StandingFleet();
  std::vector<ClearingAsk> ClearingAsks(const std::vector<store::NewAttempt>& placed);
  // The provider account owning a node (the operator's when unknown).
  std::string ProviderOf(const std::string& node_id);
  // The provider accounts of every node this coordinator knows, online or not.
  std::set<std::string> ProviderAccounts();
  std::string PublicKeyOf(const std::string& node_id);
  std::map<std::string, int64_t> HeartbeatGaps();
  ReadinessBenchmarks::Hooks ReadinessHooks();

 private:
  // What this coordinator knows of one node, beyond the store. Whether it is
  // connected is AgentSessions' to say.
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

  // advertisements.cc
  Status AcceptAdvertisement(const std::string& node_id, const v1::SignedAdvertisement& signed_ad);
  Status CheckSimulated(const v1::Advertisement& ad) const;
  // "" when the node may take ordinary work; otherwise why not.
  std::string UnschedulableReasonLocked(const NodeLive& node) const IG_REQUIRES(mu_);
  // Why device `d` takes no ordinary work, "" when it does: held back by its
  // owner, or its readiness benchmark pending or failed. The node's other
  // devices and its CPUs are not affected.
  std::string GpuUnavailableReasonLocked(const NodeLive& node, const v1::GpuDevice& d) const IG_REQUIRES(mu_);
  // What `node` offers less what `mine` (its active attempts) hold: the
  // capacity ledger's rule, the one the store's commit guard applies too.
  static capacity::NodeCapacity HeldCapacity(const NodeLive& node, const std::vector<store::ActiveAttempt>& mine);
  // The advertised devices with their owner's reserve and what `held` leaves
  // allocatable; measured only after the coordinator's own benchmark.
  std::vector<v1::GpuDevice> AccountedGpusLocked(const NodeLive& node, const capacity::NodeCapacity& held) const
      IG_REQUIRES(mu_);
  sched::NodeView ViewLocked(const std::string& id, const NodeLive& n,
                             const std::vector<store::ActiveAttempt>& mine) const IG_REQUIRES(mu_);

  // liveness.cc
  void CheckHeartbeats();
  void ExpireUnacknowledged(int64_t now);
  void PersistHeartbeats();
  void ExpireUnconnectedLeases();
  // Recomputes every node's reliability from the last day's attempts.
  void RefreshReliability();
  void EnforceDrainDeadlines();
  // Fails RUNNING attempts the node's agent no longer runs (see NodeLive::unlisted).
  void ReconcileRunning(const std::string& node_id, const v1::HeartbeatRequest& request);
  // Fails the node's active attempts as node_lost (counting them, judging
  // readiness jobs); returns how many.
  size_t FailLostNode(const std::string& node_id, int64_t now);
  // Active attempts, at most kActiveCacheMs old: heartbeats (thousands a
  // second) reconcile against it instead of querying the store each time.
  Result<std::shared_ptr<const RunningIndex>> RecentRunningAttempts();
  // Heartbeats reach the store at least this often (so other coordinators
  // on the same database can judge this one's nodes).
  int64_t PersistPeriodMs() const;
  jobs::LivenessParams LivenessParamsOf() const { return {options_.heartbeat_interval_ms, options_.heartbeat_margin}; }

  static constexpr int64_t kReliabilityWindowMs = 24 * 3600 * 1000;
  static constexpr int64_t kReliabilityRefreshMs = 10000;
  static constexpr int64_t kActiveCacheMs = 250;
  static constexpr int64_t kHeartbeatPersistMs = 5000;

  // Constant after construction.
  store::Store* const store_;
  Clock* const clock_;
  const Options options_;
  const std::string join_secret_hash_;
  Tenancy* const tenancy_;
  AgentSessions* const sessions_;  // thread-safe; taken after mu_
  EventCounters* const counters_;  // a leaf
  const Hooks hooks_;
  AgentTokenCache agent_tokens_;     // a leaf
  RunningIndexCache running_index_;  // a leaf

  Mutex mu_;
  std::map<std::string, NodeLive> nodes_ IG_GUARDED_BY(mu_);
  // Replaced whole by SetDataPolicy; readers copy the pointer under mu_.
  std::shared_ptr<const sched::DataPolicy> data_policy_ IG_GUARDED_BY(mu_);
  int64_t heartbeats_persisted_ms_ IG_GUARDED_BY(mu_) = 0;

  // Sweep's own (the loop thread's): no lock.
  int64_t started_ms_ = 0;
  int64_t reliability_refreshed_ms_ = 0;
  int64_t unconnected_checked_ms_ = 0;
  int64_t heartbeats_checked_ms_ = 0;  // the last liveness check
};

}  // namespace idlegrid::coordinator
