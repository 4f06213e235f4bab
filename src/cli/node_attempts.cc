#include "cli/node_attempts.h"

#include <cstdio>
#include <ctime>
#include <iostream>

#include "cli/commands.h"
#include "cli/support.h"
#include "cli/table.h"
#include "common/clock.h"
#include "common/grpc_status.h"
#include "jobs/task_state.h"

namespace idlegrid::cli {

namespace {

std::string UtcTime(int64_t ms) {
  if (ms <= 0) return "-";
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string Seconds(int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(ms) / 1000.0);
  return buf;
}

}  // namespace

std::vector<std::vector<std::string>> NodeAttemptRows(const v1::ListNodeAttemptsResponse& page, int64_t now_ms) {
  std::vector<std::vector<std::string>> rows{
      {"STARTED (UTC)", "JOB/TASK", "ATTEMPT", "STATE", "REASON", "RAN", "COST"}};
  for (const auto& na : page.attempts()) {
    const v1::Attempt& a = na.attempt();
    const int64_t start = a.started_at_ms(), end = a.finished_at_ms();
    std::string state = jobs::StateName(a.state());
    const bool ran_to_end = start > 0 && end > 0 && a.state() != v1::CANCELLED && a.state() != v1::LOST;
    if (ran_to_end) state += " (exit " + std::to_string(a.exit_code()) + ")";
    std::string ran = start > 0 ? Seconds((end > 0 ? end : now_ms) - start) + (end > 0 ? "" : " so far") : "-";
    char cost[32];
    std::snprintf(cost, sizeof cost, "%.4f", a.cost());
    rows.push_back({UtcTime(start > 0 ? start : a.assigned_at_ms()),
                    na.job_id() + "/" + std::to_string(na.task_index()), a.id(), state,
                    a.failure_reason() == v1::FAILURE_REASON_UNSPECIFIED ? "-" : jobs::ReasonName(a.failure_reason()),
                    ran, a.cost() > 0 ? cost : "-"});
  }
  return rows;
}

int NodeAttempts(const CommonFlags& f, const std::string& node_id, uint32_t limit, const std::string& page_token) {
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::ListNodeAttemptsRequest req;
  req.set_node_id(node_id);
  req.set_limit(limit);
  req.set_page_token(page_token);
  v1::ListNodeAttemptsResponse page;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->ListNodeAttempts(ctx.get(), req, &page));
  if (!st.ok()) return Fail(st);
  if (f.json) {
    PrintJson(page);
    return 0;
  }
  std::cout << FormatTable(NodeAttemptRows(page, SystemClock::Get()->NowMs()));
  if (page.attempts_size() == 0)
    std::cout << (page_token.empty() ? "(no attempt has run here)\n" : "(no older attempt)\n");
  if (!page.next_page_token().empty()) {
    std::cout << "older: idlegrid nodes attempts " << node_id << " --page " << page.next_page_token() << "\n";
  }
  return 0;
}

}  // namespace idlegrid::cli
