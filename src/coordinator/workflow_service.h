#pragma once
// Workflows (docs/workflows.md) as a service of their own: the shell around
// workflow/plan.h. It reads a workflow and its steps' jobs from the store,
// asks PlanAdvance what happens next, and carries the plan out: a ready step
// first looks for an earlier run with its cache key (reused, not run), else
// claims a job id on its row (a compare-and-set: a restarted or a second
// coordinator never submits the step twice) and submits the job through the
// job side's own checks under that id. Every pass can be repeated: a crash
// between claim and submit is finished by the next pass, which submits under
// the claimed id (an id already stored is AlreadyExists).
//
// Owns one lock (one advance at a time in this coordinator; coordinators
// sharing a database are kept apart by the store's claims), taken before any
// lock of the job side. Store, clock and the job side are injected.
#include <cstdint>
#include <string>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "coordinator/webhook_desk.h"
#include "store/store.h"
#include "workflow/plan.h"

namespace idlegrid::coordinator {

// What workflows need of the jobs side: the checks, the submit and the cancel
// a requester's own job gets.
class StepJobs {
 public:
  virtual ~StepJobs() = default;
  // Every check a submitted job of `account` gets (image, inputs, quota,
  // data class, policy), without storing anything.
  virtual Status CheckJob(const v1::JobSpec& spec, const std::string& account) = 0;
  // Checks and stores `spec` as job `job_id` of `account`; AlreadyExists when
  // that id is stored already.
  virtual Status SubmitJobAs(const v1::JobSpec& spec, const std::string& job_id, const std::string& account) = 0;
  virtual Status CancelStepJob(const std::string& job_id) = 0;
  // A registry image named by tag, pinned to the digest the tag names now;
  // `spec` unchanged when it is not one or cannot be resolved.
  virtual v1::JobSpec PinStepImage(v1::JobSpec spec) = 0;
};

class WorkflowService {
 public:
  // How often Sweep advances every unsettled workflow at most.
  static constexpr int64_t kSweepMs = 500;

  // `webhooks` records the workflow's callback (docs/webhooks.md); null:
  // a workflow naming one is refused.
  WorkflowService(store::Store* store, const Clock* clock, StepJobs* jobs, WebhookDesk* webhooks,
                  uint32_t default_retention_seconds)
      : store_(store),
        clock_(clock),
        jobs_(jobs),
        webhooks_(webhooks),
        default_retention_seconds_(default_retention_seconds) {}

  // Validates the workflow (manifest::ValidateWorkflowSpec) and each step's
  // job as a submit would, stores it for `account` and submits its first
  // steps (or reuses earlier runs with the same cache key). Nothing is stored
  // when a check fails; the error names the step.
  Result<v1::Workflow> Submit(const v1::SubmitWorkflowRequest& request, const std::string& account) IG_EXCLUDES(mu_);
  // NotFound for an unknown workflow.
  Result<v1::Workflow> Get(const std::string& workflow_id);
  // Workflows of `account` ("": all accounts'), newest first.
  Result<v1::ListWorkflowsResponse> List(const std::string& account);
  // Marks it cancelled: its running steps' jobs are cancelled and waiting
  // steps will not run. A workflow already done is returned unchanged.
  Result<v1::Workflow> Cancel(const std::string& workflow_id) IG_EXCLUDES(mu_);
  // Advances every unsettled workflow, at most every kSweepMs; errors are
  // logged and the next sweep tries again. The coordinator's loop thread only.
  void Sweep() IG_EXCLUDES(mu_);

 private:
  // Moves one workflow on until a pass changes nothing.
  Status Advance(const std::string& workflow_id) IG_EXCLUDES(mu_);
  // One pass; sets `again` when another pass may move it further.
  Status AdvanceOnce(const std::string& workflow_id, bool* again) IG_REQUIRES(mu_);
  // Claims (or reuses) and submits one ready step; sets `again` as above.
  Status StartStep(const v1::Workflow& wf, const workflow::StepToSubmit& next, bool* again) IG_REQUIRES(mu_);
  // Submits a ready step's job under the id it claimed; a refusal that will
  // not pass later fails the step.
  Status SubmitStep(const v1::Workflow& wf, const std::string& step, const std::string& job_id, const v1::JobSpec& spec)
      IG_REQUIRES(mu_);

  store::Store* const store_;
  const Clock* const clock_;
  StepJobs* const jobs_;
  WebhookDesk* const webhooks_;
  const uint32_t default_retention_seconds_;
  Mutex mu_;
  int64_t swept_ms_ = 0;  // Sweep's; the loop thread only
};

}  // namespace idlegrid::coordinator
