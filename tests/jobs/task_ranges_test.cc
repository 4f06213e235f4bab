// What `cancel --tasks/--state` and `retry --tasks` accept (jobs/task_ranges.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jobs/task_ranges.h"

namespace idlegrid::jobs {
namespace {

TEST(ParseTaskRangesTest, IndicesAndRanges) {
  struct Case {
    const char* text;
    std::vector<uint32_t> want;
  };
  const Case cases[] = {
      {"3", {3}},
      {"3,7-9", {3, 7, 8, 9}},
      {" 9 , 1-2 ,0", {0, 1, 2, 9}},  // sorted, spaces allowed
      {"5-5", {5}},
      {"2,1-3,2", {1, 2, 3}},  // duplicates dropped
      {"4294967295", {4294967295u}},
  };
  for (const Case& c : cases) {
    auto got = ParseTaskRanges(c.text);
    ASSERT_TRUE(got.ok()) << c.text << ": " << got.status().message();
    EXPECT_EQ(*got, c.want) << c.text;
  }
}

TEST(ParseTaskRangesTest, ErrorsNameThePartAndWhereItStarts) {
  struct Case {
    const char* text;
    const char* says;
  };
  const Case cases[] = {
      {"", "'' at character 1: empty entry"},
      {"3,,4", "'' at character 3: empty entry"},
      {"3,", "empty entry"},
      {"3,7-", "'7-' at character 3: a range needs both ends"},
      {"-2", "'-2' at character 1: a range needs both ends"},
      {"1,x", "'x' at character 3: 'x' is not a task index"},
      {"1, 2a", "'2a' at character 4: '2a' is not a task index"},
      {"9-7", "'9-7' at character 1: the range ends before it starts"},
      {"1-2-3", "'2-3' is not a task index"},
      {"4294967296", "index too large"},
      {"0-4000000000", "more than 1000000 tasks selected"},
  };
  for (const Case& c : cases) {
    auto got = ParseTaskRanges(c.text);
    ASSERT_FALSE(got.ok()) << c.text;
    EXPECT_EQ(got.status().code(), Code::kInvalidArgument) << c.text;
    EXPECT_NE(got.status().message().find(c.says), std::string::npos) << c.text << ": " << got.status().message();
  }
}

TEST(ParseTaskStatesTest, NamesRepeatedOrCommaListed) {
  auto got = ParseTaskStates({"queued", "running,lost", "queued"});
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(*got, (std::vector<v1::TaskState>{v1::QUEUED, v1::RUNNING, v1::LOST}));
}

TEST(ParseTaskStatesTest, UnknownStateListsTheKnownOnes) {
  auto got = ParseTaskStates({"queued,pending"});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kInvalidArgument);
  EXPECT_NE(got.status().message().find("unknown task state 'pending' (known: queued, assigned, running, succeeded, "
                                        "failed, cancelled, lost)"),
            std::string::npos)
      << got.status().message();
}

}  // namespace
}  // namespace idlegrid::jobs
