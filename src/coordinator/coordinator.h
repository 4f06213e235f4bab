#pragma once
// The coordinator: a facade that builds its services, wires their hooks and
// runs the loop thread. Both API shells reach the services through it, so a
// job submitted with curl and one submitted with the CLI take the same path.
//
// The services, each with its own header, lock and tests:
//   NodeTable (node_table.h)             nodes: registration, sessions,
//                                        heartbeats, liveness, advertisements,
//                                        drain, reliability, the data policy,
//                                        the capacity each node has left.
//   Dispatcher (dispatcher.h)            the queue to plans to assignments;
//                                        explain, market, clearing prices.
//   AssignmentSender (assignment_sender.h)  a committed attempt to its command.
//   JobRequests (job_requests.h)         submit, read, list, cancel, retry, logs.
//   AttemptReports (attempt_reports.h)   what agents report of attempts and logs.
//   WorkflowService (workflow_service.h) workflows: submit, advance, cancel.
//   VerificationService (verification_service.h)  verdicts, backtracking,
//                                        known-answer checks.
//   ReadinessBenchmarks (readiness_benchmarks.h)  the benchmark images, the
//                                        jobs nodes and GPUs need, their verdicts.
//   ImageCatalog (image_catalog.h)       images, their blobs and signatures.
//   Tenancy (tenancy.h), ArtifactRights (artifact_rights.h), ReceiptDesk
//   (receipt_desk.h), LedgerShell/LedgerRequests/LedgerSettler (ledger_*.h),
//   FleetReports (fleet_reports.h), RetentionSweeper (retention_sweeper.h).
//   Small thread-safe pieces: AgentSessions (agent_session.h), EventCounters,
//   ChangeSignal, AccountTermsCache, StandingReader.
// Pure rules live outside: liveness verdicts in jobs/, placement in sched/,
// the capacity ledger in capacity/, prices in market/, the ledger in ledger/.
//
// Lock order (a thread holding one may take only those after it):
//   WorkflowService::mu_  ->  NodeTable::mu_  ->  AgentSessions  ->  AgentSession
//   VerificationService's verdict lock  ->  NodeTable::mu_ (its provider_of hook)
// Every other service's lock is a leaf, taken with nothing else held by it. No
// lock is held across a store write except where a method says so (the
// readiness hook records a measurement under NodeTable::mu_). StandingReader's
// lock is a leaf too, held across store reads of jobs but never with another lock.
#include <memory>
#include <string>
#include <thread>

#include "artifacts/artifact_store.h"
#include "common/clock.h"
#include "common/status.h"
#include "coordinator/agent_session.h"
#include "coordinator/artifact_rights.h"
#include "coordinator/change_signal.h"
#include "coordinator/attempt_reports.h"
#include "coordinator/account_terms.h"
#include "coordinator/assignment_sender.h"
#include "coordinator/dispatcher.h"
#include "coordinator/node_table.h"
#include "coordinator/options.h"
#include "coordinator/event_counters.h"
#include "coordinator/fleet_reports.h"
#include "coordinator/job_requests.h"
#include "coordinator/ledger_requests.h"
#include "coordinator/ledger_settler.h"
#include "coordinator/readiness_benchmarks.h"
#include "coordinator/ledger_shell.h"
#include "coordinator/image_catalog.h"
#include "coordinator/receipt_desk.h"
#include "coordinator/retention_sweeper.h"
#include "coordinator/standing_reader.h"
#include "coordinator/tenancy.h"
#include "coordinator/verification_service.h"
#include "coordinator/webhook_desk.h"
#include "coordinator/workflow_service.h"
#include "auth/rate_limit.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "registry/allow_list.h"
#include "registry/registry_client.h"
#include "verify/spec.h"
#include "sched/data_policy.h"
#include "sched/policy.h"
#include "sched/scheduler.h"
#include "store/store.h"

namespace idlegrid::coordinator {

class Coordinator {
 public:
  Coordinator(std::unique_ptr<store::Store> store, std::unique_ptr<artifacts::ArtifactStore> artifacts,
              std::unique_ptr<sched::Scheduler> scheduler, std::string join_secret, Options options,
              Clock* clock = SystemClock::Get(), std::unique_ptr<registry::RegistryClient> registry = nullptr);
  ~Coordinator();

  // Loads the node table and starts the loop thread. Call once.
  void Start();
  void Stop();
  // Runs one pass of the loop thread's work on the caller's thread: the node
  // table's sweep (liveness, lease expiry, acknowledgement timeouts,
  // heartbeat persistence, reliability, drain deadlines), readiness
  // benchmarks, retention, the ledger and verification sweeps, one dispatch,
  // workflows, then a load sample when due. For tests and tools driving a
  // coordinator that was not Start()ed, with a manual clock; never
  // concurrently with the loop thread or another Tick.
  void Tick();

  Clock* clock() { return clock_; }
  store::Store* store() { return store_.get(); }
  artifacts::ArtifactStore* artifact_store() { return artifacts_.get(); }

  // --- requesters and operators ---
  Tenancy& tenancy() { return tenancy_; }  // accounts, tokens, join tokens, quotas
  // Shared by both front doors: a token's budget is one, whichever door.
  auth::RequestRateLimits& rate_limits() { return rate_limits_; }
  JobRequests& jobs() { return *jobs_; }
  WorkflowService& workflows() { return *workflows_; }
  WebhookDesk& webhooks() { return *webhooks_; }  // callbacks (docs/webhooks.md)
  ImageCatalog& images() { return images_; }
  Dispatcher& dispatcher() { return *dispatcher_; }  // explain, market
  FleetReports& reports() { return *reports_; }      // metrics, load history, earnings
  ChangeSignal& changes() { return changes_; }       // what status and log streams wait on
  // The ledger shell, or null when the coordinator runs without --ledger.
  LedgerShell* ledger() { return ledger_.get(); }
  LedgerRequests& ledger_requests() { return ledger_requests_; }
  ReadinessBenchmarks& benchmarks() { return *readiness_; }
  // Bytes an artifact transfer moved (`received`: into the coordinator).
  void CountArtifactBytes(bool received, uint64_t bytes) { counters_.ArtifactBytes(received, bytes); }

  // --- agents ---
  NodeTable& nodes() { return *nodes_; }  // register, sessions, heartbeats, listing, drain
  AttemptReports& attempts() { return *attempts_; }
  ReceiptDesk& receipts() { return receipts_; }
  ArtifactRights& artifact_rights() { return artifact_rights_; }

 private:
  // The constructor's two halves (coordinator.cc): services and their hooks.
  void WireNodeSide(const std::string& join_secret);
  void WireRequesterSide(std::unique_ptr<sched::Scheduler> scheduler);
  void Loop();

  // Constant after construction.
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<artifacts::ArtifactStore> artifacts_;
  const Options options_;
  Clock* const clock_;
  const std::unique_ptr<registry::RegistryClient> registry_;  // null: registry images are refused

  // Thread-safe pieces with locks of their own (see the lock order above).
  AgentSessions sessions_;
  EventCounters counters_;
  ChangeSignal changes_;
  Tenancy tenancy_;
  auth::RequestRateLimits rate_limits_;
  ImageCatalog images_;  // no lock of its own; its pieces' are leaves
  ArtifactRights artifact_rights_;
  AssignmentSender sender_;
  std::unique_ptr<LedgerShell> ledger_;  // null unless options_.ledger.enabled; its own lock (a leaf)
  LedgerRequests ledger_requests_;
  LedgerSettler settler_;  // the loop thread sweeps; the hooks settle
  ReceiptDesk receipts_;
  AccountTermsCache account_terms_;                    // its own lock (a leaf)
  StandingReader standing_;                            // its own lock (a leaf)
  RetentionSweeper retention_;                         // the loop thread's
  std::unique_ptr<VerificationService> verification_;  // its own locks (leaves)
  std::unique_ptr<AttemptReports> attempts_;           // no lock of its own
  std::unique_ptr<NodeTable> nodes_;                   // its own lock
  std::unique_ptr<ReadinessBenchmarks> readiness_;     // its own lock (a leaf)
  std::unique_ptr<JobRequests> jobs_;                  // no lock of its own
  std::unique_ptr<WorkflowService> workflows_;         // its own lock, taken before NodeTable's
  std::unique_ptr<Dispatcher> dispatcher_;             // its own lock (a leaf)
  std::unique_ptr<FleetReports> reports_;              // its own lock (a leaf)
  webhook::HttpPoster poster_;
  std::unique_ptr<WebhookDesk> webhooks_;  // its own thread; its lock guards only its stop flag
  std::thread loop_;
};

}  // namespace idlegrid::coordinator
