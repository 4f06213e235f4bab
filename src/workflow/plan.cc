#include "workflow/plan.h"

#include <algorithm>

#include "jobs/task_state.h"
#include "manifest/manifest.h"
#include "manifest/workflow.h"

namespace idlegrid::workflow {
namespace {

// The outputs of a task's accepted run (the last one, if replicas agreed).
const v1::Attempt* ResultOf(const v1::Task& task) {
  for (int i = task.attempts_size() - 1; i >= 0; --i) {
    if (jobs::IsAcceptedResult(task.attempts(i))) return &task.attempts(i);
  }
  return nullptr;
}

const v1::OutputFile* FindOutput(const v1::Attempt& attempt, const std::string& path) {
  for (const v1::OutputFile& f : attempt.outputs()) {
    if (f.path() == path) return &f;
  }
  return nullptr;
}

std::string StepStateOfJob(const v1::Job& job) {
  switch (job.state()) {
    case v1::SUCCEEDED:
      return kSucceeded;
    case v1::FAILED:
      return kFailed;
    case v1::CANCELLED:
      return kCancelled;
    default:
      return kRunning;
  }
}

// One line on why a job failed: its first failed task's reason and message.
std::string FailureOf(const v1::Job& job) {
  for (const v1::Task& t : job.tasks()) {
    if (t.state() != v1::FAILED) continue;
    std::string line =
        "job " + job.id() + " task " + std::to_string(t.index()) + " " + jobs::ReasonName(t.failure_reason());
    if (!t.message().empty()) line += ": " + t.message();
    return line;
  }
  return "job " + job.id() + " " + jobs::StateName(job.state());
}

}  // namespace

bool IsDone(const std::string& state) {
  return state == kSucceeded || state == kFailed || state == kSkipped || state == kCancelled;
}

Result<std::vector<v1::InputSpec>> WireInputs(const v1::WorkflowStepSpec& step,
                                              const std::map<std::string, const v1::Job*>& upstream) {
  std::vector<v1::InputSpec> out;
  for (const v1::StepInput& from : step.from_steps()) {
    auto it = upstream.find(from.step());
    if (it == upstream.end() || it->second == nullptr) {
      return Status::FailedPrecondition("step " + from.step() + " has no job to take " + from.output() + " from");
    }
    const v1::Job& job = *it->second;
    const bool fan_in = job.spec().array_count() > 1;
    for (const v1::Task& task : job.tasks()) {
      const v1::Attempt* result = ResultOf(task);
      const v1::OutputFile* file = result ? FindOutput(*result, from.output()) : nullptr;
      if (file == nullptr) {
        return Status::FailedPrecondition("step " + from.step() + " (job " + job.id() + ", task " +
                                          std::to_string(task.index()) + ") has no output " + from.output());
      }
      v1::InputSpec in;
      in.set_artifact(file->digest());
      in.set_path(fan_in ? from.path() + "/" + std::to_string(task.index()) : from.path());
      out.push_back(std::move(in));
    }
  }
  return out;
}

v1::JobSpec ResolvedSpec(const v1::WorkflowStepSpec& step, const std::vector<v1::InputSpec>& wired) {
  v1::JobSpec spec = step.job();
  for (const v1::InputSpec& in : wired) *spec.add_inputs() = in;
  return spec;
}

std::string CacheKey(const v1::JobSpec& s) {
  v1::JobSpec key;
  key.set_api_version("workflow-step-cache/v1");
  key.set_image(manifest::ImageDigestOf(s.image()));
  *key.mutable_command() = s.command();
  *key.mutable_args() = s.args();
  *key.mutable_env() = s.env();
  *key.mutable_resources() = s.resources();
  std::vector<v1::InputSpec> inputs(s.inputs().begin(), s.inputs().end());
  std::sort(inputs.begin(), inputs.end(), [](const v1::InputSpec& a, const v1::InputSpec& b) {
    return a.path() != b.path() ? a.path() < b.path() : a.artifact() < b.artifact();
  });
  for (v1::InputSpec& in : inputs) *key.add_inputs() = std::move(in);
  key.set_output_path(s.output_path());
  key.set_array_count(s.array_count());
  *key.mutable_items() = s.items();
  key.set_runtime(s.runtime());
  key.set_job_class(s.job_class());
  key.set_checkpoint_path(s.checkpoint_path());
  return manifest::SpecDigest(key);
}

namespace {

using JobsById = std::map<std::string, v1::Job>;
using StepRows = std::map<std::string, v1::WorkflowStep>;

const v1::Job* JobOf(const JobsById& jobs, const v1::WorkflowStep& row) {
  if (row.job_id().empty()) return nullptr;
  auto it = jobs.find(row.job_id());
  return it == jobs.end() ? nullptr : &it->second;
}

// 1. The workflow's step rows, every step of the spec among them; steps with
// a job take its state.
StepRows RowsWithJobStates(const v1::Workflow& workflow, const JobsById& jobs) {
  StepRows rows;
  for (const v1::WorkflowStep& row : workflow.steps()) rows[row.name()] = row;
  for (const v1::WorkflowStepSpec& s : workflow.spec().steps()) {
    v1::WorkflowStep& row = rows[s.name()];
    row.set_name(s.name());
    if (row.state().empty()) row.set_state(kWaiting);
    const v1::Job* job = JobOf(jobs, row);
    if (row.state() == kRunning || (row.state() == kWaiting && job != nullptr)) {
      if (job == nullptr) {
        row.set_state(kFailed);
        row.set_message("its job " + row.job_id() + " no longer exists");
        continue;
      }
      row.set_state(StepStateOfJob(*job));
      if (row.state() == kFailed) row.set_message(FailureOf(*job));
      if (row.state() == kCancelled) row.set_message("its job was cancelled");
    }
  }
  return rows;
}

// A waiting step cancelled with its workflow, or skipped for an upstream step
// that did not succeed or (onFailure: stop) for `failed_step`. Whether it
// changed.
bool SkipIfBlocked(const v1::WorkflowStepSpec& s, StepRows& rows, bool cancelled, bool stop,
                   const std::string& failed_step) {
  v1::WorkflowStep& row = rows[s.name()];
  if (row.state() != kWaiting) return false;
  if (cancelled) {
    row.set_state(kCancelled);
    row.set_message("the workflow was cancelled");
    return true;
  }
  bool changed = false;
  for (const std::string& dep : manifest::DependenciesOf(s)) {
    const std::string& state = rows[dep].state();
    if (state == kFailed || state == kSkipped || state == kCancelled) {
      row.set_state(kSkipped);
      row.set_message("upstream step " + dep + " " + state);
      changed = true;
      break;
    }
  }
  if (row.state() == kWaiting && stop && !failed_step.empty()) {
    row.set_state(kSkipped);
    row.set_message("stopped: step " + failed_step + " failed (onFailure: stop)");
    changed = true;
  }
  return changed;
}

// 2. Skips, and readiness, until nothing changes (a skip may skip its dependants).
void SettleSkips(const v1::WorkflowSpec& spec, StepRows& rows, bool cancelled, bool stop) {
  for (bool changed = true; changed;) {
    changed = false;
    std::string failed_step;
    for (const auto& [name, row] : rows) {
      if (row.state() == kFailed && failed_step.empty()) failed_step = name;
    }
    for (const v1::WorkflowStepSpec& s : spec.steps()) {
      if (SkipIfBlocked(s, rows, cancelled, stop, failed_step)) changed = true;
    }
  }
}

// 3. Ready steps: every dependency succeeded.
void SubmitReadySteps(const v1::WorkflowSpec& spec, const JobsById& jobs, StepRows& rows, Plan& plan) {
  for (const v1::WorkflowStepSpec& s : spec.steps()) {
    v1::WorkflowStep& row = rows[s.name()];
    if (row.state() != kWaiting) continue;
    std::map<std::string, const v1::Job*> upstream;
    bool ready = true;
    for (const std::string& dep : manifest::DependenciesOf(s)) {
      ready = ready && rows[dep].state() == kSucceeded;
      upstream[dep] = JobOf(jobs, rows[dep]);
    }
    if (!ready) continue;
    Result<std::vector<v1::InputSpec>> wired = WireInputs(s, upstream);
    if (!wired.ok()) {
      // Dependants are skipped on the next pass, which reads this failure.
      row.set_state(kFailed);
      row.set_message(wired.status().message());
      continue;
    }
    StepToSubmit next{s.name(), row.job_id(), ResolvedSpec(s, *wired), ""};
    next.cache_key = CacheKey(next.spec);
    plan.submit.push_back(std::move(next));
  }
}

// 4. Running jobs to stop, and the workflow's state.
void FinishPlan(const v1::WorkflowSpec& spec, StepRows& rows, bool cancelled, bool stop, Plan& plan) {
  bool any_failed = false, all_done = true, all_succeeded = true;
  for (const auto& [name, row] : rows) {
    any_failed = any_failed || row.state() == kFailed;
    all_done = all_done && IsDone(row.state());
    all_succeeded = all_succeeded && row.state() == kSucceeded;
  }
  for (const v1::WorkflowStepSpec& s : spec.steps()) {
    const v1::WorkflowStep& row = rows[s.name()];
    if (row.state() == kRunning && (cancelled || (stop && any_failed))) plan.cancel_jobs.push_back(row.job_id());
    plan.steps.push_back(row);
  }
  if (cancelled) {
    plan.state = kCancelled;
  } else if (stop && any_failed) {
    plan.submit.clear();
    plan.state = all_done ? kFailed : kRunning;
  } else {
    plan.state = !all_done ? kRunning : all_succeeded ? kSucceeded : kFailed;
  }
}

}  // namespace

Plan PlanAdvance(const v1::Workflow& workflow, const std::map<std::string, v1::Job>& jobs) {
  const v1::WorkflowSpec& spec = workflow.spec();
  StepRows rows = RowsWithJobStates(workflow, jobs);
  const bool cancelled = workflow.state() == kCancelled;
  const bool stop = spec.on_failure() != manifest::kOnFailureContinue;
  SettleSkips(spec, rows, cancelled, stop);
  Plan plan;
  SubmitReadySteps(spec, jobs, rows, plan);
  FinishPlan(spec, rows, cancelled, stop, plan);
  return plan;
}

}  // namespace idlegrid::workflow
