// Query strings of the HTTPS/JSON API (http_queries.h).
#include "api/http_queries.h"

#include <httplib.h>

#include <cctype>
#include <cstdlib>

#include "jobs/task_ranges.h"

namespace idlegrid::api {
namespace {

// A whole non-negative decimal at most `max`; InvalidArgument naming `name`.
Result<uint64_t> Number(const httplib::Request& req, const char* name, uint64_t max) {
  const std::string text = req.get_param_value(name);
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])) || *end != '\0' || value > max) {
    return Status::InvalidArgument(std::string(name) + ": not a number from 0 to " + std::to_string(max) + ": " + text);
  }
  return static_cast<uint64_t>(value);
}

// Tasks a paged read lists when it names no limit.
constexpr uint32_t kDefaultPage = 50;

}  // namespace

Result<int64_t> LogCursor(const httplib::Request& req) {
  if (!req.has_param("after")) return int64_t{0};
  auto after = Number(req, "after", INT64_MAX);
  if (!after.ok()) return Status::InvalidArgument("after: not a log sequence number: " + req.get_param_value("after"));
  return static_cast<int64_t>(*after);
}

Result<uint32_t> PageLimit(const httplib::Request& req) {
  if (!req.has_param("limit")) return uint32_t{0};
  IG_ASSIGN_OR_RETURN(uint64_t limit, Number(req, "limit", UINT32_MAX));
  return static_cast<uint32_t>(limit);
}

bool LogFilter::Shows(const v1::LogChunk& chunk) const {
  if (task && chunk.task_index() != *task) return false;
  return stream.empty() || chunk.stream() == stream;
}

Result<LogFilter> LogFilterOf(const httplib::Request& req) {
  LogFilter out;
  if (req.has_param("task")) {
    IG_ASSIGN_OR_RETURN(uint64_t task, Number(req, "task", UINT32_MAX));
    out.task = static_cast<uint32_t>(task);
  }
  if (req.has_param("stream")) {
    out.stream = req.get_param_value("stream");
    if (out.stream != "stdout" && out.stream != "stderr") {
      return Status::InvalidArgument("stream: stdout or stderr, not '" + out.stream + "'");
    }
  }
  return out;
}

Result<v1::GetReceiptRequest> ReceiptQuery(const httplib::Request& req) {
  v1::GetReceiptRequest query;
  query.set_job_id(std::string(req.matches[1]));
  if (req.has_param("task")) {
    auto task = Number(req, "task", UINT32_MAX);
    if (!task.ok()) return Status::InvalidArgument("task: not a task index: " + req.get_param_value("task"));
    query.set_task_index(static_cast<uint32_t>(*task));
  }
  if (req.has_param("attempt")) query.set_attempt_id(req.get_param_value("attempt"));
  return query;
}

Result<v1::GetJobRequest> JobQuery(const httplib::Request& req, const std::string& job_id) {
  v1::GetJobRequest out;
  out.set_job_id(job_id);
  const bool selects = req.has_param("state") || req.has_param("tasks") || req.has_param("offset");
  if (!selects && !req.has_param("limit") && !req.has_param("paged")) return out;
  out.set_paged(true);
  if (req.has_param("state")) {
    std::string names = req.get_param_value("state");
    for (char& ch : names) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    auto states = jobs::ParseTaskStates({names});
    if (!states.ok()) return states.status().WithContext("state");
    for (v1::TaskState s : *states) out.add_states(s);
  }
  if (req.has_param("tasks")) {
    auto indices = jobs::ParseTaskRanges(req.get_param_value("tasks"));
    if (!indices.ok()) return indices.status().WithContext("tasks");
    out.mutable_task_indices()->Add(indices->begin(), indices->end());
  }
  if (req.has_param("offset")) {
    IG_ASSIGN_OR_RETURN(uint64_t offset, Number(req, "offset", UINT32_MAX));
    out.set_offset(static_cast<uint32_t>(offset));
  }
  if (req.has_param("limit")) {
    IG_ASSIGN_OR_RETURN(uint64_t limit, Number(req, "limit", UINT32_MAX));
    out.set_limit(static_cast<uint32_t>(limit));
  } else if (selects) {
    out.set_limit(kDefaultPage);
  }
  return out;
}

}  // namespace idlegrid::api
