#include "e2e/history_check_support.h"

#include <algorithm>
#include <set>
#include <utility>

namespace idlegrid::testing {
namespace {

bool Live(v1::TaskState s) { return s == v1::ASSIGNED || s == v1::RUNNING; }
bool Terminal(v1::TaskState s) { return s == v1::SUCCEEDED || s == v1::FAILED || s == v1::CANCELLED || s == v1::LOST; }

struct Interval {
  int64_t from = 0, to = 0;
  double cpu = 0;
  std::string who;
};

// An attempt's times are taken by the coordinator just before the
// transaction that writes them: a placement's start can read a little
// earlier than the end, committed while that transaction waited, of the
// attempt whose room it took (1 ms seen under load). Overlaps shorter than
// this are that skew; the store's guard, not these times, decides admission.
constexpr int64_t kClockSkewMs = 250;

// The intervals' largest overlap, by a sweep over their ends (an end at the
// same instant as a start frees its capacity first), ends moved kClockSkewMs
// earlier.
std::pair<double, std::string> PeakOverlap(std::vector<Interval> intervals) {
  std::vector<std::pair<int64_t, double>> edges;
  for (const Interval& i : intervals) {
    edges.push_back({i.from, i.cpu});
    edges.push_back({std::max(i.from, i.to - kClockSkewMs), -i.cpu});
  }
  std::sort(edges.begin(), edges.end());
  double held = 0, peak = 0;
  int64_t at = 0;
  for (const auto& [t, d] : edges) {
    held += d;
    if (held > peak + 1e-9) {
      peak = held;
      at = t;
    }
  }
  std::string who;
  for (const Interval& i : intervals) {
    if (i.from <= at && at < i.to) {
      who += (who.empty() ? "" : ", ") + i.who + " [" + std::to_string(i.from - at) + ", +" +
             std::to_string(i.to - at) + " ms]";
    }
  }
  return {peak, who};
}

void CheckTask(const v1::Job& job, const v1::Task& t, int64_t now_ms, std::vector<std::string>& out,
               std::vector<Interval>& task_runs) {
  const std::string name = job.id() + "/" + std::to_string(t.index());
  if (!Terminal(t.state())) out.push_back(name + " did not end: " + v1::TaskState_Name(t.state()));
  if ((t.state() == v1::FAILED || t.state() == v1::LOST) && t.failure_reason() == v1::FAILURE_REASON_UNSPECIFIED &&
      t.message().empty()) {
    out.push_back(name + " " + v1::TaskState_Name(t.state()) + " without a reason");
  }
  int succeeded = 0;
  for (const v1::Attempt& a : t.attempts()) {
    succeeded += a.state() == v1::SUCCEEDED;
    if (Terminal(t.state()) && Live(a.state())) {
      out.push_back(name + " ended with attempt " + a.id() + " still " + v1::TaskState_Name(a.state()));
    }
    if (a.assigned_at_ms() == 0) continue;
    const int64_t end = Live(a.state()) || a.finished_at_ms() == 0 ? now_ms : a.finished_at_ms();
    task_runs.push_back({a.assigned_at_ms(), end, job.spec().resources().cpu(), a.id() + "@" + a.node_id()});
  }
  const bool verified = !job.spec().verification().mode().empty() && job.spec().verification().mode() != "none";
  if (t.state() == v1::SUCCEEDED && succeeded != 1 && !verified) {
    out.push_back(name + " SUCCEEDED with " + std::to_string(succeeded) + " successful attempts");
  }
  std::vector<Interval> unit = task_runs;
  for (Interval& i : unit) i.cpu = 1;
  if (auto [peak, who] = PeakOverlap(unit); peak > 1) {
    out.push_back(name + " had " + std::to_string(int(peak)) + " live attempts at once: " + who);
  }
}

}  // namespace

std::vector<std::string> CheckHistory(const std::vector<v1::Job>& jobs, const std::map<std::string, double>& node_cpus,
                                      int64_t now_ms) {
  std::vector<std::string> out;
  std::set<std::string> ids;
  std::map<std::string, std::vector<Interval>> by_node;
  for (const v1::Job& job : jobs) {
    for (const v1::Task& t : job.tasks()) {
      for (const v1::Attempt& a : t.attempts()) {
        if (!ids.insert(a.id()).second) out.push_back("attempt id " + a.id() + " appears twice");
      }
      std::vector<Interval> runs;
      CheckTask(job, t, now_ms, out, runs);
      for (Interval& i : runs) {
        const std::string node = i.who.substr(i.who.find('@') + 1);
        by_node[node].push_back(std::move(i));
      }
    }
  }
  for (auto& [node, runs] : by_node) {
    auto cpus = node_cpus.find(node);
    if (cpus == node_cpus.end()) {
      out.push_back("attempts on unknown node " + node);
      continue;
    }
    if (auto [peak, who] = PeakOverlap(runs); peak > cpus->second + 1e-9) {
      out.push_back("node " + node + " held " + std::to_string(peak) + " CPUs of " + std::to_string(cpus->second) +
                    " at once: " + who);
    }
  }
  return out;
}

}  // namespace idlegrid::testing
