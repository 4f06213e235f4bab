#pragma once
// What requesters may ask of their jobs, as a service of its own: submit
// (every check a job gets: its spec, verification, quota, data class,
// policy, image, signatures and inputs; then the escrow and the store),
// read, list, cancel (whole or some tasks), retry, delete, resolve lost
// tasks and read logs. It is also the jobs side workflows submit through
// (StepJobs), so a step's job gets exactly the checks a requester's own job
// gets.
//
// No lock of its own: the store, the catalog, tenancy, verification and the
// ledger lock themselves. What it needs of the node table and the loop
// (waiting reasons, stopping attempts, the change feed) comes as hooks.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "artifacts/artifact_store.h"
#include "common/clock.h"
#include "common/status.h"
#include "coordinator/image_catalog.h"
#include "coordinator/ledger_shell.h"
#include "coordinator/retention_sweeper.h"
#include "coordinator/tenancy.h"
#include "coordinator/verification_service.h"
#include "coordinator/workflow_service.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "sched/data_policy.h"
#include "sched/policy.h"
#include "store/store.h"

namespace idlegrid::coordinator {

class JobRequests : public StepJobs {
 public:
  struct Settings {
    uint32_t default_retention_seconds = 7 * 24 * 3600;  // jobs that name none
    sched::PolicyConfig policies;                        // the policies a job may name
  };
  // What it needs of the rest of the coordinator.
  struct Hooks {
    // The data policy now (jobs are stamped with its default class).
    std::function<std::shared_ptr<const sched::DataPolicy>()> data_policy;
    // Sets each queued task's message to why it waits, as the last dispatch
    // pass found.
    std::function<void(v1::Job*)> fill_waiting;
    // Tells each attempt's node to stop it.
    std::function<void(const std::vector<store::ActiveAttempt>&)> stop_attempts;
    // Charges and refunds what the job's latest change allows (ledger only).
    std::function<void(const std::string& job_id)> settle_ledger;
    // A callback URL this coordinator accepts, with its secret drawn when the
    // spec names none (WebhookDesk::Prepare); then recorded for the stored job.
    std::function<Status(v1::JobSpec* spec)> prepare_callback;
    std::function<Status(const std::string& job_id, const v1::JobSpec& spec)> register_callback;
    // Something changed: wake the loop and watchers.
    std::function<void()> changed;
    // The change counter now, and a wait until it moves (or `wait_ms` passes).
    std::function<uint64_t()> version;
    std::function<uint64_t(uint64_t known, int wait_ms)> wait_for_change;
  };

  // `ledger` may be null (no escrow).
  JobRequests(store::Store* store, artifacts::ArtifactStore* artifacts, ImageCatalog* images, Tenancy* tenancy,
              VerificationService* verification, LedgerShell* ledger, RetentionSweeper* retention, const Clock* clock,
              Settings settings, Hooks hooks);

  // Submits for `account`, within its quota. An image from an OCI registry
  // is resolved and stored pinned (ImageCatalog::PinRegistryImage); nothing
  // is stored when any check fails.
  Result<v1::Job> Submit(const v1::SubmitJobRequest& request, const std::string& account);
  // With its summary, each task's costs and each queued task's waiting
  // reason; with every task, or the page the request asks for
  // (jobs/task_page.h).
  Result<v1::Job> Get(const v1::GetJobRequest& request);
  Result<v1::Job> Get(const std::string& job_id);
  // Jobs of `account` ("": all accounts').
  Result<v1::ListJobsResponse> List(const std::string& account);
  Result<v1::Job> Cancel(const std::string& job_id);
  // With task indices and/or states, cancels only the matching tasks
  // (jobs::PlanCancelTasks) and stops their attempts; without, the whole job.
  // The escrow comes back as for a whole cancel: when the job has ended.
  Result<v1::Job> Cancel(const v1::CancelJobRequest& request);
  // Sends the job's failed (and/or named failed or cancelled) tasks back to
  // the queue (jobs::PlanRetryTasks); their attempts are kept. With the
  // ledger on, only while the job still holds escrow (LedgerShell::Requeue).
  Result<v1::Job> Retry(const v1::RetryJobRequest& request);
  // Removes a settled job with its logs, and the artifacts nothing else
  // holds. FailedPrecondition while any task can still run.
  Result<v1::DeleteJobResponse> Delete(const std::string& job_id);
  Result<v1::Job> ResolveLost(const v1::ResolveLostRequest& request);
  // Log chunks after `after_seq`; when none are ready and `wait_ms` > 0,
  // waits for new ones (or a job change) up to wait_ms.
  Result<std::vector<v1::LogChunk>> ReadLogs(const std::string& job_id, int64_t after_seq, int wait_ms);

  // StepJobs (workflow_service.h).
  Status CheckJob(const v1::JobSpec& spec, const std::string& account) override;
  Status SubmitJobAs(const v1::JobSpec& spec, const std::string& job_id, const std::string& account) override;
  Status CancelStepJob(const std::string& job_id) override;
  v1::JobSpec PinStepImage(v1::JobSpec spec) override;

 private:
  // Submit in two halves: every check (and the spec as it will be stored,
  // registry image pinned), then the escrow and the store under a chosen
  // id. A workflow checks all its steps' jobs first and stores each when its
  // step is ready. Store with an id already stored is AlreadyExists and
  // changes nothing.
  struct PreparedJob {
    v1::JobSpec spec;
    std::string image_archive;  // a pushed image's archive, held by the job; "" from a registry
  };
  Result<PreparedJob> Prepare(v1::JobSpec spec, const std::string& account);
  Result<v1::Job> Store(const PreparedJob& job, const std::string& job_id, const std::string& account);

  store::Store* const store_;
  artifacts::ArtifactStore* const artifacts_;
  ImageCatalog* const images_;
  Tenancy* const tenancy_;
  VerificationService* const verification_;
  LedgerShell* const ledger_;
  RetentionSweeper* const retention_;
  const Clock* const clock_;
  const Settings settings_;
  const Hooks hooks_;
};

}  // namespace idlegrid::coordinator
