// What `status` prints for a job of any size (job_view.h). Pure.
#include "cli/job_view.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "jobs/task_state.h"

namespace idlegrid::cli {
namespace {

bool Ended(v1::TaskState s) { return s == v1::SUCCEEDED || s == v1::FAILED || s == v1::CANCELLED; }

// "45s", "4m", "2h 5m": coarse, as an estimate should be.
std::string Coarse(int64_t ms) {
  const int64_t s = std::max<int64_t>(ms / 1000, 1);
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m";
  return std::to_string(s / 3600) + "h " + std::to_string((s % 3600) / 60) + "m";
}

// The time left at the rate tasks ended since the job was submitted; "" when
// nothing has ended yet or nothing is left.
std::string EtaLine(const v1::Job& job, int64_t now_ms) {
  size_t ended = 0;
  for (const auto& t : job.tasks()) ended += Ended(t.state()) ? 1 : 0;
  const size_t left = static_cast<size_t>(job.tasks_size()) - ended;
  const int64_t elapsed = now_ms - job.created_at_ms();
  if (ended == 0 || left == 0 || elapsed <= 0 || job.tasks_size() < 2) return "";
  const double per_minute = static_cast<double>(ended) * 60'000.0 / static_cast<double>(elapsed);
  const auto left_ms = static_cast<int64_t>(static_cast<double>(left) * 60'000.0 / per_minute);
  char rate[32];
  std::snprintf(rate, sizeof rate, "%.1f", per_minute);
  return "about " + Coarse(left_ms) + " left at " + rate + " tasks/min so far (" + std::to_string(left) + " to go)";
}

}  // namespace

std::vector<const v1::Task*> SelectTasks(const v1::Job& job, const TaskFilter& filter, size_t* more) {
  const std::set<uint32_t> wanted(filter.tasks.begin(), filter.tasks.end());
  const std::set<v1::TaskState> states(filter.states.begin(), filter.states.end());
  std::vector<const v1::Task*> out;
  *more = 0;
  for (const auto& t : job.tasks()) {
    if (!wanted.empty() && wanted.count(t.index()) == 0) continue;
    if (!states.empty() && states.count(t.state()) == 0) continue;
    if (filter.limit > 0 && out.size() >= static_cast<size_t>(filter.limit)) {
      ++*more;
      continue;
    }
    out.push_back(&t);
  }
  return out;
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

std::vector<std::string> SummaryLines(const v1::Job& job, int64_t now_ms) {
  // Failure reasons of tasks that ended badly, and of queued tasks sent back
  // by a lost or refusing node, with the tasks each names.
  std::map<std::string, std::vector<uint32_t>> by_reason;
  for (const auto& t : job.tasks()) {
    if (t.failure_reason() == v1::FAILURE_REASON_UNSPECIFIED) continue;
    by_reason[std::string(jobs::StateName(t.state())) + " (" + jobs::ReasonName(t.failure_reason()) + ")"].push_back(
        t.index());
  }
  std::vector<std::pair<std::string, std::vector<uint32_t>>> reasons(by_reason.begin(), by_reason.end());
  std::stable_sort(reasons.begin(), reasons.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  std::vector<std::string> out;
  for (const auto& [reason, tasks] : reasons) {
    out.push_back(std::to_string(tasks.size()) + " " + reason + ": tasks " + FormatTaskList(tasks));
  }
  if (std::string eta = EtaLine(job, now_ms); !eta.empty()) out.push_back(eta);
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
