// Aligned tables (cli/table.h): columns as wide as their widest cell, two
// spaces apart, no trailing blanks, short rows allowed, and a UTF-8 name
// counted by its letters, not its bytes.
#include "cli/table.h"

#include <gtest/gtest.h>

namespace idlegrid::cli {
namespace {

TEST(TableTest, ColumnsLineUpWithoutTrailingBlanks) {
  EXPECT_EQ(FormatTable({{"JOB", "NAME", "STATE"}, {"j-1", "a-long-name", "running"}, {"j-22", "b", "queued"}}),
            "JOB   NAME         STATE\n"
            "j-1   a-long-name  running\n"
            "j-22  b            queued\n");
}

TEST(TableTest, ShortRowsAndUtf8Names) {
  EXPECT_EQ(FormatTable({{"A", "B"}, {"xyz"}, {"é", "1"}}),
            "A    B\n"
            "xyz\n"
            "é    1\n");
  EXPECT_EQ(FormatTable({}), "");
}

}  // namespace
}  // namespace idlegrid::cli
