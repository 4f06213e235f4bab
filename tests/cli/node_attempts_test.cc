// `nodes attempts`' table (cli/node_attempts.h) from plain data: a finished
// attempt shows its exit and run time, a running one how long so far, one
// lost with its node names the reason, and a page with none is the header.
#include "cli/node_attempts.h"

#include <gtest/gtest.h>

namespace idlegrid::cli {
namespace {

v1::NodeAttempt Attempt(const std::string& id, v1::TaskState state, int64_t started, int64_t finished) {
  v1::NodeAttempt na;
  na.set_job_id("j-1");
  na.set_task_index(7);
  v1::Attempt* a = na.mutable_attempt();
  a->set_id(id);
  a->set_state(state);
  a->set_assigned_at_ms(started - 500);
  a->set_started_at_ms(started);
  a->set_finished_at_ms(finished);
  return na;
}

TEST(NodeAttemptRowsTest, EachAttemptSaysHowItEndedAndHowLongItRan) {
  v1::ListNodeAttemptsResponse page;
  const int64_t t0 = 1765112400000;  // 2025-12-07 13:00:00 UTC
  *page.add_attempts() = Attempt("a-run", v1::RUNNING, t0 + 60000, 0);
  v1::NodeAttempt done = Attempt("a-done", v1::SUCCEEDED, t0, t0 + 12500);
  done.mutable_attempt()->set_cost(0.0125);
  *page.add_attempts() = done;
  v1::NodeAttempt lost = Attempt("a-lost", v1::LOST, t0, t0 + 3000);
  lost.mutable_attempt()->set_failure_reason(v1::NODE_LOST);
  *page.add_attempts() = lost;

  auto rows = NodeAttemptRows(page, t0 + 65000);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0][1], "JOB/TASK");
  EXPECT_EQ(rows[1],
            (std::vector<std::string>{"2025-12-07 13:01:00", "j-1/7", "a-run", "running", "-", "5.0s so far", "-"}));
  EXPECT_EQ(rows[2], (std::vector<std::string>{"2025-12-07 13:00:00", "j-1/7", "a-done", "succeeded (exit 0)", "-",
                                               "12.5s", "0.0125"}));
  EXPECT_EQ(rows[3][3], "lost") << "no exit code for an attempt its node took down";
  EXPECT_EQ(rows[3][4], "node_lost");
  EXPECT_EQ(NodeAttemptRows(v1::ListNodeAttemptsResponse(), t0).size(), 1u);
}

}  // namespace
}  // namespace idlegrid::cli
