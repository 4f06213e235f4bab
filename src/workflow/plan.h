#pragma once
// Workflows' pure core (docs/workflows.md): given a workflow as stored (its
// spec, its state, its steps' rows) and the jobs its steps ran, decides what
// happens next: which steps are ready and with which resolved job spec and
// cache key, which are skipped or cancelled, which running jobs to cancel,
// and the workflow's state. No I/O: coordinator/workflow_service.h reads the
// store, asks PlanAdvance, and carries the plan out.
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::workflow {

// Step states (v1::WorkflowStep.state).
inline constexpr char kWaiting[] = "waiting";
inline constexpr char kRunning[] = "running";
inline constexpr char kSucceeded[] = "succeeded";
inline constexpr char kFailed[] = "failed";
inline constexpr char kSkipped[] = "skipped";
inline constexpr char kCancelled[] = "cancelled";
// A workflow is kRunning, kSucceeded, kFailed or kCancelled.

// Whether a step (or workflow) state is final.
bool IsDone(const std::string& state);

// The step's upstream inputs wired from its upstream steps' jobs (by step
// name): each names the output file's artifact by digest (no copy). From a
// one-task upstream the file lands at the input's path; from an array
// upstream (fan-in), task i's file lands at path/<i>. FailedPrecondition
// naming the step and file when an upstream has no such output, or is missing.
Result<std::vector<v1::InputSpec>> WireInputs(const v1::WorkflowStepSpec& step,
                                              const std::map<std::string, const v1::Job*>& upstream);

// What the step's job runs: its job spec with the wired inputs appended.
v1::JobSpec ResolvedSpec(const v1::WorkflowStepSpec& step, const std::vector<v1::InputSpec>& wired);

// "sha256:<hex>" over what decides a step's result: the image (by digest,
// not its label), command, args, env, resources, runtime, job class, output
// directory, array count and items, and every input by path and digest
// (inputs' order does not matter). Names, timeouts, retries, placement and
// prices do not change a result and are left out.
std::string CacheKey(const v1::JobSpec& resolved);

struct StepToSubmit {
  std::string name;
  std::string job_id;  // the id the step already claimed ("" : none yet)
  v1::JobSpec spec;    // resolved, ready for SubmitJob
  std::string cache_key;
};

struct Plan {
  std::vector<v1::WorkflowStep> steps;   // every step's row after the plan, in spec order
  std::vector<StepToSubmit> submit;      // steps ready to run (or to take from the cache)
  std::vector<std::string> cancel_jobs;  // running steps' jobs to cancel
  std::string state;                     // the workflow's state after the plan
};

// The next move of `workflow` (spec, state, steps as stored; a step without
// a row counts as waiting), given the jobs of its steps by job id (a step
// whose job is absent has not been created yet, or is gone).
// - A step with a job takes the job's state: succeeded, failed, cancelled,
//   else running.
// - A waiting step with a failed, skipped or cancelled dependency is skipped.
// - onFailure "stop": once a step failed, waiting steps are skipped and
//   running ones' jobs cancelled; "continue": independent branches go on.
// - A waiting step whose dependencies all succeeded is to be submitted with
//   its inputs wired (or failed, naming the missing output).
// - A cancelled workflow stays cancelled: its running jobs are cancelled
//   and waiting steps become cancelled.
// The workflow is done when every step is: succeeded if all succeeded,
// else failed (or cancelled).
Plan PlanAdvance(const v1::Workflow& workflow, const std::map<std::string, v1::Job>& jobs);

}  // namespace idlegrid::workflow
