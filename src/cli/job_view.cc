// What `status` prints for a job of any size (job_view.h). Pure.
#include "cli/job_view.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "jobs/task_state.h"

namespace idlegrid::cli {
namespace {

// "45s", "4m", "2h 5m": coarse, as an estimate should be.
std::string Coarse(int64_t ms) {
  const int64_t s = std::max<int64_t>(ms / 1000, 1);
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m";
  return std::to_string(s / 3600) + "h " + std::to_string((s % 3600) / 60) + "m";
}

// The time left at the rate tasks ended since the job was submitted; "" when
// nothing has ended yet or nothing is left.
std::string EtaLine(const v1::JobSummary& summary) {
  const uint32_t left = summary.tasks() - std::min(summary.ended(), summary.tasks());
  if (summary.tasks_per_minute() <= 0 || left == 0 || summary.tasks() < 2) return "";
  char rate[32];
  std::snprintf(rate, sizeof rate, "%.1f", summary.tasks_per_minute());
  return "about " + Coarse(summary.eta_ms()) + " left at " + rate + " tasks/min so far (" + std::to_string(left) +
         " to go)";
}

}  // namespace

v1::GetJobRequest PageRequest(const std::string& job_id, const TaskFilter& filter, uint32_t offset, uint32_t limit) {
  v1::GetJobRequest req;
  req.set_job_id(job_id);
  req.set_paged(true);
  req.set_offset(offset);
  req.set_limit(limit);
  if (!filter.asked) return req;
  req.mutable_task_indices()->Add(filter.tasks.begin(), filter.tasks.end());
  for (v1::TaskState s : filter.states) req.add_states(s);
  return req;
}

std::string FormatTaskList(const std::vector<uint32_t>& indices, size_t max_parts) {
  std::vector<std::string> parts;
  size_t i = 0;
  size_t shown = 0;  // indices the listed parts cover
  while (i < indices.size() && parts.size() < max_parts) {
    size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    parts.push_back(j == i ? std::to_string(indices[i])
                           : std::to_string(indices[i]) + "-" + std::to_string(indices[j]));
    shown += j - i + 1;
    i = j + 1;
  }
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  if (shown < indices.size()) out += ", ... (" + std::to_string(indices.size() - shown) + " more)";
  return out;
}

std::string FormatRanges(const google::protobuf::RepeatedPtrField<v1::IndexRange>& ranges, uint32_t count,
                         size_t max_parts) {
  std::string out;
  uint64_t shown = 0;
  for (int i = 0; i < ranges.size() && static_cast<size_t>(i) < max_parts; ++i) {
    const v1::IndexRange& r = ranges[i];
    out += (out.empty() ? "" : ", ") + (r.first() == r.last()
                                            ? std::to_string(r.first())
                                            : std::to_string(r.first()) + "-" + std::to_string(r.last()));
    shown += static_cast<uint64_t>(r.last()) - r.first() + 1;
  }
  if (shown < count) out += ", ... (" + std::to_string(count - shown) + " more)";
  return out;
}

std::vector<std::string> SummaryLines(const v1::JobSummary& summary) {
  // Failure reasons of tasks that ended badly, and of queued tasks sent back
  // by a lost or refusing node, with the tasks each names; most first.
  std::vector<std::string> out;
  for (const v1::ReasonGroup& g : summary.reasons()) {
    out.push_back(std::to_string(g.count()) + " " + jobs::StateName(g.state()) + " (" + jobs::ReasonName(g.reason()) +
                  "): tasks " + FormatRanges(g.ranges(), g.count()));
  }
  if (std::string eta = EtaLine(summary); !eta.empty()) out.push_back(eta);
  return out;
}

std::vector<std::string> GroupedExplanation(const v1::ExplainJobResponse& explained) {
  struct Group {
    std::vector<uint32_t> tasks;
    const v1::TaskExplanation* first = nullptr;
  };
  std::map<std::string, Group> groups;
  for (const auto& t : explained.tasks()) {
    Group& g = groups[t.summary()];
    g.tasks.push_back(t.index());
    if (g.first == nullptr) g.first = &t;
  }
  std::vector<const Group*> order;
  for (const auto& [summary, g] : groups) order.push_back(&g);
  std::stable_sort(order.begin(), order.end(),
                   [](const Group* a, const Group* b) { return a->tasks.size() > b->tasks.size(); });
  std::vector<std::string> out;
  for (const Group* g : order) {
    std::vector<uint32_t> tasks = g->tasks;
    std::sort(tasks.begin(), tasks.end());
    out.push_back(std::to_string(tasks.size()) + (tasks.size() == 1 ? " task waits" : " tasks wait") + " (tasks " +
                  FormatTaskList(tasks) + "): " + g->first->summary());
    out.push_back("  e.g. task " + std::to_string(g->first->index()) + ":");
    size_t start = 0;
    const std::string& text = g->first->text();
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      out.push_back("    " + text.substr(start, end - start));
      start = end + 1;
    }
  }
  return out;
}

}  // namespace idlegrid::cli
