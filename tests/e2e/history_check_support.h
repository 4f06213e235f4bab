#pragma once
// A history checker in the style of Jepsen's total-queue checker, over what a
// grid's store ended with after a fault (tests/e2e/fault_matrix_test.cc):
//   - every task ended, exactly once: a terminal state, no attempt of it still
//     live, and a SUCCEEDED task has exactly one SUCCEEDED attempt (one result
//     taken; verified jobs excepted, whose replicas agree by design);
//   - a task that FAILED or was LOST says why (a failure reason or message);
//   - no attempt id appears twice, and a task never had two live attempts at
//     once (no run twice unnoticed);
//   - no capacity held twice: on every node, the CPU reserved by attempts live
//     at the same moment never exceeds what the node offers.
// Overlaps shorter than 250 ms are not counted: attempt times are taken just
// before the transactions that write them (history_check_support.cc).
// Plain data in, a list of violations out (empty: the history is sound).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::testing {

// `node_cpus`: each node's CPU cores; `now_ms` closes attempts still live.
std::vector<std::string> CheckHistory(const std::vector<v1::Job>& jobs, const std::map<std::string, double>& node_cpus,
                                      int64_t now_ms);

}  // namespace idlegrid::testing
