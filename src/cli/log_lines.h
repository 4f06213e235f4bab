#pragma once
// What `logs` prints: the chunks of the tasks and stream asked for, and,
// when output of several tasks is shown, each line prefixed "[task N] " so
// they can be told apart. Chunks end anywhere (mid-line, mid-character), and
// tasks' chunks interleave, so lines are assembled per task and stream and
// printed whole; Finish hands out what is left without a newline. Pure.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::cli {

class LogLines {
 public:
  struct Out {
    std::string stream;  // "stdout" | "stderr"
    std::string text;
  };
  // `tasks`: the tasks to show (all when empty); `stream`: "stdout",
  // "stderr" or "" for both; `prefix`: whether each line names its task.
  LogLines(std::set<uint32_t> tasks, std::string stream, bool prefix)
      : tasks_(std::move(tasks)), stream_(std::move(stream)), prefix_(prefix) {}

  // Whether `chunk` is of a task and stream asked for (--json prints those whole).
  bool Shows(const v1::LogChunk& chunk) const;
  // The whole lines `chunk` completes (none when it is filtered out).
  std::vector<Out> Add(const v1::LogChunk& chunk);
  // The partial lines left, each ended with a newline.
  std::vector<Out> Finish();

 private:
  std::string Prefixed(uint32_t task, const std::string& line) const;

  const std::set<uint32_t> tasks_;
  const std::string stream_;
  const bool prefix_;
  std::map<std::pair<uint32_t, std::string>, std::string> partial_;  // (task, stream) -> text without a newline yet
};

}  // namespace idlegrid::cli
