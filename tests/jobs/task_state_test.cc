// The task/attempt state machine (jobs/task_state.h) and what agent reports do
// to it (jobs/attempt_events.h). Pure functions, so every table here is
// exhaustive where the domain is small.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "jobs/attempt_events.h"
#include "jobs/task_state.h"

namespace idlegrid::jobs {
namespace {

using v1::AttemptEvent;

// Every value of the enum, so a state added to the proto is covered (and
// illegal by default) without touching this file.
std::vector<TaskState> AllStates() {
  std::vector<TaskState> out;
  for (int s = v1::TaskState_MIN; s <= v1::TaskState_MAX; ++s) {
    if (v1::TaskState_IsValid(s)) out.push_back(static_cast<TaskState>(s));
  }
  return out;
}

std::vector<FailureReason> AllReasons() {
  std::vector<FailureReason> out;
  for (int r = v1::FailureReason_MIN; r <= v1::FailureReason_MAX; ++r) {
    if (v1::FailureReason_IsValid(r)) out.push_back(static_cast<FailureReason>(r));
  }
  return out;
}

std::vector<AttemptEvent> AllEvents() {
  std::vector<AttemptEvent> out;
  for (int e = v1::AttemptEvent_MIN; e <= v1::AttemptEvent_MAX; ++e) {
    if (v1::AttemptEvent_IsValid(e)) out.push_back(static_cast<AttemptEvent>(e));
  }
  return out;
}

// The edges of the diagram in task_state.h. RUNNING -> QUEUED is the retry of
// a task whose attempt failed after starting ("a task is retried by moving it
// back to QUEUED").
const std::set<std::pair<TaskState, TaskState>>& TaskEdges() {
  static const std::set<std::pair<TaskState, TaskState>> kEdges = {
      {v1::QUEUED, v1::ASSIGNED},    {v1::QUEUED, v1::FAILED},     {v1::QUEUED, v1::CANCELLED},
      {v1::ASSIGNED, v1::RUNNING},   {v1::ASSIGNED, v1::QUEUED},   {v1::ASSIGNED, v1::FAILED},
      {v1::ASSIGNED, v1::CANCELLED}, {v1::RUNNING, v1::SUCCEEDED}, {v1::RUNNING, v1::FAILED},
      {v1::RUNNING, v1::CANCELLED},  {v1::RUNNING, v1::QUEUED},    {v1::ASSIGNED, v1::LOST},
      {v1::RUNNING, v1::LOST},       {v1::LOST, v1::QUEUED},       {v1::LOST, v1::FAILED},
      {v1::LOST, v1::CANCELLED},
  };
  return kEdges;
}

std::string Edge(TaskState from, TaskState to) { return std::string(StateName(from)) + " -> " + StateName(to); }

TEST(TaskTransitionTest, AcceptsExactlyTheDiagramEdges) {
  int legal = 0;
  for (TaskState from : AllStates()) {
    for (TaskState to : AllStates()) {
      SCOPED_TRACE(Edge(from, to));
      Status st = CheckTaskTransition(from, to);
      if (TaskEdges().count({from, to})) {
        EXPECT_TRUE(st.ok()) << st.ToString();
        ++legal;
      } else {
        EXPECT_EQ(st.code(), Code::kFailedPrecondition) << st.ToString();
        // The message names both ends so a user can tell what was refused.
        EXPECT_NE(st.message().find(StateName(from)), std::string::npos) << st.message();
        EXPECT_NE(st.message().find(StateName(to)), std::string::npos) << st.message();
      }
    }
  }
  EXPECT_EQ(legal, static_cast<int>(TaskEdges().size()));
}

TEST(AttemptTransitionTest, AcceptsTheTaskEdgesExceptBackToQueued) {
  int legal = 0;
  for (TaskState from : AllStates()) {
    for (TaskState to : AllStates()) {
      SCOPED_TRACE(Edge(from, to));
      Status st = CheckAttemptTransition(from, to);
      if (TaskEdges().count({from, to}) && to != v1::QUEUED && to != v1::LOST && from != v1::LOST) {
        EXPECT_TRUE(st.ok()) << st.ToString();
        ++legal;
      } else {
        EXPECT_EQ(st.code(), Code::kFailedPrecondition) << st.ToString();
      }
    }
  }
  // Attempts never go back to the queue nor to LOST (only tasks do), and never leave LOST.
  EXPECT_EQ(legal, static_cast<int>(TaskEdges().size()) - 7);
}

TEST(TaskStateTest, TerminalStatesAreExactlySucceededFailedCancelled) {
  const std::map<TaskState, bool> kWant = {
      {v1::TASK_STATE_UNSPECIFIED, false},
      {v1::QUEUED, false},
      {v1::ASSIGNED, false},
      {v1::RUNNING, false},
      {v1::SUCCEEDED, true},
      {v1::FAILED, true},
      {v1::CANCELLED, true},
      {v1::LOST, false},  // waits for the user's retry or abandon
  };
  for (TaskState s : AllStates()) {
    ASSERT_TRUE(kWant.count(s)) << "no expectation for state " << s;
    EXPECT_EQ(IsTerminal(s), kWant.at(s)) << StateName(s);
    // Nothing leaves a terminal state.
    if (IsTerminal(s)) {
      for (TaskState to : AllStates()) EXPECT_FALSE(CheckTaskTransition(s, to).ok()) << Edge(s, to);
    }
  }
}

TEST(TaskStateTest, EveryReasonHasAName) {
  for (FailureReason r : AllReasons()) {
    if (r == v1::FAILURE_REASON_UNSPECIFIED) {
      EXPECT_STREQ(ReasonName(r), "");
    } else {
      EXPECT_STRNE(ReasonName(r), "") << "reason " << r;
    }
  }
}

TEST(AggregateJobStateTest, Table) {
  struct Case {
    const char* name;
    std::map<TaskState, int> counts;
    TaskState want;
  };
  const Case kCases[] = {
      {"no tasks yet", {}, v1::QUEUED},
      {"all queued", {{v1::QUEUED, 3}}, v1::QUEUED},
      {"one assigned counts as running", {{v1::ASSIGNED, 1}, {v1::QUEUED, 4}}, v1::RUNNING},
      {"running beats everything", {{v1::RUNNING, 1}, {v1::FAILED, 2}, {v1::SUCCEEDED, 2}}, v1::RUNNING},
      {"queued work keeps a partly failed job queued", {{v1::QUEUED, 1}, {v1::FAILED, 1}}, v1::QUEUED},
      {"queued with successes", {{v1::QUEUED, 2}, {v1::SUCCEEDED, 1}}, v1::QUEUED},
      {"any failure fails a finished job", {{v1::FAILED, 1}, {v1::SUCCEEDED, 9}}, v1::FAILED},
      {"failure beats cancel", {{v1::FAILED, 1}, {v1::CANCELLED, 1}}, v1::FAILED},
      {"cancel beats success", {{v1::CANCELLED, 1}, {v1::SUCCEEDED, 3}}, v1::CANCELLED},
      {"all succeeded", {{v1::SUCCEEDED, 5}}, v1::SUCCEEDED},
      {"zero counts are ignored", {{v1::RUNNING, 0}, {v1::FAILED, 0}, {v1::SUCCEEDED, 2}}, v1::SUCCEEDED},
  };
  for (const auto& c : kCases) {
    EXPECT_EQ(AggregateJobState(c.counts), c.want) << c.name;
  }
}

TEST(ShouldRetryTest, Table) {
  struct Case {
    FailureReason reason;
    uint32_t attempts_used;
    uint32_t retries;
    bool idempotent;
    bool want;
  };
  const Case kCases[] = {
      // The job's own failures: attempts_used counts the failed attempt, so
      // `retries` retries means retries + 1 attempts in all.
      {v1::NONZERO_EXIT, 1, 0, false, false},
      {v1::NONZERO_EXIT, 1, 1, false, true},
      {v1::NONZERO_EXIT, 2, 1, false, false},
      {v1::NONZERO_EXIT, 3, 3, false, true},
      {v1::NONZERO_EXIT, 4, 3, true, false},
      {v1::RUN_TIMEOUT, 1, 1, false, true},
      {v1::RUN_TIMEOUT, 2, 1, false, false},
      {v1::OUT_OF_MEMORY, 1, 2, false, true},
      {v1::OUT_OF_MEMORY, 3, 2, false, false},
      {v1::DISK_LIMIT, 1, 1, false, true},
      {v1::DISK_LIMIT, 2, 1, true, false},
      // Platform failures follow the same budget, idempotent or not.
      {v1::PLATFORM_FAILURE, 1, 1, false, true},
      {v1::PLATFORM_FAILURE, 2, 1, true, false},
      {v1::PLATFORM_FAILURE, 1, 0, true, false},
      // Never retried, whatever the budget.
      {v1::USER_CANCEL, 1, 5, true, false},
      {v1::USER_CANCEL, 0, 5, false, false},
      {v1::QUEUE_TIMEOUT, 0, 5, true, false},
      {v1::QUEUE_TIMEOUT, 1, 5, false, false},
      // A lost node: only idempotent jobs, and only within the budget.
      {v1::NODE_LOST, 1, 1, true, true},
      {v1::NODE_LOST, 1, 1, false, false},
      {v1::NODE_LOST, 2, 1, true, false},
      {v1::NODE_LOST, 1, 0, true, false},
  };
  for (const auto& c : kCases) {
    EXPECT_EQ(ShouldRetry(c.reason, c.attempts_used, c.retries, c.idempotent), c.want)
        << ReasonName(c.reason) << " used=" << c.attempts_used << " retries=" << c.retries
        << " idempotent=" << c.idempotent;
  }
}

// --- ApplyAttemptEvent ------------------------------------------------------

AttemptContext Ctx(TaskState state, uint32_t used = 1, uint32_t retries = 0, bool idempotent = false) {
  AttemptContext ctx;
  ctx.task_state = state;
  ctx.attempt_state = state;
  ctx.attempts_used = used;
  ctx.retries = retries;
  ctx.idempotent = idempotent;
  return ctx;
}

v1::ReportAttemptRequest Report(AttemptEvent event, int32_t exit_code = 0,
                                FailureReason reason = v1::FAILURE_REASON_UNSPECIFIED,
                                const std::string& message = "") {
  v1::ReportAttemptRequest r;
  r.set_attempt_id("a-1");
  r.set_event(event);
  r.set_exit_code(exit_code);
  r.set_failure_reason(reason);
  r.set_message(message);
  return r;
}

TEST(ApplyAttemptEventTest, AcceptedIsAnAcknowledgementThatChangesNothing) {
  auto out = ApplyAttemptEvent(Ctx(v1::ASSIGNED), Report(v1::ACCEPTED));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_FALSE(out->changed);
  EXPECT_EQ(out->task_state, v1::ASSIGNED);
  EXPECT_EQ(out->attempt_state, v1::ASSIGNED);
  EXPECT_FALSE(out->retried);

  EXPECT_EQ(ApplyAttemptEvent(Ctx(v1::RUNNING), Report(v1::ACCEPTED)).status().code(), Code::kFailedPrecondition);
}

TEST(ApplyAttemptEventTest, RejectedRequeuesExcludesTheNodeAndUsesNoRetry) {
  // Even with the retry budget long spent, a rejection is not the job's fault.
  for (uint32_t used : {1u, 2u, 7u}) {
    SCOPED_TRACE(used);
    auto out = ApplyAttemptEvent(Ctx(v1::ASSIGNED, used, /*retries=*/0),
                                 Report(v1::REJECTED, 0, v1::FAILURE_REASON_UNSPECIFIED, "runsc missing"));
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_TRUE(out->changed);
    EXPECT_EQ(out->attempt_state, v1::FAILED);
    EXPECT_EQ(out->reason, v1::POLICY_REJECTED);
    EXPECT_EQ(out->task_state, v1::QUEUED);
    EXPECT_TRUE(out->retried);
    EXPECT_TRUE(out->exclude_node);
    EXPECT_NE(out->message.find("runsc missing"), std::string::npos) << out->message;
  }
  EXPECT_EQ(ApplyAttemptEvent(Ctx(v1::RUNNING), Report(v1::REJECTED)).status().code(), Code::kFailedPrecondition);
}

TEST(ApplyAttemptEventTest, BusyNodeRequeuesAfterAPauseWithoutExcludingTheNode) {
  auto out = ApplyAttemptEvent(Ctx(v1::ASSIGNED, 3, /*retries=*/0),
                               Report(v1::REJECTED, 0, v1::NODE_BUSY, "needs 1 cores, 0.5 free"));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->attempt_state, v1::FAILED);
  EXPECT_EQ(out->reason, v1::NODE_BUSY);
  EXPECT_EQ(out->task_state, v1::QUEUED);
  EXPECT_TRUE(out->retried) << "a busy node is not the job's fault: no retry used";
  EXPECT_FALSE(out->exclude_node) << "the node may take it once its capacity is free";
  EXPECT_EQ(out->retry_after_ms, kBusyRetryMs);
  EXPECT_NE(out->message.find("0.5 free"), std::string::npos) << out->message;
  EXPECT_TRUE(IsNoFault(v1::NODE_BUSY));
}

TEST(ApplyAttemptEventTest, StartedMovesBothToRunningAndADuplicateIsHarmless) {
  auto out = ApplyAttemptEvent(Ctx(v1::ASSIGNED), Report(v1::STARTED));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out->changed);
  EXPECT_EQ(out->task_state, v1::RUNNING);
  EXPECT_EQ(out->attempt_state, v1::RUNNING);
  EXPECT_EQ(out->reason, v1::FAILURE_REASON_UNSPECIFIED);

  auto again = ApplyAttemptEvent(Ctx(v1::RUNNING), Report(v1::STARTED));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE(again->changed);
  EXPECT_EQ(again->attempt_state, v1::RUNNING);
}

TEST(ApplyAttemptEventTest, ExitedTable) {
  struct Case {
    const char* name;
    uint32_t used, retries;
    int32_t exit_code;
    FailureReason reported;
    TaskState want_task;
    TaskState want_attempt;
    FailureReason want_reason;
    bool want_retried;
  };
  const Case kCases[] = {
      {"exit 0 succeeds", 1, 0, 0, v1::FAILURE_REASON_UNSPECIFIED, v1::SUCCEEDED, v1::SUCCEEDED,
       v1::FAILURE_REASON_UNSPECIFIED, false},
      {"exit 0 succeeds even with retries", 1, 3, 0, v1::FAILURE_REASON_UNSPECIFIED, v1::SUCCEEDED, v1::SUCCEEDED,
       v1::FAILURE_REASON_UNSPECIFIED, false},
      {"nonzero with retries left is retried", 1, 2, 3, v1::FAILURE_REASON_UNSPECIFIED, v1::QUEUED, v1::FAILED,
       v1::NONZERO_EXIT, true},
      {"nonzero using the last retry is retried", 2, 2, 1, v1::FAILURE_REASON_UNSPECIFIED, v1::QUEUED, v1::FAILED,
       v1::NONZERO_EXIT, true},
      {"nonzero without retries fails", 1, 0, 3, v1::FAILURE_REASON_UNSPECIFIED, v1::FAILED, v1::FAILED,
       v1::NONZERO_EXIT, false},
      {"nonzero with retries spent fails", 3, 2, 1, v1::FAILURE_REASON_UNSPECIFIED, v1::FAILED, v1::FAILED,
       v1::NONZERO_EXIT, false},
      {"run timeout", 1, 0, 137, v1::RUN_TIMEOUT, v1::FAILED, v1::FAILED, v1::RUN_TIMEOUT, false},
      {"run timeout with exit 0 is still a timeout", 1, 0, 0, v1::RUN_TIMEOUT, v1::FAILED, v1::FAILED, v1::RUN_TIMEOUT,
       false},
      {"run timeout with retries left", 1, 1, 137, v1::RUN_TIMEOUT, v1::QUEUED, v1::FAILED, v1::RUN_TIMEOUT, true},
      {"out of memory", 1, 0, 137, v1::OUT_OF_MEMORY, v1::FAILED, v1::FAILED, v1::OUT_OF_MEMORY, false},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    auto out = ApplyAttemptEvent(Ctx(v1::RUNNING, c.used, c.retries), Report(v1::EXITED, c.exit_code, c.reported));
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_TRUE(out->changed);
    EXPECT_EQ(out->task_state, c.want_task);
    EXPECT_EQ(out->attempt_state, c.want_attempt);
    EXPECT_EQ(out->reason, c.want_reason);
    EXPECT_EQ(out->retried, c.want_retried);
    EXPECT_FALSE(out->exclude_node) << "the job's own failure says nothing about the node";
  }
}

TEST(ApplyAttemptEventTest, NonzeroExitWithoutMessageSaysTheCode) {
  auto out = ApplyAttemptEvent(Ctx(v1::RUNNING), Report(v1::EXITED, 42));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_NE(out->message.find("42"), std::string::npos) << out->message;

  auto timed_out = ApplyAttemptEvent(Ctx(v1::RUNNING), Report(v1::EXITED, 137, v1::RUN_TIMEOUT, "killed after 5 s"));
  ASSERT_TRUE(timed_out.ok());
  EXPECT_EQ(timed_out->message, "killed after 5 s");
}

// The agent does not retry its STARTED report, so an exit may arrive for an
// attempt the store still has as ASSIGNED. The container did run: the report
// must not be refused (that would strand the task), and the attempt still
// passes through RUNNING so the state machine holds.
TEST(ApplyAttemptEventTest, ExitedWithoutStartedImpliesTheStart) {
  auto ok = ApplyAttemptEvent(Ctx(v1::ASSIGNED), Report(v1::EXITED, 0));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_TRUE(ok->implied_start);
  EXPECT_EQ(ok->attempt_state, v1::SUCCEEDED);
  EXPECT_EQ(ok->task_state, v1::SUCCEEDED);
  EXPECT_TRUE(CheckAttemptTransition(v1::RUNNING, ok->attempt_state).ok());

  auto failed = ApplyAttemptEvent(Ctx(v1::ASSIGNED, 1, 1), Report(v1::EXITED, 2));
  ASSERT_TRUE(failed.ok()) << failed.status().ToString();
  EXPECT_TRUE(failed->implied_start);
  EXPECT_EQ(failed->attempt_state, v1::FAILED);
  EXPECT_EQ(failed->task_state, v1::QUEUED);

  auto normal = ApplyAttemptEvent(Ctx(v1::RUNNING), Report(v1::EXITED, 0));
  ASSERT_TRUE(normal.ok());
  EXPECT_FALSE(normal->implied_start);
}

TEST(ApplyAttemptEventTest, ErroredIsAPlatformFailureThatExcludesTheNode) {
  struct Case {
    const char* name;
    TaskState state;
    uint32_t used, retries;
    FailureReason reported;
    TaskState want_task;
    FailureReason want_reason;
  };
  const Case kCases[] = {
      {"image pull failed before start", v1::ASSIGNED, 1, 0, v1::FAILURE_REASON_UNSPECIFIED, v1::FAILED,
       v1::PLATFORM_FAILURE},
      {"runtime error while running", v1::RUNNING, 1, 0, v1::FAILURE_REASON_UNSPECIFIED, v1::FAILED,
       v1::PLATFORM_FAILURE},
      {"retried while budget remains", v1::RUNNING, 1, 1, v1::FAILURE_REASON_UNSPECIFIED, v1::QUEUED,
       v1::PLATFORM_FAILURE},
      {"explicit platform failure", v1::ASSIGNED, 2, 1, v1::PLATFORM_FAILURE, v1::FAILED, v1::PLATFORM_FAILURE},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    auto out = ApplyAttemptEvent(Ctx(c.state, c.used, c.retries), Report(v1::ERRORED, 0, c.reported, "pull failed"));
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->attempt_state, v1::FAILED);
    EXPECT_EQ(out->task_state, c.want_task);
    EXPECT_EQ(out->reason, c.want_reason);
    EXPECT_EQ(out->retried, c.want_task == v1::QUEUED);
    EXPECT_TRUE(out->exclude_node);
    EXPECT_EQ(out->message, "pull failed");
  }
}

// An attempt the agent killed for writing past its total disk cap is the
// job's doing, as an out-of-memory kill is: it uses the retry budget, and
// the node, which only enforced the job's own limit, is not excluded.
TEST(ApplyAttemptEventTest, OutputLimitIsTheJobsFailureNotTheNodes) {
  const std::string kWhy =
      "wrote more than 1Gi (resources.disk) to its home, output and checkpoint directories; killed";
  struct Case {
    const char* name;
    uint32_t used, retries;
    TaskState want_task;
  };
  const Case kCases[] = {
      {"no retries: the task fails", 1, 0, v1::FAILED},
      {"retried while budget remains", 1, 1, v1::QUEUED},
      {"budget spent", 2, 1, v1::FAILED},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    auto out = ApplyAttemptEvent(Ctx(v1::RUNNING, c.used, c.retries), Report(v1::ERRORED, 0, v1::DISK_LIMIT, kWhy));
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->attempt_state, v1::FAILED);
    EXPECT_EQ(out->reason, v1::DISK_LIMIT);
    EXPECT_EQ(out->task_state, c.want_task);
    EXPECT_EQ(out->retried, c.want_task == v1::QUEUED);
    EXPECT_FALSE(out->exclude_node) << "the node enforced the job's own limit";
    EXPECT_EQ(out->message, kWhy);
    EXPECT_EQ(out->task_message, kWhy);
    EXPECT_EQ(out->task_reason, c.want_task == v1::FAILED ? v1::DISK_LIMIT : v1::FAILURE_REASON_UNSPECIFIED);
  }
  EXPECT_FALSE(IsNoFault(v1::DISK_LIMIT)) << "it used run time: it spends a retry";
  EXPECT_STREQ(ReasonName(v1::DISK_LIMIT), "disk_limit");
}

TEST(ApplyAttemptEventTest, StoppedAfterCancelIsAcceptedAndLeavesItCancelled) {
  // The agent confirming the kill: not an error, and nothing moves (the
  // confirmation may be recorded in the attempt's message).
  auto out = ApplyAttemptEvent(Ctx(v1::CANCELLED, 1, 3, true), Report(v1::STOPPED));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->task_state, v1::CANCELLED);
  EXPECT_EQ(out->attempt_state, v1::CANCELLED);
  EXPECT_FALSE(out->retried);
  EXPECT_FALSE(out->exclude_node);
  EXPECT_FALSE(out->implied_start);

  // On a terminal attempt that was not cancelled, STOPPED is out of place.
  for (TaskState s : {v1::SUCCEEDED, v1::FAILED}) {
    EXPECT_EQ(ApplyAttemptEvent(Ctx(s), Report(v1::STOPPED)).status().code(), Code::kFailedPrecondition)
        << StateName(s);
  }
}

TEST(ApplyAttemptEventTest, StoppedWithoutACancelHandsTheTaskBackWithoutUsingARetry) {
  // A node that stops an attempt on its own account (drain deadline, agent
  // shutdown) hands it back: requeued even with no retries left, and the
  // node is not ruled out (it is not unfit; drained or gone, it gets no work).
  for (TaskState s : {v1::ASSIGNED, v1::RUNNING}) {
    SCOPED_TRACE(StateName(s));
    auto out = ApplyAttemptEvent(Ctx(s, /*used=*/3, /*retries=*/0, /*idempotent=*/false), Report(v1::STOPPED));
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->attempt_state, v1::FAILED);
    EXPECT_EQ(out->reason, v1::HANDED_BACK);
    EXPECT_EQ(out->task_state, v1::QUEUED);
    EXPECT_TRUE(out->retried);
    EXPECT_FALSE(out->exclude_node);
  }
}

TEST(ApplyAttemptEventTest, AnyOtherReportOnATerminalAttemptIsRejected) {
  for (TaskState s : {v1::SUCCEEDED, v1::FAILED, v1::CANCELLED}) {
    for (AttemptEvent e : AllEvents()) {
      if (s == v1::CANCELLED && e == v1::STOPPED) continue;  // covered above
      SCOPED_TRACE(std::string(StateName(s)) + " / " + v1::AttemptEvent_Name(e));
      for (int32_t exit_code : {0, 1}) {
        auto out = ApplyAttemptEvent(Ctx(s), Report(e, exit_code));
        EXPECT_EQ(out.status().code(), Code::kFailedPrecondition) << out.status().ToString();
      }
    }
  }
}

TEST(ApplyAttemptEventTest, UnknownEventIsInvalid) {
  EXPECT_EQ(ApplyAttemptEvent(Ctx(v1::RUNNING), Report(v1::ATTEMPT_EVENT_UNSPECIFIED)).status().code(),
            Code::kInvalidArgument);
}

// Property, checked exhaustively: whatever an agent reports, an accepted
// report moves attempt and task only along edges of the state machine (through
// RUNNING when the start is implied), a refused or duplicate one moves nothing,
// and the outcome's flags agree with its states.
TEST(ApplyAttemptEventTest, OutcomesFollowTheStateMachine) {
  int accepted = 0;
  // Attempts are created ASSIGNED; QUEUED and UNSPECIFIED are never theirs.
  const TaskState kAttemptStates[] = {v1::ASSIGNED, v1::RUNNING, v1::SUCCEEDED, v1::FAILED, v1::CANCELLED};
  for (TaskState state : kAttemptStates) {
    for (AttemptEvent event : AllEvents()) {
      for (FailureReason reason : AllReasons()) {
        for (int32_t exit_code : {0, 1, 137}) {
          for (uint32_t used = 1; used <= 3; ++used) {
            for (uint32_t retries = 0; retries <= 2; ++retries) {
              for (bool idempotent : {false, true}) {
                AttemptContext ctx = Ctx(state, used, retries, idempotent);
                auto out = ApplyAttemptEvent(ctx, Report(event, exit_code, reason));
                SCOPED_TRACE(std::string(StateName(state)) + " " + v1::AttemptEvent_Name(event) + " exit " +
                             std::to_string(exit_code) + " reason " + ReasonName(reason));
                if (!out.ok()) {
                  EXPECT_TRUE(out.status().code() == Code::kFailedPrecondition ||
                              out.status().code() == Code::kInvalidArgument)
                      << out.status().ToString();
                  continue;
                }
                ++accepted;
                if (!out->changed) {
                  EXPECT_EQ(out->task_state, ctx.task_state);
                  EXPECT_EQ(out->attempt_state, ctx.attempt_state);
                  continue;
                }
                TaskState from = ctx.attempt_state;
                if (out->implied_start) {
                  ASSERT_TRUE(CheckAttemptTransition(from, v1::RUNNING).ok());
                  from = v1::RUNNING;
                }
                if (out->attempt_state != from) {
                  EXPECT_TRUE(CheckAttemptTransition(from, out->attempt_state).ok()) << Edge(from, out->attempt_state);
                }
                if (out->task_state != from) {
                  EXPECT_TRUE(CheckTaskTransition(from, out->task_state).ok()) << Edge(from, out->task_state);
                }
                EXPECT_EQ(out->retried, out->task_state == v1::QUEUED);
                if (out->attempt_state == v1::FAILED) {
                  EXPECT_NE(out->reason, v1::FAILURE_REASON_UNSPECIFIED);
                }
                if (out->reason != v1::FAILURE_REASON_UNSPECIFIED) {
                  EXPECT_TRUE(out->attempt_state == v1::FAILED || out->attempt_state == v1::CANCELLED);
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(accepted, 0);
}

TEST(NodeLostOutcomeTest, Table) {
  struct Case {
    const char* name;
    TaskState state;
    uint32_t used, retries;
    bool idempotent;
    TaskState want_task;
  };
  const Case kCases[] = {
      {"idempotent running task is requeued", v1::RUNNING, 1, 1, true, v1::QUEUED},
      {"idempotent assigned task is requeued", v1::ASSIGNED, 1, 2, true, v1::QUEUED},
      {"non-idempotent task is lost until the user decides", v1::RUNNING, 1, 3, false, v1::LOST},
      {"non-idempotent task is lost even before starting", v1::ASSIGNED, 1, 3, false, v1::LOST},
      {"idempotent with retries spent fails", v1::RUNNING, 2, 1, true, v1::FAILED},
      {"idempotent without retries fails", v1::RUNNING, 1, 0, true, v1::FAILED},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    AttemptOutcome out = NodeLostOutcome(Ctx(c.state, c.used, c.retries, c.idempotent));
    EXPECT_TRUE(out.changed);
    EXPECT_EQ(out.attempt_state, v1::FAILED);
    EXPECT_EQ(out.reason, v1::NODE_LOST);
    EXPECT_EQ(out.task_state, c.want_task);
    EXPECT_EQ(out.retried, c.want_task == v1::QUEUED);
    EXPECT_TRUE(out.exclude_node);
    EXPECT_FALSE(out.message.empty());
    EXPECT_TRUE(CheckAttemptTransition(c.state, out.attempt_state).ok());
    EXPECT_TRUE(CheckTaskTransition(c.state, out.task_state).ok());
  }
}

TEST(AttemptFaultTest, EveryReasonIsTheJobsTheNodesOrUncounted) {
  const std::map<FailureReason, AttemptFault> kWant = {
      {v1::NONZERO_EXIT, AttemptFault::kJob}, {v1::OUT_OF_MEMORY, AttemptFault::kJob},
      {v1::RUN_TIMEOUT, AttemptFault::kJob},  {v1::PLATFORM_FAILURE, AttemptFault::kNode},
      {v1::ACK_TIMEOUT, AttemptFault::kNode}, {v1::NODE_LOST, AttemptFault::kNodeLost},
      {v1::DISK_LIMIT, AttemptFault::kJob},
  };
  for (FailureReason r : AllReasons()) {
    auto it = kWant.find(r);
    AttemptFault want = it == kWant.end() ? AttemptFault::kUncounted : it->second;
    EXPECT_EQ(FaultOf(v1::FAILED, r), want) << ReasonName(r);
    EXPECT_EQ(FaultOf(v1::SUCCEEDED, r), AttemptFault::kSucceeded) << ReasonName(r);
  }
  // Of the reasons that spare the retry budget, only a missing acknowledgement
  // (the node's silence) counts against anyone.
  for (FailureReason r : kNoFaultReasons) {
    if (r != v1::ACK_TIMEOUT) {
      EXPECT_EQ(FaultOf(v1::FAILED, r), AttemptFault::kUncounted) << ReasonName(r);
    }
  }
}

}  // namespace
}  // namespace idlegrid::jobs
