// The agent's rules for how an attempt ends (agent/outcome.h), on plain facts.
#include "agent/outcome.h"

#include <gtest/gtest.h>

namespace idlegrid::agent {
namespace {

runtime::ExitInfo Exited(int code) {
  runtime::ExitInfo e;
  e.exit_code = code;
  return e;
}

RunFacts Facts(Result<runtime::ExitInfo> exit) {
  RunFacts f;
  f.exit = std::move(exit);
  f.run_timeout_seconds = 60;
  f.memory_bytes = 1 << 20;
  return f;
}

TEST(DecideOutcomeTest, AnExitIsReportedWithItsCodeAndOutputsWhateverTheCode) {
  for (int code : {0, 1, 42}) {
    RunFacts f = Facts(Exited(code));
    f.output_files = 3;
    Outcome o = DecideOutcome(f);
    EXPECT_EQ(o.event, v1::EXITED);
    EXPECT_EQ(o.exit_code, code);
    EXPECT_EQ(o.reason, v1::FAILURE_REASON_UNSPECIFIED);
    EXPECT_TRUE(o.message.empty());
    EXPECT_TRUE(o.collect_outputs);
  }
}

TEST(DecideOutcomeTest, CancelledIsStoppedEvenWhenTheRunFailed) {
  for (Result<runtime::ExitInfo> exit :
       {Result<runtime::ExitInfo>(Exited(0)), Result<runtime::ExitInfo>(Status::Internal("podman died"))}) {
    RunFacts f = Facts(exit);
    f.cancelled = true;
    Outcome o = DecideOutcome(f);
    EXPECT_EQ(o.event, v1::STOPPED);
    EXPECT_FALSE(o.collect_outputs);
  }
}

TEST(DecideOutcomeTest, PastItsDiskCapIsTheJobsOutputLimitWhateverTheRuntimeSaid) {
  const std::string why = "wrote more than 1Gi (resources.disk) to its home, output and checkpoint directories; killed";
  runtime::ExitInfo killed = Exited(137);
  killed.killed = true;
  runtime::ExitInfo runc_failed = Exited(1);
  runc_failed.error = "runc failed: container not running";
  for (Result<runtime::ExitInfo> exit : {Result<runtime::ExitInfo>(killed), Result<runtime::ExitInfo>(Exited(0)),
                                         Result<runtime::ExitInfo>(runc_failed)}) {
    RunFacts f = Facts(exit);
    f.output_files = 3;
    f.output_breach = why;
    Outcome o = DecideOutcome(f);
    EXPECT_EQ(o.event, v1::ERRORED);
    EXPECT_EQ(o.reason, v1::DISK_LIMIT);
    EXPECT_EQ(o.message, why);
    EXPECT_FALSE(o.collect_outputs);
    EXPECT_FALSE(NeedsFinalCheckpoint(f)) << "its checkpoint may be what passed the cap";
  }
  // A cancel still wins: the user asked for the stop.
  RunFacts cancelled = Facts(killed);
  cancelled.cancelled = true;
  cancelled.output_breach = why;
  EXPECT_EQ(DecideOutcome(cancelled).event, v1::STOPPED);
}

TEST(DecideOutcomeTest, RuntimeFailuresArePlatformFailuresNotTheJobs) {
  Outcome a = DecideOutcome(Facts(Status::FailedPrecondition("cannot start podman")));
  EXPECT_EQ(a.event, v1::ERRORED);
  EXPECT_EQ(a.reason, v1::PLATFORM_FAILURE);
  EXPECT_EQ(a.message, "cannot start podman");
  runtime::ExitInfo runc_failed = Exited(1);
  runc_failed.error = "runc failed: mount: no such file";
  Outcome b = DecideOutcome(Facts(runc_failed));
  EXPECT_EQ(b.event, v1::ERRORED);
  EXPECT_EQ(b.reason, v1::PLATFORM_FAILURE);
  EXPECT_EQ(b.message, runc_failed.error);
  EXPECT_FALSE(b.collect_outputs);
}

TEST(DecideOutcomeTest, ARunThatFailedOnAFullDiskIsTheNodesFailureNotTheJobs) {
  RunFacts f = Facts(Exited(12));
  f.disk_full = "disk is full: 0 MiB free of 256 MiB at /srv/agent";
  Outcome o = DecideOutcome(f);
  EXPECT_EQ(o.event, v1::ERRORED);
  EXPECT_EQ(o.reason, v1::PLATFORM_FAILURE);
  EXPECT_EQ(o.message,
            "the node's disk is full: 0 MiB free of 256 MiB at /srv/agent (the job exited 12; not held against it)");
  EXPECT_FALSE(o.collect_outputs);
  // A runtime that failed on it: the disk first, then what the runtime said.
  f.exit = Status::Internal("runc: no space left on device");
  EXPECT_EQ(DecideOutcome(f).message,
            "the node's disk is full: 0 MiB free of 256 MiB at /srv/agent (runc: no space left on device)");
  // Past its own cap, the job's fault still comes first.
  f.output_breach = "wrote more than 1Gi (resources.disk)";
  EXPECT_EQ(DecideOutcome(f).reason, v1::DISK_LIMIT);
}

TEST(DecideOutcomeTest, TooManyOutputsIsTheJobsFault) {
  RunFacts f = Facts(Exited(0));
  f.output_files = kMaxOutputFiles;
  EXPECT_EQ(DecideOutcome(f).event, v1::EXITED) << "the limit itself is allowed";
  f.output_files = kMaxOutputFiles + 1;
  Outcome o = DecideOutcome(f);
  EXPECT_EQ(o.event, v1::ERRORED);
  EXPECT_EQ(o.reason, v1::NONZERO_EXIT);
  EXPECT_NE(o.message.find(std::to_string(kMaxOutputFiles + 1)), std::string::npos) << o.message;
}

TEST(DecideOutcomeTest, TimeoutAndOomAreNamedAndKeepTheirOutputs) {
  runtime::ExitInfo timed_out = Exited(137);
  timed_out.timed_out = true;
  Outcome t = DecideOutcome(Facts(timed_out));
  EXPECT_EQ(t.event, v1::EXITED);
  EXPECT_EQ(t.reason, v1::RUN_TIMEOUT);
  EXPECT_NE(t.message.find("60 s"), std::string::npos) << t.message;
  EXPECT_TRUE(t.collect_outputs);
  runtime::ExitInfo oom = Exited(137);
  oom.oom = true;
  Outcome m = DecideOutcome(Facts(oom));
  EXPECT_EQ(m.reason, v1::OUT_OF_MEMORY);
  EXPECT_NE(m.message.find("1048576 bytes"), std::string::npos) << m.message;
  EXPECT_TRUE(m.collect_outputs);
  runtime::ExitInfo both = timed_out;
  both.oom = true;
  EXPECT_EQ(DecideOutcome(Facts(both)).reason, v1::RUN_TIMEOUT) << "our own kill explains the SIGKILL";
}

TEST(NeedsFinalCheckpointTest, OnlyAClearSuccessNeedsNone) {
  EXPECT_FALSE(NeedsFinalCheckpoint(Facts(Exited(0))));
  EXPECT_TRUE(NeedsFinalCheckpoint(Facts(Exited(1))));
  runtime::ExitInfo timed_out = Exited(0);
  timed_out.timed_out = true;
  EXPECT_TRUE(NeedsFinalCheckpoint(Facts(timed_out)));
  runtime::ExitInfo oom = Exited(0);
  oom.oom = true;
  EXPECT_TRUE(NeedsFinalCheckpoint(Facts(oom)));
  EXPECT_TRUE(NeedsFinalCheckpoint(Facts(Status::Internal("x"))));
  runtime::ExitInfo errored = Exited(0);
  errored.error = "runc failed";
  EXPECT_TRUE(NeedsFinalCheckpoint(Facts(errored)));
  RunFacts cancelled = Facts(Exited(0));
  cancelled.cancelled = true;
  EXPECT_TRUE(NeedsFinalCheckpoint(cancelled)) << "drained or handed back: the next attempt resumes";
}

}  // namespace
}  // namespace idlegrid::agent
