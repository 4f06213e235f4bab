#pragma once
// Signed receipts (docs/receipts.md): signing, countersigning and
// offline verification of an attempt's receipt, and its integer charge.
// Pure: no files, no clock, no network; keys are passed in.
//
// The signed bytes are domain-separated, so a receipt signature can never be
// taken for another Ed25519 signature by the same key (a node's
// advertisement, an image signature), nor a statement for a countersignature:
//   node:        "idlegrid-receipt-statement-v1\n"   + CanonicalJson(statement)
//   coordinator: "idlegrid-receipt-countersign-v1\n" + CanonicalJson(receipt
//                with coordinator_signature cleared)
// The statement names its attempt id and lease epoch, so a node's signature
// is bound to that one lease of that one attempt. The countersignature
// covers the statement, the node's key and signature, and everything the
// coordinator added, including its own public key.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "advert/node_key.h"
#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::receipt {

inline constexpr char kStatementDomain[] = "idlegrid-receipt-statement-v1\n";
inline constexpr char kCountersignDomain[] = "idlegrid-receipt-countersign-v1\n";
inline constexpr uint32_t kReceiptVersion = 1;

// The exact bytes a node signs / the coordinator countersigns (see above).
// InvalidArgument when the message cannot be encoded canonically (unknown fields).
Result<std::string> StatementBytes(const v1::ReceiptStatement& statement);
Result<std::string> CountersignBytes(const v1::Receipt& receipt);

// The node's 64-byte signature over StatementBytes(statement).
Result<std::string> SignStatement(const advert::NodeKey& node_key, const v1::ReceiptStatement& statement);

// What the coordinator expects of a statement arriving with an EXITED report:
// the attempt and lease the report is for, and the node that sent it.
struct StatementExpectation {
  std::string job_id;
  uint32_t task_index = 0;
  std::string attempt_id;
  uint64_t lease_epoch = 0;
  std::string node_id;
  std::string enrolled_public_key;  // the node's key as the coordinator enrolled it
};

// Ok when `statement` is for the expected attempt, lease and node and
// `signature` is the enrolled key's over it. PermissionDenied otherwise, the
// message naming what did not match (a forged or misdirected receipt).
Status CheckStatement(const v1::ReceiptStatement& statement, const std::string& signature,
                      const StatementExpectation& expected);

// Sets receipt->coordinator_public_key to `coordinator_key`'s and signs.
// The receipt's other fields must be final.
Status Countersign(const advert::NodeKey& coordinator_key, v1::Receipt* receipt);

// "sha256:<64 hex>" of a raw public key: what users pin the coordinator's key
// by (advert::KeyFingerprint).
std::string Fingerprint(const std::string& public_key);

// Checks `receipt` with public keys only: its node key derives its node id,
// the node's signature, the coordinator's key against `pinned_fingerprint`
// ("sha256:<hex>", or the bare hex), the countersignature, and the charge
// arithmetic. Returns what was checked, one line each, in that order; on the
// first failure PermissionDenied (InvalidArgument for a malformed receipt or
// fingerprint) whose message names the check that failed.
Result<std::vector<std::string>> VerifyReceipt(const v1::Receipt& receipt, std::string_view pinned_fingerprint);

// The charge for `run_ms` at `price_per_hour_micro`: price x run time / 1 h,
// rounded DOWN to a whole micro-credit (the requester never pays for a
// fraction it did not use; the provider loses < 1 micro-credit per attempt).
// Exact 128-bit intermediate; negative inputs charge 0; saturates at INT64_MAX.
// It is ledger::ChargeFor, so a receipt names what the books charge.
int64_t ChargeMicro(int64_t price_per_hour_micro, int64_t run_ms);

// Credits (a placement record's double) to micro-credits, rounded to the
// nearest (ledger::MicrosFromCredits); negative and non-finite values give 0.
int64_t MicroFromCredits(double credits);

}  // namespace idlegrid::receipt
