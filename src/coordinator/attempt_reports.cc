// What agents report of their attempts (attempt_reports.h).
#include "coordinator/attempt_reports.h"

#include <spdlog/spdlog.h>

#include <map>
#include <optional>
#include <vector>

#include "common/failpoint.h"
#include "advert/node_key.h"
#include "jobs/lease.h"
#include "jobs/task_state.h"

namespace idlegrid::coordinator {
namespace {

// A report whose receipt statement was refused (forged or misdirected): the
// node's fault, and what it reported with it (outputs, exit) is not taken.
v1::ReportAttemptRequest ReceiptRefused(const v1::ReportAttemptRequest& report, const Status& why) {
  v1::ReportAttemptRequest out = report;
  out.set_event(v1::ERRORED);
  out.set_failure_reason(v1::PLATFORM_FAILURE);
  out.set_message("its receipt was refused: " + why.message());
  out.clear_outputs();
  out.clear_receipt_statement();
  out.clear_receipt_signature();
  return out;
}

// The job holds what its attempts made while it exists (artifact GC):
// outputs and every blob of a checkpoint.
std::vector<store::ArtifactRef> RefsToWhatItMade(const v1::Job& job, const v1::ReportAttemptRequest& request) {
  std::vector<store::ArtifactRef> refs;
  for (const auto& f : request.outputs()) refs.push_back({f.digest(), "job:" + job.id(), job.account(), 0});
  for (const auto& f : request.checkpoint()) {
    for (const std::string& blob : jobs::CheckpointBlobs(f))
      refs.push_back({blob, "job:" + job.id(), job.account(), 0});
  }
  return refs;
}

}  // namespace

Status AttemptReports::AttestNodeIdentity(const std::string& node_id, v1::Provenance* provenance) {
  std::string public_key = hooks_.public_key_of(node_id);
  if (public_key.empty()) {
    IG_ASSIGN_OR_RETURN(auto rec, store_->GetNode(node_id));
    if (rec) public_key = rec->public_key;
  }
  const std::string fingerprint = public_key.empty() ? "" : advert::KeyFingerprint(public_key);
  if (provenance->node_id() != node_id || provenance->node_key_fingerprint() != fingerprint) {
    spdlog::warn("node {} reported a provenance naming node {} (key {}); recorded as itself (key {})", node_id,
                 provenance->node_id().substr(0, 64), provenance->node_key_fingerprint().substr(0, 80), fingerprint);
  }
  provenance->set_node_id(node_id);
  provenance->set_node_key_fingerprint(fingerprint);
  return Status::Ok();
}

Status AttemptReports::Report(const std::string& node_id, const v1::ReportAttemptRequest& reported) {
  const v1::ReportAttemptRequest* report = &reported;
  v1::ReportAttemptRequest attested;
  if (reported.has_provenance()) {
    attested = reported;
    IG_RETURN_IF_ERROR(AttestNodeIdentity(node_id, attested.mutable_provenance()));
    report = &attested;
  }
  Status receipt_check = receipts_->CheckStatement(node_id, *report);
  if (!receipt_check.ok()) {
    spdlog::warn("node {}: {}; attempt {} fails as a platform failure", node_id, receipt_check.message(),
                 report->attempt_id().substr(0, 64));
    attested = ReceiptRefused(*report, receipt_check);
    report = &attested;
  }
  const v1::ReportAttemptRequest& request = *report;
  // Failpoints around the commit of each event (docs/reliability.md): a crash
  // before it loses the report (the agent resends it), after it the reply.
  if (IG_FAILPOINT("coordinator.report." + v1::AttemptEvent_Name(request.event()) + ".before_commit")) {
    return Status::Unavailable("failpoint: report not committed");
  }
  auto result = store_->ApplyAttemptReport(node_id, request, clock_->NowMs());
  if (!result.ok()) {
    spdlog::warn("report {} for attempt {} from node {} rejected: {}", v1::AttemptEvent_Name(request.event()),
                 request.attempt_id(), node_id, result.status().message());
    // Another node's attempt reads as a missing one: an agent learns nothing
    // about work that is not its own.
    if (result.status().code() == Code::kPermissionDenied) {
      return Status::NotFound("no attempt " + request.attempt_id() + " for this node");
    }
    return result.status();
  }
  const auto& o = result->outcome;
  const bool ended = o.changed && jobs::IsTerminal(o.attempt_state);
  const bool made = o.changed && (request.outputs_size() > 0 || request.checkpoint_size() > 0);
  // The job as this report left it, read once for what follows (the verdict
  // reads its own, under its lock).
  const bool receipt = o.changed && request.has_receipt_statement();
  std::optional<v1::Job> job;
  if (ended || made || receipt) {
    Result<v1::Job> read = store_->GetJob(result->job_id);
    if (read.ok()) {
      job = std::move(*read);
    } else if (made) {
      return read.status();  // its outputs must be held before the report is taken
    } else {
      spdlog::warn(
          "attempt {}: job {} not read after its report ({}): no receipt is issued; readiness and the "
          "ledger wait for their sweeps",
          request.attempt_id(), result->job_id, read.status().message());
    }
  }
  if (made) IG_RETURN_IF_ERROR(store_->AddArtifactRefs(RefsToWhatItMade(*job, request)));
  counters_->CountOutcome(o);
  counters_->TrackRun(result->job_id, result->index, o, clock_->NowMs());
  if (job && receipt) receipts_->Issue(node_id, *job, request);
  if (job && ended) hooks_.judge_readiness(*job);
  if (job && ended) hooks_.settle_ledger(*job);
  if (o.changed && o.hold_for_verdict) verification_->OnResultHeld(result->job_id, result->index);
  if (IG_FAILPOINT("coordinator.report." + v1::AttemptEvent_Name(request.event()) + ".after_commit")) {
    return Status::Unavailable("failpoint: report committed, reply lost");
  }
  if (o.changed) {
    spdlog::info("attempt {} ({}/{}) on {}: {} -> task {}{}", request.attempt_id(), result->job_id, result->index,
                 node_id, v1::AttemptEvent_Name(request.event()), jobs::StateName(o.task_state),
                 o.message.empty() ? "" : " (" + o.message + ")");
    hooks_.changed();
  } else if (request.event() == v1::CHECKPOINTED) {
    hooks_.changed();  // no state changed, but watchers see the new checkpoint now
  }
  return Status::Ok();
}

Status AttemptReports::AppendLogs(const std::string& node_id, const v1::AppendLogsRequest& request) {
  std::map<std::string, std::vector<v1::LogChunk>> by_job;
  std::map<std::string, store::Store::AttemptOwner> owners;
  for (const auto& chunk : request.chunks()) {
    auto it = owners.find(chunk.attempt_id());
    if (it == owners.end()) {
      IG_ASSIGN_OR_RETURN(auto owner, store_->GetAttemptOwner(chunk.attempt_id()));
      if (owner.node_id != node_id) {
        spdlog::warn("logs for attempt {} from node {} refused: assigned to another node", chunk.attempt_id(), node_id);
        return Status::NotFound("no attempt " + chunk.attempt_id() + " for this node");
      }
      it = owners.emplace(chunk.attempt_id(), owner).first;
    }
    v1::LogChunk c = chunk;
    c.set_task_index(it->second.index);
    by_job[it->second.job_id].push_back(std::move(c));
  }
  for (const auto& [job, chunks] : by_job) IG_RETURN_IF_ERROR(store_->AppendLogs(job, chunks, log_cap_));
  hooks_.changed();
  return Status::Ok();
}

}  // namespace idlegrid::coordinator
