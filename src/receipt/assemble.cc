#include "receipt/assemble.h"

#include "ledger/plans.h"
#include "receipt/receipt.h"

namespace idlegrid::receipt {

v1::Receipt AssembleReceipt(const v1::ReceiptStatement& statement, const std::string& node_signature,
                            const std::string& node_public_key, const v1::Attempt& recorded,
                            const std::string& provider) {
  v1::Receipt r;
  r.set_version(kReceiptVersion);
  *r.mutable_statement() = statement;
  r.set_node_public_key(node_public_key);
  r.set_node_signature(node_signature);
  r.set_provider(provider);
  r.set_assigned_at_ms(recorded.assigned_at_ms());
  r.set_started_at_ms(recorded.started_at_ms());
  r.set_finished_at_ms(recorded.finished_at_ms());
  r.set_state(v1::TaskState_Name(recorded.state()));
  if (recorded.failure_reason() != v1::FAILURE_REASON_UNSPECIFIED) {
    r.set_failure_reason(v1::FailureReason_Name(recorded.failure_reason()));
  }
  r.set_pricing_rule(recorded.placement().pricing_rule());
  r.set_price_per_hour_micro(MicroFromCredits(recorded.placement().price_per_hour()));
  r.set_charge_micro(
      ChargeMicro(r.price_per_hour_micro(), ledger::BilledRunMs(recorded.started_at_ms(), recorded.finished_at_ms())));
  return r;
}

}  // namespace idlegrid::receipt
