#pragma once
// When a job may be deleted, by a user or by retention (issue 11). Pure: the
// store reads the job's task states and active attempts and asks.
#include <cstdint>
#include <map>
#include <string>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::jobs {

// Ok when every task is terminal (succeeded, failed, cancelled) and no
// attempt still holds a node (a cancelled task's container may still be
// stopping: deleting its attempt would free capacity that is still in use).
// FailedPrecondition saying what to do otherwise; NotFound for no tasks.
Status CheckDeletable(const std::string& job_id, const std::map<v1::TaskState, int>& task_counts, int active_attempts);

// Whether retention has run out: the job settled (its last task change) at
// `settled_ms` and keeps `retention_ms` (0: forever).
bool RetentionExpired(int64_t settled_ms, int64_t retention_ms, int64_t now_ms);

}  // namespace idlegrid::jobs
