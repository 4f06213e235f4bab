#pragma once
// `idlegrid nodes attempts NODE`: what ran on a node, newest first, a page at
// a time. The table is made from plain data (tested in tests/cli).
#include <cstdint>
#include <string>
#include <vector>

#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::cli {

// The header and one row per attempt: when it started (or was assigned),
// job/task, attempt, state (with the exit code once it ran to an end),
// failure reason, how long it ran (so far, when running) and its cost.
std::vector<std::vector<std::string>> NodeAttemptRows(const v1::ListNodeAttemptsResponse& page, int64_t now_ms);

}  // namespace idlegrid::cli
