// `logs` output (cli/log_lines.h): lines of interleaved tasks come out whole
// and prefixed with their task, a chunk split mid-line waits for its end,
// filters by task and stream drop exactly the rest, and what is left at the
// end is printed with a newline.
#include "cli/log_lines.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace idlegrid::cli {
namespace {

v1::LogChunk Chunk(uint32_t task, const std::string& stream, const std::string& data) {
  v1::LogChunk c;
  c.set_task_index(task);
  c.set_stream(stream);
  c.set_data(data);
  return c;
}

std::string Text(const std::vector<LogLines::Out>& out) {
  std::string s;
  for (const auto& o : out) s += o.stream + ":" + o.text;
  return s;
}

TEST(LogLinesTest, InterleavedTasksComeOutAsWholePrefixedLines) {
  LogLines lines({}, "", /*prefix=*/true);
  EXPECT_EQ(Text(lines.Add(Chunk(0, "stdout", "epoch 1 lo"))), "");
  EXPECT_EQ(Text(lines.Add(Chunk(1, "stdout", "epoch 1 loss 0.9\nepoch 2 "))), "stdout:[task 1] epoch 1 loss 0.9\n");
  EXPECT_EQ(Text(lines.Add(Chunk(0, "stdout", "ss 0.8\n"))), "stdout:[task 0] epoch 1 loss 0.8\n");
  EXPECT_EQ(Text(lines.Add(Chunk(0, "stderr", "warn\nnote\n"))), "stderr:[task 0] warn\n[task 0] note\n");
  EXPECT_EQ(Text(lines.Finish()), "stdout:[task 1] epoch 2 \n");
  EXPECT_EQ(Text(lines.Finish()), "");  // nothing twice
}

TEST(LogLinesTest, FiltersKeepExactlyTheTaskAndStreamAsked) {
  LogLines lines({3}, "stderr", /*prefix=*/false);
  EXPECT_FALSE(lines.Shows(Chunk(2, "stderr", "")));
  EXPECT_FALSE(lines.Shows(Chunk(3, "stdout", "")));
  EXPECT_TRUE(lines.Shows(Chunk(3, "stderr", "")));
  EXPECT_EQ(Text(lines.Add(Chunk(2, "stderr", "other task\n"))), "");
  EXPECT_EQ(Text(lines.Add(Chunk(3, "stdout", "other stream\n"))), "");
  EXPECT_EQ(Text(lines.Add(Chunk(3, "stderr", "Traceback\n  line 4\n"))), "stderr:Traceback\n  line 4\n");
  EXPECT_EQ(Text(lines.Add(Chunk(3, "stderr", "no newline"))), "");
  EXPECT_EQ(Text(lines.Finish()), "stderr:no newline\n");
}

}  // namespace
}  // namespace idlegrid::cli
