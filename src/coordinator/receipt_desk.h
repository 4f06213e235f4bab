#pragma once
// Signed receipts (docs/receipts.md) as a service of its own: the node's
// statement in an EXITED report is checked against its enrolled key before
// the report is applied, then countersigned around what this coordinator
// recorded, and stored with the attempt; requesters read them back. No lock
// of its own (the store locks itself; the key is constant).
#include <optional>
#include <string>
#include <utility>

#include "advert/node_key.h"
#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "store/store.h"

namespace idlegrid::coordinator {

class ReceiptDesk {
 public:
  // `key` none: statements are still checked, but no receipt is issued.
  ReceiptDesk(store::Store* store, std::optional<advert::NodeKey> key) : store_(store), key_(std::move(key)) {}

  // An EXITED report's receipt statement checked against the node's
  // enrolled key (receipt::CheckStatement); Ok when it carries none. A
  // refusal is the node's fault: the caller turns the report into a
  // PLATFORM_FAILURE error, so its outputs are not accepted.
  Status CheckStatement(const std::string& node_id, const v1::ReportAttemptRequest& report);
  // After the exit was applied: countersigns the receipt around the checked
  // statement and stores it with the attempt. Failures are logged: the
  // attempt's outcome stands without a receipt.
  void Issue(const std::string& node_id, const v1::Job& job, const v1::ReportAttemptRequest& report);
  // The countersigned receipt of one of the job's attempts: `attempt_id`'s,
  // else the latest attempt with one of task `task_index` (if set), else of
  // the job. NotFound when there is none.
  Result<v1::Receipt> Get(const v1::GetReceiptRequest& request);

 private:
  // The node's enrolled key and provider account.
  Result<std::pair<std::string, std::string>> NodeKeyAndProvider(const std::string& node_id);

  store::Store* const store_;
  const std::optional<advert::NodeKey> key_;
};

}  // namespace idlegrid::coordinator
