// When a job may be deleted (jobs/retention.h), on plain values.
#include "jobs/retention.h"

#include <gtest/gtest.h>

namespace idlegrid::jobs {
namespace {

TEST(RetentionTest, OnlyASettledJobWithNoAttemptOnANodeMayBeDeleted) {
  EXPECT_TRUE(CheckDeletable("j", {{v1::SUCCEEDED, 3}, {v1::FAILED, 1}, {v1::CANCELLED, 2}}, 0).ok());
  for (v1::TaskState live : {v1::QUEUED, v1::ASSIGNED, v1::RUNNING, v1::LOST}) {
    Status st = CheckDeletable("j", {{v1::SUCCEEDED, 3}, {live, 1}}, 0);
    EXPECT_EQ(st.code(), Code::kFailedPrecondition) << v1::TaskState_Name(live);
    EXPECT_NE(st.message().find("cancel"), std::string::npos) << st.message();
  }
  Status stopping = CheckDeletable("j", {{v1::CANCELLED, 1}}, 1);
  EXPECT_EQ(stopping.code(), Code::kFailedPrecondition) << "a cancelled task's container may still be stopping";
  EXPECT_EQ(CheckDeletable("j", {}, 0).code(), Code::kNotFound);
}

TEST(RetentionTest, RetentionRunsFromTheLastChangeAndZeroKeepsForever) {
  EXPECT_FALSE(RetentionExpired(1000, 500, 1499));
  EXPECT_TRUE(RetentionExpired(1000, 500, 1500));
  EXPECT_FALSE(RetentionExpired(0, 0, 1'000'000'000));
}

}  // namespace
}  // namespace idlegrid::jobs
