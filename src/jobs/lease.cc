#include "jobs/lease.h"

#include <set>
#include <string>

#include "common/digest.h"
#include "jobs/task_state.h"
#include "ledger/plans.h"

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
    uint64_t total = 0;
    for (int c = 0; c < f.chunks_size(); ++c) {
      const v1::ArtifactRef& chunk = f.chunks(c);
      const std::string at = where + " chunk " + std::to_string(c);
      if (!IsValidDigest(chunk.digest())) return Status::InvalidArgument(at + ": digest must be sha256:<64 hex>");
      if (chunk.size() == 0 || chunk.size() > kCheckpointChunkBytes) {
        return Status::InvalidArgument(at + ": size must be 1.." + std::to_string(kCheckpointChunkBytes));
      }
      total += chunk.size();
    }
    if (f.chunks_size() > 0 && total != f.size()) {
      return Status::InvalidArgument(where + ": chunks add up to " + std::to_string(total) + " bytes, not its size " +
                                     std::to_string(f.size()));
    }
  }
  return Status::Ok();
}

std::vector<std::string> CheckpointBlobs(const v1::OutputFile& f) {
  std::vector<std::string> out;
  for (const v1::ArtifactRef& c : f.chunks()) out.push_back(c.digest());
  if (out.empty()) out.push_back(f.digest());
  return out;
}

int64_t WorkLostMs(const v1::Attempt& a) {
  if (a.state() == v1::SUCCEEDED || !IsTerminal(a.state()) || a.started_at_ms() == 0) return 0;
  int64_t from = std::max(a.started_at_ms(), a.last_checkpoint_at_ms());
  return a.finished_at_ms() > from ? a.finished_at_ms() - from : 0;
}

double AttemptCost(const v1::Attempt& a, int64_t now_ms) {
  if (a.placement().price_per_hour() <= 0) return 0;
  const int64_t run_ms = ledger::BilledRunMs(a.started_at_ms(), IsTerminal(a.state()) ? a.finished_at_ms() : now_ms);
  return a.placement().price_per_hour() * static_cast<double>(run_ms) / 3.6e6;
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
