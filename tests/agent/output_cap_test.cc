// The cap on what an attempt writes in all (agent/output_cap.h), on plain values.
#include "agent/output_cap.h"

#include <gtest/gtest.h>

namespace idlegrid::agent {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

TEST(ResolveOutputCapTest, TheJobsTotalElseTheNodesDefault) {
  v1::Resources r;
  OutputCap node = ResolveOutputCap(r, 10 * kGiB);
  EXPECT_EQ(node.bytes, 10 * kGiB);
  EXPECT_FALSE(node.from_job);
  r.set_output_bytes(kGiB);
  OutputCap job = ResolveOutputCap(r, 10 * kGiB);
  EXPECT_EQ(job.bytes, kGiB);
  EXPECT_TRUE(job.from_job);
  // Above the node's default too: the default is for jobs that say nothing.
  r.set_output_bytes(20 * kGiB);
  EXPECT_EQ(ResolveOutputCap(r, 10 * kGiB).bytes, 20 * kGiB);
}

TEST(OutputCapBreachTest, AtTheCapIsWithinOneByteMoreIsNot) {
  const OutputCap cap{kGiB, true};
  for (OutputCheck when : {OutputCheck::kWhileRunning, OutputCheck::kBeforeUpload}) {
    EXPECT_FALSE(OutputCapBreach(uint64_t{0}, cap, when));
    EXPECT_FALSE(OutputCapBreach(kGiB, cap, when));
    EXPECT_TRUE(OutputCapBreach(kGiB + 1, cap, when));
  }
}

TEST(OutputCapBreachTest, TheMessageSaysWhatWasPassedWhereAndWhatHappened) {
  struct Case {
    OutputCap cap;
    OutputCheck when;
    std::string want;
  };
  const Case kCases[] = {
      {{kGiB, true},
       OutputCheck::kWhileRunning,
       "wrote more than 1Gi (resources.disk) to its home, output and checkpoint directories; killed"},
      {{kGiB, true},
       OutputCheck::kBeforeUpload,
       "left more than 1Gi (resources.disk) in its home, output and checkpoint directories; no output was "
       "uploaded"},
      {{10 * kGiB, false},
       OutputCheck::kWhileRunning,
       "wrote more than 10Gi (this node's default for jobs that set no resources.disk) to its home, output and "
       "checkpoint directories; killed"},
  };
  for (const Case& c : kCases) {
    std::optional<std::string> why = OutputCapBreach(c.cap.bytes * 2, c.cap, c.when);
    ASSERT_TRUE(why);
    EXPECT_EQ(*why, c.want);
  }
}

TEST(OutputCapBreachTest, WhatCannotBeMeasuredCannotBeTrusted) {
  std::optional<std::string> why = OutputCapBreach(Status::Internal("cannot read /x/out/locked: Permission denied"),
                                                   OutputCap{kGiB, true}, OutputCheck::kWhileRunning);
  ASSERT_TRUE(why);
  EXPECT_EQ(*why,
            "could not measure what it wrote to its home, output and checkpoint directories (cannot read "
            "/x/out/locked: Permission denied), so it cannot be held to 1Gi (resources.disk); killed");
}

}  // namespace
}  // namespace idlegrid::agent
