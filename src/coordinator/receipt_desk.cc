// Signed receipts (receipt_desk.h, docs/receipts.md).
#include "coordinator/receipt_desk.h"

#include <spdlog/spdlog.h>

#include "receipt/assemble.h"
#include "receipt/receipt.h"

namespace idlegrid::coordinator {

Result<std::pair<std::string, std::string>> ReceiptDesk::NodeKeyAndProvider(const std::string& node_id) {
  IG_ASSIGN_OR_RETURN(auto rec, store_->GetNode(node_id));
  if (!rec || rec->public_key.empty()) return Status::NotFound("node " + node_id + " has no enrolled key");
  return std::make_pair(rec->public_key, rec->provider);
}

Status ReceiptDesk::CheckStatement(const std::string& node_id, const v1::ReportAttemptRequest& report) {
  if (!report.has_receipt_statement()) return Status::Ok();
  if (report.event() != v1::EXITED) {
    return Status::PermissionDenied("a receipt statement came with a " + v1::AttemptEvent_Name(report.event()) +
                                    " report; only an exit carries one");
  }
  auto node = NodeKeyAndProvider(node_id);
  if (!node.ok()) return Status::PermissionDenied(node.status().message());
  const v1::ReceiptStatement& s = report.receipt_statement();
  // Job and task follow from the attempt id; Issue compares them with
  // the stored attempt once the report has been applied.
  return receipt::CheckStatement(
      s, report.receipt_signature(),
      {s.job_id(), s.task_index(), report.attempt_id(), report.lease_epoch(), node_id, node->first});
}

void ReceiptDesk::Issue(const std::string& node_id, const v1::Job& job, const v1::ReportAttemptRequest& report) {
  if (!key_) return;
  const std::string& job_id = job.id();
  Status issued = [&]() -> Status {
    IG_ASSIGN_OR_RETURN(auto node, NodeKeyAndProvider(node_id));
    const v1::ReceiptStatement& s = report.receipt_statement();
    for (const auto& task : job.tasks()) {
      for (const auto& attempt : task.attempts()) {
        if (attempt.id() != report.attempt_id()) continue;
        if (s.job_id() != job_id || s.task_index() != task.index()) {
          return Status::PermissionDenied("its statement names task " + s.job_id().substr(0, 64) + "/" +
                                          std::to_string(s.task_index()) + ", not " + job_id + "/" +
                                          std::to_string(task.index()));
        }
        v1::Receipt r = receipt::AssembleReceipt(s, report.receipt_signature(), node.first, attempt, node.second);
        IG_RETURN_IF_ERROR(receipt::Countersign(*key_, &r));
        return store_->PutReceipt(attempt.id(), r);
      }
    }
    return Status::NotFound("the attempt is not in job " + job_id);
  }();
  if (!issued.ok()) {
    spdlog::warn("no receipt for attempt {} of node {}: {}", report.attempt_id(), node_id, issued.message());
  }
}

Result<v1::Receipt> ReceiptDesk::Get(const v1::GetReceiptRequest& request) {
  IG_ASSIGN_OR_RETURN(v1::Job job, store_->GetJob(request.job_id()));
  const v1::Attempt* latest = nullptr;
  for (const auto& task : job.tasks()) {
    if (request.has_task_index() && task.index() != request.task_index()) continue;
    for (const auto& attempt : task.attempts()) {
      if (!attempt.has_receipt()) continue;
      if (!request.attempt_id().empty() && attempt.id() != request.attempt_id()) continue;
      if (latest == nullptr || attempt.finished_at_ms() >= latest->finished_at_ms()) latest = &attempt;
    }
  }
  if (latest == nullptr) {
    std::string which = "job " + request.job_id();
    if (request.has_task_index()) which += " task " + std::to_string(request.task_index());
    if (!request.attempt_id().empty()) which += " attempt " + request.attempt_id().substr(0, 64);
    return Status::NotFound(which + " has no receipt (one is issued when an attempt's container exits)");
  }
  return latest->receipt();
}

}  // namespace idlegrid::coordinator
