#pragma once
// How an attempt's outcome (an agent's report, or its node's loss) is written
// back, as a plan of plain writes. Every store backend reads an AttemptRow in
// a transaction, asks for the plan, and executes it in that same transaction
// with its own SQL; the rules (implied starts, legal transitions, when a task
// re-enters the queue, retry backoff, node exclusion) live only here.
// Pure: no SQL, no clock reads.
#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "jobs/attempt_events.h"
#include "jobs/task_write.h"

namespace idlegrid::jobs {

// What the store read about one attempt and its task.
struct AttemptRow {
  AttemptContext ctx;       // attempt and task states, retry budget
  std::string node_id;      // the node holding the attempt
  int64_t accepted_ms = 0;  // 0 until the node acknowledged the attempt
};

// The new values of an attempt's row; an absent optional leaves its column.
struct AttemptWrite {
  v1::TaskState state = v1::ASSIGNED;
  v1::FailureReason reason = v1::FAILURE_REASON_UNSPECIFIED;
  std::string message;
  std::optional<int64_t> started_ms;
  // Only the first end is recorded: a later confirmation of a stop keeps the
  // time the attempt was cancelled.
  std::optional<int64_t> finished_ms;
  // Only an exit report carries an exit code and outputs (outputs() is the
  // only field set; the store keeps it serialized).
  std::optional<int32_t> exit_code;
  std::optional<v1::Attempt> outputs;
  std::optional<std::string> runtime;
  // Recorded with the attempt's start (a STARTED report, or the report that
  // implies the start when STARTED was lost), from that report, once.
  std::optional<v1::Provenance> provenance;
  // Its part in the task's verification (v1::Attempt.vote): "pending" for a
  // verified job's result until the verdict.
  std::optional<std::string> vote;
};

struct OutcomePlan {
  AttemptOutcome outcome;  // what the caller is told (store::EventResult)
  // The first ACCEPTED or STARTED: stops the attempt's ack timeout.
  std::optional<int64_t> accepted_ms;
  std::optional<AttemptWrite> attempt;
  std::optional<TaskWrite> task;
  std::optional<int64_t> task_not_before_ms;  // the task is not offered before then
  std::optional<std::string> exclude_node;    // appended to the task's excluded nodes
  // Store the report's checkpoint for the task (the store checks its files).
  bool record_checkpoint = false;
};

// An agent's report about the attempt in `row`. An error (FailedPrecondition
// for a report that does not fit the attempt's state, InvalidArgument for an
// unknown event) means the report is refused and nothing may be written.
Result<OutcomePlan> PlanReport(const AttemptRow& row, const v1::ReportAttemptRequest& report, int64_t now_ms);

// The attempt's node was lost (or its lease expired) while the attempt was active.
Result<OutcomePlan> PlanNodeLost(const AttemptRow& row, int64_t now_ms);

}  // namespace idlegrid::jobs
