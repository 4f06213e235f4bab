#pragma once
// The one rule, in SQL, for how many attempts of a task count against its
// retries (jobs::ShouldRetry): its attempts that were no vote (a
// verification replica is not a retry) and did not end for a reason that is
// nobody's fault (jobs::kNoFaultReasons: a refusal, a hand back...), less
// those it had used when a user last retried it (tasks.retry_base, schema
// v17: a user's retry is a fresh budget). Both backends build their
// statements from it, so the count and the retry's snapshot of it agree.
#include <cstddef>
#include <string>

#include "jobs/attempt_events.h"

namespace idlegrid::store {

// The count before any user retry, for the task whose job id and index are
// the SQL expressions `job` and `idx`. `reasons` is the no-fault list: "?, ?,
// ..." for SQLite (bound first, in kNoFaultReasons order) or
// "<> ALL($1::integer[])" style for PostgreSQL (see the callers).
inline std::string CountedAttemptsSql(const std::string& job, const std::string& idx, const std::string& not_no_fault) {
  return "(SELECT COUNT(*) FROM attempts x WHERE x.job_id = " + job + " AND x.idx = " + idx +
         " AND x.vote = '' AND x.reason " + not_no_fault + ")";
}

// SQLite's `not_no_fault`: NOT IN (?, ?, ...), one placeholder per reason.
inline std::string SqliteNotNoFault() {
  std::string out = "NOT IN (";
  for (size_t i = 0; i < std::size(jobs::kNoFaultReasons); ++i) out += i == 0 ? "?" : ", ?";
  return out + ")";
}

// PostgreSQL's `not_no_fault`, the reasons being parameter $1 (an integer array).
inline constexpr char kPgNotNoFault[] = "<> ALL($1::integer[])";

}  // namespace idlegrid::store
