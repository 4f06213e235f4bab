// Status values and their one mapping to process exit codes.
#include "common/exit_code.h"

#include <gtest/gtest.h>

namespace idlegrid {
namespace {

TEST(StatusTest, WithContextPrefixesTheMessageAndKeepsTheCode) {
  Status st = Status::NotFound("no such job").WithContext("cancel j-1");
  EXPECT_EQ(st.code(), Code::kNotFound);
  EXPECT_NE(st.message().find("cancel j-1"), std::string::npos);
  EXPECT_NE(st.message().find("no such job"), std::string::npos);
  EXPECT_TRUE(Status::Ok().WithContext("x").ok());
}

TEST(StatusTest, ExitCodesAreZeroForOkTwoForBadInputOneOtherwise) {
  EXPECT_EQ(ExitCodeFor(Status::Ok()), 0);
  EXPECT_EQ(ExitCodeFor(Status::InvalidArgument("bad manifest")), 2);
  for (const Status& st : {Status::NotFound("x"), Status::Internal("x"), Status::Unavailable("x"),
                           Status::FailedPrecondition("x"), Status::DataLoss("x")}) {
    EXPECT_EQ(ExitCodeFor(st), 1) << st.ToString();
  }
}

}  // namespace
}  // namespace idlegrid
