#include "jobs/attempt_events.h"

#include <algorithm>
#include <iterator>

#include "jobs/task_state.h"

namespace idlegrid::jobs {

namespace {

AttemptOutcome Failure(const AttemptContext& ctx, v1::FailureReason reason, std::string message) {
  AttemptOutcome out;
  out.attempt_state = v1::FAILED;
  out.reason = reason;
  out.message = std::move(message);
  // A policy rejection or a missing acknowledgement is not the job's fault and
  // used no run time: it never consumes a retry, it only rules out that node.
  if (IsNoFault(reason)) {
    out.task_state = v1::QUEUED;
    out.retried = true;
    // A busy node is busy now, not unfit: it may take the task once the
    // work it is tearing down is gone, after a pause that keeps the two
    // sides from trading the same task back and forth. A node that handed
    // work back (its owner drained or stopped it) is not unfit either: while
    // draining or gone it gets no work anyway, and back in service it may
    // take the task again, which a verified task, needing distinct
    // providers, may have no other node for.
    out.exclude_node = reason != v1::NODE_BUSY && reason != v1::HANDED_BACK;
    if (reason == v1::NODE_BUSY) out.retry_after_ms = kBusyRetryMs;
    out.task_message = out.message;
    return out;
  }
  out.retried = ShouldRetry(reason, ctx.attempts_used, ctx.retries, ctx.idempotent);
  out.task_state = out.retried ? v1::QUEUED : v1::FAILED;
  // A non-idempotent task may have had effects: running it again is the user's call.
  if (reason == v1::NODE_LOST && !ctx.idempotent) out.task_state = v1::LOST;
  out.exclude_node = reason == v1::PLATFORM_FAILURE || reason == v1::NODE_LOST;
  if (out.retried) {
    // A crashing job must not spin through the fleet.
    int shift = static_cast<int>(std::min<uint32_t>(ctx.attempts_used > 0 ? ctx.attempts_used - 1 : 0, 6));
    out.retry_after_ms = std::min<int64_t>(int64_t{1000} << shift, 60000);
  }
  const bool ended_badly = out.task_state == v1::FAILED || out.task_state == v1::LOST;
  if (ended_badly) out.task_reason = reason;
  out.task_message = out.message;
  if (out.task_state == v1::LOST) {
    out.task_message +=
        "; the job is not idempotent: `idlegrid retry JOB` runs it again, `idlegrid abandon JOB` fails it";
  }
  return out;
}

// A cancelled task's attempt holds its node until the agent confirms the
// container is gone (or it exits anyway); only then is it cancelled too.
AttemptOutcome OnCancelledTask(const AttemptContext& ctx, const v1::ReportAttemptRequest& report) {
  AttemptOutcome out{v1::CANCELLED, ctx.attempt_state};
  switch (report.event()) {
    case v1::STOPPED:
    case v1::EXITED:
    case v1::ERRORED:
    case v1::REJECTED:
      out.attempt_state = v1::CANCELLED;
      out.reason = v1::USER_CANCEL;
      out.message = "cancelled by user; container stopped";
      return out;
    default:
      out.changed = false;  // the cancel command is on its way to the agent
      return out;
  }
}

// A report on an attempt that has already ended.
Result<AttemptOutcome> OnEndedAttempt(const AttemptContext& ctx, const v1::ReportAttemptRequest& report) {
  // A repeated confirmation of a stop that was already recorded.
  if (report.event() == v1::STOPPED && ctx.attempt_state == v1::CANCELLED) {
    AttemptOutcome same{ctx.task_state, ctx.attempt_state};
    same.changed = false;
    return same;
  }
  return Status::FailedPrecondition(std::string("attempt is already ") + StateName(ctx.attempt_state) +
                                    "; report ignored");
}

Result<AttemptOutcome> OnRejected(const AttemptContext& ctx, const v1::ReportAttemptRequest& report) {
  if (ctx.attempt_state != v1::ASSIGNED) {
    return Status::FailedPrecondition("REJECTED for an attempt that already started");
  }
  if (report.failure_reason() == v1::NODE_BUSY) {
    return Failure(ctx, v1::NODE_BUSY, "node busy: " + report.message());
  }
  return Failure(ctx, v1::POLICY_REJECTED, "rejected by node: " + report.message());
}

Result<AttemptOutcome> OnStarted(const AttemptContext& ctx) {
  AttemptOutcome out{ctx.task_state, ctx.attempt_state};
  if (ctx.attempt_state == v1::RUNNING) {
    out.changed = false;
    return out;
  }
  IG_RETURN_IF_ERROR(CheckAttemptTransition(ctx.attempt_state, v1::RUNNING));
  out.attempt_state = v1::RUNNING;
  out.task_state = v1::RUNNING;
  return out;
}

AttemptOutcome OnExited(const AttemptContext& ctx, const v1::ReportAttemptRequest& report) {
  // The agent does not retry STARTED, so an exit can be the first report we
  // see; refusing it would strand a task whose container already ran.
  const bool implied_start = ctx.attempt_state == v1::ASSIGNED;
  if (report.exit_code() == 0 && report.failure_reason() == v1::FAILURE_REASON_UNSPECIFIED) {
    AttemptOutcome out{ctx.task_state, ctx.attempt_state};
    out.attempt_state = v1::SUCCEEDED;
    out.task_state = v1::SUCCEEDED;
    out.implied_start = implied_start;
    if (ctx.verified) {
      // Not accepted on one node's word: no retry is used, the verdict decides.
      out.task_state = v1::QUEUED;
      out.hold_for_verdict = true;
      out.task_message = "verifying: this result awaits the verdict";
    }
    return out;
  }
  AttemptOutcome failed = Failure(
      ctx, report.failure_reason() == v1::FAILURE_REASON_UNSPECIFIED ? v1::NONZERO_EXIT : report.failure_reason(),
      report.message().empty() ? "exited with code " + std::to_string(report.exit_code()) : report.message());
  failed.implied_start = implied_start;
  return failed;
}

AttemptOutcome OnCheckpointed(const AttemptContext& ctx) {
  // Saved state changes no state; the store records it for the attempt.
  // Only a container that ran can checkpoint: from ASSIGNED (its STARTED
  // report was lost) the attempt passes to RUNNING.
  AttemptOutcome out{ctx.task_state, ctx.attempt_state};
  out.record_checkpoint = true;
  if (ctx.attempt_state == v1::ASSIGNED) {
    out.attempt_state = v1::RUNNING;
    out.task_state = v1::RUNNING;
    return out;
  }
  out.changed = false;
  return out;
}

}  // namespace

Result<AttemptOutcome> ApplyAttemptEvent(const AttemptContext& ctx, const v1::ReportAttemptRequest& report) {
  if (ctx.task_state == v1::CANCELLED && !IsTerminal(ctx.attempt_state)) return OnCancelledTask(ctx, report);
  if (IsTerminal(ctx.attempt_state)) return OnEndedAttempt(ctx, report);
  switch (report.event()) {
    case v1::ACCEPTED: {
      if (ctx.attempt_state != v1::ASSIGNED) {
        return Status::FailedPrecondition("ACCEPTED for an attempt that is not assigned");
      }
      AttemptOutcome out{ctx.task_state, ctx.attempt_state};
      out.changed = false;
      return out;
    }
    case v1::REJECTED:
      return OnRejected(ctx, report);
    case v1::STARTED:
      return OnStarted(ctx);
    case v1::EXITED:
      return OnExited(ctx, report);
    case v1::ERRORED:
      return Failure(
          ctx,
          report.failure_reason() == v1::FAILURE_REASON_UNSPECIFIED ? v1::PLATFORM_FAILURE : report.failure_reason(),
          report.message());
    case v1::STOPPED:
      // The node stopped it on its own account (drain deadline, shutdown):
      // handed back to the queue without using a retry.
      return Failure(ctx, v1::HANDED_BACK,
                     "handed back by the node" + (report.message().empty() ? "" : ": " + report.message()));
    case v1::CHECKPOINTED:
      return OnCheckpointed(ctx);
    default:
      return Status::InvalidArgument("unknown attempt event");
  }
}

bool IsNoFault(v1::FailureReason reason) {
  return std::find(std::begin(kNoFaultReasons), std::end(kNoFaultReasons), reason) != std::end(kNoFaultReasons);
}

AttemptFault FaultOf(v1::TaskState attempt_state, v1::FailureReason reason) {
  if (attempt_state == v1::SUCCEEDED) return AttemptFault::kSucceeded;
  switch (reason) {
    case v1::NODE_LOST:
      return AttemptFault::kNodeLost;
    case v1::PLATFORM_FAILURE:
    case v1::ACK_TIMEOUT:
      return AttemptFault::kNode;
    case v1::NONZERO_EXIT:
    case v1::OUT_OF_MEMORY:
    case v1::RUN_TIMEOUT:
    case v1::DISK_LIMIT:  // what the job wrote: a limit it asked for (or the node's default), like memory
      return AttemptFault::kJob;
    default:
      return AttemptFault::kUncounted;
  }
}

AttemptOutcome NodeLostOutcome(const AttemptContext& ctx) {
  if (ctx.task_state == v1::CANCELLED) {
    AttemptOutcome out{v1::CANCELLED, v1::CANCELLED};
    out.reason = v1::USER_CANCEL;
    out.message = "cancelled by user; node lost before it confirmed the stop";
    return out;
  }
  return Failure(ctx, v1::NODE_LOST, "node stopped sending heartbeats");
}

}  // namespace idlegrid::jobs
