#include "jobs/outcome_plan.h"

#include <utility>

#include "jobs/task_state.h"

namespace idlegrid::jobs {

namespace {

// The writes that carry `outcome` out. `report` is empty for a lost node.
Result<OutcomePlan> PlanOutcome(const AttemptRow& row, AttemptOutcome outcome, const v1::ReportAttemptRequest& report,
                                int64_t now_ms) {
  OutcomePlan plan;
  plan.record_checkpoint = outcome.record_checkpoint;
  if (!outcome.changed) {
    plan.outcome = std::move(outcome);
    return plan;
  }
  const AttemptContext& ctx = row.ctx;
  v1::TaskState attempt_from = ctx.attempt_state;
  v1::TaskState task_from = ctx.task_state;
  std::optional<TaskWrite> task;
  if (outcome.implied_start) {
    IG_RETURN_IF_ERROR(CheckAttemptTransition(attempt_from, v1::RUNNING));
    IG_ASSIGN_OR_RETURN(task, PlanTaskMove(task_from, {v1::RUNNING, v1::FAILURE_REASON_UNSPECIFIED, ""}, now_ms));
    attempt_from = v1::RUNNING;
    task_from = v1::RUNNING;
  }
  if (outcome.attempt_state != attempt_from) {
    IG_RETURN_IF_ERROR(CheckAttemptTransition(attempt_from, outcome.attempt_state));
  }
  // The move to the final state rewrites every column the implied start set.
  IG_ASSIGN_OR_RETURN(std::optional<TaskWrite> final_task,
                      PlanTaskMove(task_from, {outcome.task_state, outcome.task_reason, outcome.task_message}, now_ms));
  if (final_task) task = std::move(final_task);
  plan.task = std::move(task);

  AttemptWrite attempt;
  attempt.state = outcome.attempt_state;
  attempt.reason = outcome.reason;
  attempt.message = outcome.message;
  const bool starts = outcome.attempt_state == v1::RUNNING || outcome.implied_start;
  if (starts) attempt.started_ms = now_ms;
  // The sandbox and host are those of the start: a later report's copy (an
  // EXITED carries one in case STARTED was lost) does not rewrite it.
  if (starts && report.has_provenance()) attempt.provenance = report.provenance();
  if (IsTerminal(outcome.attempt_state) && !IsTerminal(ctx.attempt_state)) attempt.finished_ms = now_ms;
  if (report.event() == v1::EXITED) {
    attempt.exit_code = report.exit_code();
    attempt.outputs.emplace();
    *attempt.outputs->mutable_outputs() = report.outputs();
  }
  if (!report.runtime().empty()) attempt.runtime = report.runtime();
  plan.attempt = std::move(attempt);

  if (outcome.hold_for_verdict) {
    plan.attempt->vote = "pending";
    plan.task_not_before_ms = kVerdictHoldMs;
  }
  if (outcome.retry_after_ms > 0) plan.task_not_before_ms = now_ms + outcome.retry_after_ms;
  if (outcome.exclude_node) plan.exclude_node = row.node_id;
  plan.outcome = std::move(outcome);
  return plan;
}

}  // namespace

Result<OutcomePlan> PlanReport(const AttemptRow& row, const v1::ReportAttemptRequest& report, int64_t now_ms) {
  IG_ASSIGN_OR_RETURN(AttemptOutcome outcome, ApplyAttemptEvent(row.ctx, report));
  IG_ASSIGN_OR_RETURN(OutcomePlan plan, PlanOutcome(row, std::move(outcome), report, now_ms));
  // A STARTED implies an acknowledgement that was lost.
  const bool acknowledges = report.event() == v1::ACCEPTED || report.event() == v1::STARTED;
  if (acknowledges && row.accepted_ms == 0) plan.accepted_ms = now_ms;
  return plan;
}

Result<OutcomePlan> PlanNodeLost(const AttemptRow& row, int64_t now_ms) {
  return PlanOutcome(row, NodeLostOutcome(row.ctx), v1::ReportAttemptRequest(), now_ms);
}

}  // namespace idlegrid::jobs
