#include "receipt/receipt.h"

#include "ledger/accounts.h"
#include "ledger/plans.h"

#include <sodium.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "receipt/canonical.h"

namespace idlegrid::receipt {
namespace {

constexpr size_t kPublicKeyBytes = crypto_sign_PUBLICKEYBYTES;
constexpr size_t kSignatureBytes = crypto_sign_BYTES;

bool SignatureVerifies(const std::string& public_key, const std::string& message, const std::string& signature) {
  if (public_key.size() != kPublicKeyBytes || signature.size() != kSignatureBytes) return false;
  if (sodium_init() < 0) std::abort();
  return crypto_sign_verify_detached(reinterpret_cast<const unsigned char*>(signature.data()),
                                     reinterpret_cast<const unsigned char*>(message.data()), message.size(),
                                     reinterpret_cast<const unsigned char*>(public_key.data())) == 0;
}

// "sha256:<lowercase hex>" from what a user typed: either form, any case.
Result<std::string> NormalizeFingerprint(std::string_view typed) {
  std::string fp(typed);
  for (char& c : fp) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (fp.rfind("sha256:", 0) != 0) fp = "sha256:" + fp;
  const std::string hex = fp.substr(7);
  bool is_hex = hex.size() == 64;
  for (char c : hex) is_hex = is_hex && std::isxdigit(static_cast<unsigned char>(c));
  if (!is_hex) {
    return Status::InvalidArgument("coordinator key fingerprint \"" + std::string(typed.substr(0, 80)) +
                                   "\" is not sha256:<64 hex digits>");
  }
  return fp;
}

std::string Short(const std::string& fp) { return fp.substr(0, 7 + 16); }

}  // namespace

std::string Fingerprint(const std::string& public_key) { return advert::KeyFingerprint(public_key); }

Result<std::string> StatementBytes(const v1::ReceiptStatement& statement) {
  IG_ASSIGN_OR_RETURN(std::string body, CanonicalJson(statement));
  return kStatementDomain + body;
}

Result<std::string> CountersignBytes(const v1::Receipt& receipt) {
  v1::Receipt unsigned_receipt = receipt;
  unsigned_receipt.clear_coordinator_signature();
  IG_ASSIGN_OR_RETURN(std::string body, CanonicalJson(unsigned_receipt));
  return kCountersignDomain + body;
}

Result<std::string> SignStatement(const advert::NodeKey& node_key, const v1::ReceiptStatement& statement) {
  IG_ASSIGN_OR_RETURN(std::string bytes, StatementBytes(statement));
  return node_key.Sign(bytes);
}

Status CheckStatement(const v1::ReceiptStatement& s, const std::string& signature, const StatementExpectation& e) {
  auto mismatch = [&](const std::string& what, const std::string& got, const std::string& want) {
    return Status::PermissionDenied("receipt statement for attempt " + e.attempt_id + " names " + what + " " +
                                    got.substr(0, 80) + ", not " + want);
  };
  if (s.attempt_id() != e.attempt_id) return mismatch("attempt", s.attempt_id(), e.attempt_id);
  if (s.lease_epoch() != e.lease_epoch) {
    return mismatch("lease epoch", std::to_string(s.lease_epoch()), std::to_string(e.lease_epoch));
  }
  if (s.job_id() != e.job_id) return mismatch("job", s.job_id(), e.job_id);
  if (s.task_index() != e.task_index) {
    return mismatch("task", std::to_string(s.task_index()), std::to_string(e.task_index));
  }
  if (s.node_id() != e.node_id) return mismatch("node", s.node_id(), e.node_id);
  const std::string fingerprint = Fingerprint(e.enrolled_public_key);
  if (s.has_provenance() && s.provenance().node_key_fingerprint() != fingerprint) {
    return mismatch("node key", s.provenance().node_key_fingerprint(), "the enrolled " + fingerprint);
  }
  IG_ASSIGN_OR_RETURN(std::string bytes, StatementBytes(s));
  if (!SignatureVerifies(e.enrolled_public_key, bytes, signature)) {
    return Status::PermissionDenied("receipt signature for attempt " + e.attempt_id + " does not verify with node " +
                                    e.node_id + "'s enrolled key " + Short(fingerprint));
  }
  return Status::Ok();
}

Status Countersign(const advert::NodeKey& coordinator_key, v1::Receipt* receipt) {
  receipt->set_coordinator_public_key(coordinator_key.public_key());
  IG_ASSIGN_OR_RETURN(std::string bytes, CountersignBytes(*receipt));
  receipt->set_coordinator_signature(coordinator_key.Sign(bytes));
  return Status::Ok();
}

Result<std::vector<std::string>> VerifyReceipt(const v1::Receipt& r, std::string_view pinned_fingerprint) {
  IG_ASSIGN_OR_RETURN(const std::string pinned, NormalizeFingerprint(pinned_fingerprint));
  std::vector<std::string> checked;
  if (r.version() != kReceiptVersion) {
    return Status::InvalidArgument("receipt version " + std::to_string(r.version()) + " is not " +
                                   std::to_string(kReceiptVersion) + " (the one this idlegrid verifies)");
  }
  const v1::ReceiptStatement& s = r.statement();
  const std::string& node_key = r.node_public_key();
  if (node_key.size() != kPublicKeyBytes) {
    return Status::InvalidArgument("node key is " + std::to_string(node_key.size()) + " bytes, not 32");
  }
  const std::string node_fp = Fingerprint(node_key);
  const std::string key_node_id = advert::NodeIdFromPublicKey(node_key);
  if (s.node_id() != key_node_id) {
    return Status::PermissionDenied("node key " + Short(node_fp) + " is node " + key_node_id +
                                    ", but the statement names node " + s.node_id().substr(0, 80));
  }
  if (s.has_provenance() && s.provenance().node_key_fingerprint() != node_fp) {
    return Status::PermissionDenied("provenance names node key " + s.provenance().node_key_fingerprint().substr(0, 80) +
                                    ", not the receipt's node key " + node_fp);
  }
  checked.push_back("node key " + node_fp + " is node " + key_node_id);
  IG_ASSIGN_OR_RETURN(std::string statement_bytes, StatementBytes(s));
  if (!SignatureVerifies(node_key, statement_bytes, r.node_signature())) {
    return Status::PermissionDenied("node signature does not verify with node " + key_node_id +
                                    "'s key: the statement was altered, or signed by another key");
  }
  checked.push_back("node " + key_node_id + " signed attempt " + s.attempt_id() + " (lease epoch " +
                    std::to_string(s.lease_epoch()) + ") of job " + s.job_id() + " task " +
                    std::to_string(s.task_index()));
  const std::string coordinator_fp = Fingerprint(r.coordinator_public_key());
  if (r.coordinator_public_key().size() != kPublicKeyBytes || coordinator_fp != pinned) {
    return Status::PermissionDenied("coordinator key " + coordinator_fp + " is not the pinned key " + pinned);
  }
  checked.push_back("coordinator key is the pinned " + pinned);
  IG_ASSIGN_OR_RETURN(std::string countersigned, CountersignBytes(r));
  if (!SignatureVerifies(r.coordinator_public_key(), countersigned, r.coordinator_signature())) {
    return Status::PermissionDenied(
        "coordinator signature does not verify: the receipt was altered after it was countersigned, or "
        "countersigned by another key");
  }
  checked.push_back("coordinator countersigned it (state " + r.state() + ", provider " + r.provider() + ")");
  const int64_t run_ms = ledger::BilledRunMs(r.started_at_ms(), r.finished_at_ms());
  const int64_t charge = ChargeMicro(r.price_per_hour_micro(), run_ms);
  if (r.charge_micro() != charge) {
    return Status::PermissionDenied("charge " + std::to_string(r.charge_micro()) + " micro-credits is not " +
                                    std::to_string(r.price_per_hour_micro()) + "/h x " + std::to_string(run_ms) +
                                    " ms = " + std::to_string(charge));
  }
  checked.push_back("charge " + std::to_string(charge) +
                    " micro-credits = " + std::to_string(r.price_per_hour_micro()) + " micro-credits/h x " +
                    std::to_string(run_ms) + " ms, rounded down");
  return checked;
}

// The ledger's rules, so a receipt names exactly what the books charge.
int64_t ChargeMicro(int64_t price_per_hour_micro, int64_t run_ms) {
  if (price_per_hour_micro <= 0 || run_ms <= 0) return 0;
  auto charge = ledger::ChargeFor(price_per_hour_micro, run_ms);
  return charge.ok() ? *charge : 0;
}

int64_t MicroFromCredits(double credits) {
  if (!std::isfinite(credits) || credits <= 0) return 0;
  auto micros = ledger::MicrosFromCredits(credits);
  return micros.ok() ? *micros : std::numeric_limits<int64_t>::max();
}

}  // namespace idlegrid::receipt
