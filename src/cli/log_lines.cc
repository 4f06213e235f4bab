// What `logs` prints (log_lines.h). Pure.
#include "cli/log_lines.h"

namespace idlegrid::cli {

std::string LogLines::Prefixed(uint32_t task, const std::string& line) const {
  return prefix_ ? "[task " + std::to_string(task) + "] " + line : line;
}

bool LogLines::Shows(const v1::LogChunk& chunk) const {
  return (tasks_.empty() || tasks_.count(chunk.task_index()) > 0) && (stream_.empty() || chunk.stream() == stream_);
}

std::vector<LogLines::Out> LogLines::Add(const v1::LogChunk& chunk) {
  std::vector<Out> out;
  if (!Shows(chunk)) return out;
  std::string& pending = partial_[{chunk.task_index(), chunk.stream()}];
  pending += chunk.data();
  size_t start = 0;
  std::string text;
  for (size_t nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n', start)) {
    text += Prefixed(chunk.task_index(), pending.substr(start, nl + 1 - start));
    start = nl + 1;
  }
  pending.erase(0, start);
  if (!text.empty()) out.push_back({chunk.stream(), std::move(text)});
  return out;
}

std::vector<LogLines::Out> LogLines::Finish() {
  std::vector<Out> out;
  for (auto& [key, pending] : partial_) {
    if (!pending.empty()) out.push_back({key.second, Prefixed(key.first, pending) + "\n"});
    pending.clear();
  }
  return out;
}

}  // namespace idlegrid::cli
