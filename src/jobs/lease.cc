#include "jobs/lease.h"

#include <set>
#include <string>

#include "common/digest.h"
#include "jobs/task_state.h"

namespace idlegrid::jobs {

Status CheckLeaseEpoch(const v1::ReportAttemptRequest& report, uint64_t attempt_epoch, uint64_t current_epoch) {
  if (attempt_epoch == 0) return Status::Ok();
  if (report.lease_epoch() != 0 && report.lease_epoch() != attempt_epoch) {
    return Status::FailedPrecondition("lease epoch " + std::to_string(report.lease_epoch()) +
                                      " does not match attempt " + report.attempt_id() + " (epoch " +
                                      std::to_string(attempt_epoch) + "); report ignored");
  }
  // A cancelled attempt's stop confirmation is harmless however late it is.
  if (attempt_epoch < current_epoch && report.event() != v1::STOPPED) {
    return Status::FailedPrecondition("lease epoch " + std::to_string(attempt_epoch) + " of attempt " +
                                      report.attempt_id() + " was superseded by epoch " +
                                      std::to_string(current_epoch) + "; report ignored");
  }
  return Status::Ok();
}

namespace {

bool IsCleanRelativePath(const std::string& p) {
  if (p.empty() || p.front() == '/' || p.size() > 4096) return false;
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string::npos) end = p.size();
    std::string part = p.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return p.find('\0') == std::string::npos;
}

}  // namespace

Status ValidateCheckpointFiles(const google::protobuf::RepeatedPtrField<v1::OutputFile>& files) {
  std::set<std::string> seen;
  for (int i = 0; i < files.size(); ++i) {
    const auto& f = files[i];
    std::string where = "checkpoint file " + std::to_string(i) + " (" + f.path() + ")";
    if (!IsCleanRelativePath(f.path())) {
      return Status::InvalidArgument(where + ": path must be relative, without '.' or '..' parts");
    }
    if (!IsValidDigest(f.digest())) return Status::InvalidArgument(where + ": digest must be sha256:<64 hex>");
    if (!seen.insert(f.path()).second) return Status::InvalidArgument(where + ": listed twice");
  }
  return Status::Ok();
}

int64_t WorkLostMs(const v1::Attempt& a) {
  if (a.state() == v1::SUCCEEDED || !IsTerminal(a.state()) || a.started_at_ms() == 0) return 0;
  int64_t from = std::max(a.started_at_ms(), a.last_checkpoint_at_ms());
  return a.finished_at_ms() > from ? a.finished_at_ms() - from : 0;
}

double AttemptCost(const v1::Attempt& a, int64_t now_ms) {
  if (a.started_at_ms() == 0 || a.placement().price_per_hour() <= 0) return 0;
  int64_t end = IsTerminal(a.state()) ? a.finished_at_ms() : now_ms;
  if (end <= a.started_at_ms()) return 0;
  return a.placement().price_per_hour() * static_cast<double>(end - a.started_at_ms()) / 3.6e6;
}

double FillCosts(v1::Task* task, int64_t now_ms) {
  double total = 0;
  for (auto& a : *task->mutable_attempts()) {
    a.set_cost(AttemptCost(a, now_ms));
    total += a.cost();
  }
  return total;
}

}  // namespace idlegrid::jobs
