#include "coordinator/workflow_service.h"

#include <spdlog/spdlog.h>

#include <map>
#include <optional>

#include "common/random.h"
#include "manifest/image_ref.h"
#include "manifest/workflow.h"

namespace idlegrid::coordinator {
namespace {

// Submissions that may work later (quota, a store or registry hiccup): the
// step keeps its claim and the next pass tries again. Anything else fails it.
bool Transient(const Status& st) {
  return st.code() == Code::kResourceExhausted || st.code() == Code::kUnavailable || st.code() == Code::kInternal;
}

bool UnresolvedRegistryTag(const std::string& image) {
  Result<manifest::ImageRef> ref = manifest::ParseImageRef(image);
  return ref.ok() && ref->from_registry() && ref->digest.empty();
}

}  // namespace

Result<v1::Workflow> WorkflowService::Submit(const v1::SubmitWorkflowRequest& request, const std::string& account) {
  v1::WorkflowSpec spec = request.spec();
  manifest::ApplyWorkflowDefaults(&spec);
  for (v1::WorkflowStepSpec& step : *spec.mutable_steps()) {
    v1::JobSpec* job = step.mutable_job();
    if (job->retention_seconds() == 0) job->set_retention_seconds(default_retention_seconds_);
  }
  IG_RETURN_IF_ERROR(manifest::ValidateWorkflowSpec(spec));
  // Each step's job gets every check a submitted job gets, now, so a
  // workflow that could never finish is refused before anything runs.
  for (const v1::WorkflowStepSpec& step : spec.steps()) {
    if (Status st = jobs_->CheckJob(step.job(), account); !st.ok()) return st.WithContext("step " + step.name());
  }
  if (!spec.callback_url().empty() && webhooks_ == nullptr) {
    return Status::FailedPrecondition("spec.callback_url: this coordinator sends no callbacks");
  }
  if (!spec.callback_url().empty()) {
    IG_RETURN_IF_ERROR(
        webhooks_->Prepare(spec.callback_url(), spec.mutable_callback_secret()).WithContext("spec.callback_url"));
  } else if (!spec.callback_secret().empty()) {
    return Status::InvalidArgument("spec.callback_secret: names no callback_url to sign for");
  }
  const std::string id = NewId("w");
  // Recorded before the workflow (see JobRequests::Store).
  if (!spec.callback_url().empty()) {
    IG_RETURN_IF_ERROR(webhooks_->Register("workflow", id, spec.callback_url(), spec.callback_secret()));
  }
  IG_RETURN_IF_ERROR(store_->CreateWorkflow(id, spec, account, clock_->NowMs()));
  spdlog::info("workflow {} submitted by {}: {} step(s) of {}", id, account, spec.steps_size(), spec.name());
  if (Status st = Advance(id); !st.ok()) spdlog::warn("workflow {}: {} (the loop tries again)", id, st.ToString());
  return Get(id);
}

Result<v1::Workflow> WorkflowService::Get(const std::string& workflow_id) { return store_->GetWorkflow(workflow_id); }

Result<v1::ListWorkflowsResponse> WorkflowService::List(const std::string& account) {
  IG_ASSIGN_OR_RETURN(auto all, store_->ListWorkflows(account));
  v1::ListWorkflowsResponse out;
  for (auto& wf : all) *out.add_workflows() = std::move(wf);
  return out;
}

Result<v1::Workflow> WorkflowService::Cancel(const std::string& workflow_id) {
  IG_ASSIGN_OR_RETURN(v1::Workflow wf, store_->GetWorkflow(workflow_id));
  store::WorkflowWrite cancel{workflow_id, workflow::kCancelled, false, {}};
  IG_ASSIGN_OR_RETURN(bool written, store_->UpdateWorkflow(cancel, clock_->NowMs()));
  if (written) {
    spdlog::info("workflow {} cancelled", workflow_id);
    IG_RETURN_IF_ERROR(Advance(workflow_id));
  }
  return Get(workflow_id);
}

Status WorkflowService::SubmitStep(const v1::Workflow& wf, const std::string& step, const std::string& job_id,
                                   const v1::JobSpec& spec) {
  Status st = jobs_->SubmitJobAs(spec, job_id, wf.account());
  if (st.ok() || st.code() == Code::kAlreadyExists) {
    spdlog::info("workflow {}: step {} runs as job {}", wf.id(), step, job_id);
    return Status::Ok();
  }
  if (Transient(st)) return st;
  v1::WorkflowStep failed;
  failed.set_name(step);
  failed.set_state(workflow::kFailed);
  failed.set_message("its job was refused: " + st.message());
  spdlog::warn("workflow {}: step {} refused: {}", wf.id(), step, st.ToString());
  return store_->UpdateWorkflow({wf.id(), wf.state(), false, {failed}}, clock_->NowMs()).status();
}

Status WorkflowService::Advance(const std::string& workflow_id) {
  MutexLock lock(&mu_);
  // Each pass that reuses a cached run or fails a step can make the next
  // step ready at once; a pass that only submits or changes nothing ends it.
  for (int pass = 0; pass < manifest::kMaxWorkflowSteps + 2; ++pass) {
    bool again = false;
    IG_RETURN_IF_ERROR(AdvanceOnce(workflow_id, &again));
    if (!again) return Status::Ok();
  }
  return Status::Ok();
}

Status WorkflowService::AdvanceOnce(const std::string& workflow_id, bool* again) {
  IG_ASSIGN_OR_RETURN(v1::Workflow wf, store_->GetWorkflow(workflow_id));
  std::map<std::string, v1::Job> jobs;
  for (const v1::WorkflowStep& row : wf.steps()) {
    if (row.job_id().empty() || jobs.contains(row.job_id())) continue;
    Result<v1::Job> job = store_->GetJob(row.job_id());
    if (job.ok()) {
      jobs.emplace(row.job_id(), std::move(job).value());
    } else if (job.status().code() != Code::kNotFound) {
      return job.status();
    }
  }
  const workflow::Plan plan = workflow::PlanAdvance(wf, jobs);
  bool settled = true;
  for (const v1::WorkflowStep& row : plan.steps) settled = settled && workflow::IsDone(row.state());
  IG_ASSIGN_OR_RETURN(bool written,
                      store_->UpdateWorkflow({workflow_id, plan.state, settled, plan.steps}, clock_->NowMs()));
  if (!written) return Status::Ok();  // done before this pass
  if (settled && plan.state != wf.state()) spdlog::info("workflow {} {}", workflow_id, plan.state);
  for (const std::string& job_id : plan.cancel_jobs) {
    if (Status st = jobs_->CancelStepJob(job_id); !st.ok()) {
      spdlog::warn("workflow {}: cancel of job {}: {}", workflow_id, job_id, st.ToString());
    }
  }
  for (const workflow::StepToSubmit& next : plan.submit) IG_RETURN_IF_ERROR(StartStep(wf, next, again));
  return Status::Ok();
}

Status WorkflowService::StartStep(const v1::Workflow& wf, const workflow::StepToSubmit& next, bool* again) {
  v1::WorkflowStep claim;
  claim.set_name(next.name);
  std::string job_id = next.job_id;
  const v1::JobSpec spec = jobs_->PinStepImage(next.spec);
  const std::string cache_key = spec.image() == next.spec.image() ? next.cache_key : workflow::CacheKey(spec);
  claim.set_cache_key(cache_key);
  if (job_id.empty()) {
    // A registry tag that could not be resolved has no digest to be keyed
    // by: never reused (its submit says why it cannot run).
    std::optional<std::string> earlier;
    if (!UnresolvedRegistryTag(spec.image())) {
      IG_ASSIGN_OR_RETURN(earlier, store_->CachedStepJob(wf.account(), cache_key));
    }
    Result<v1::Job> reused = earlier ? store_->GetJob(*earlier) : Result<v1::Job>(Status::NotFound(""));
    if (reused.ok() && reused->state() == v1::SUCCEEDED) {
      claim.set_job_id(*earlier);
      claim.set_cached(true);
      claim.set_state(workflow::kSucceeded);
      claim.set_message("reused job " + *earlier + " (same cache key)");
      IG_RETURN_IF_ERROR(store_->ClaimWorkflowStep(wf.id(), claim).status());
      spdlog::info("workflow {}: step {} reuses job {}", wf.id(), next.name, *earlier);
      *again = true;
      return Status::Ok();
    }
    claim.set_job_id(NewId("j"));
    claim.set_state(workflow::kWaiting);
    IG_ASSIGN_OR_RETURN(std::string held, store_->ClaimWorkflowStep(wf.id(), claim));
    if (held != claim.job_id()) return Status::Ok();  // another pass claimed it first; it submits
    job_id = held;
  }
  if (Status st = SubmitStep(wf, next.name, job_id, spec); !st.ok()) {
    spdlog::warn("workflow {}: step {}: {} (tried again later)", wf.id(), next.name, st.ToString());
    return Status::Ok();
  }
  *again = true;  // the next pass sees the job (or the step's failure)
  return Status::Ok();
}

void WorkflowService::Sweep() {
  const int64_t now = clock_->NowMs();
  if (now - swept_ms_ < kSweepMs) return;
  swept_ms_ = now;
  auto ids = store_->UnsettledWorkflows(1000);
  if (!ids.ok()) {
    spdlog::warn("workflows: {}", ids.status().ToString());
    return;
  }
  for (const std::string& id : *ids) {
    if (Status st = Advance(id); !st.ok()) spdlog::warn("workflow {}: {}", id, st.ToString());
  }
}

}  // namespace idlegrid::coordinator
