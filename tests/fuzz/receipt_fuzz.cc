// Fuzzes receipt verification as `idlegrid receipt verify FILE` does it
// (cli/receipt_commands.cc): the file's JSON parsed into a v1::Receipt with
// google::protobuf::util::JsonStringToMessage, then receipt::VerifyReceipt,
// pinned to the receipt's own coordinator key so the checks past the pin are
// reached; receipt::CanonicalJson (the signed bytes) runs on it too.
// Invariants (receipt.h, receipt_json.h, canonical.h): the receipt survives
// ReceiptJson and a re-parse unchanged, with the same canonical bytes and the
// same verdict; a receipt that verifies lists its five checks, its statement
// passes CheckStatement against its own node key, and changing the statement
// or the coordinator's signature makes it fail.
#include <google/protobuf/util/json_util.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "receipt/canonical.h"
#include "receipt/receipt.h"
#include "receipt/receipt_json.h"

namespace {

namespace receipt = idlegrid::receipt;
namespace v1 = idlegrid::v1;
using idlegrid::fuzz::DeterministicBytes;

bool Verifies(const v1::Receipt& r) {
  return receipt::VerifyReceipt(r, receipt::Fingerprint(r.coordinator_public_key())).ok();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = idlegrid::fuzz::AsString(data, size);
  v1::Receipt r;
  if (!google::protobuf::util::JsonStringToMessage(text, &r).ok()) return 0;

  v1::Receipt back;
  FUZZ_CHECK(google::protobuf::util::JsonStringToMessage(receipt::ReceiptJson(r), &back).ok());
  FUZZ_CHECK(DeterministicBytes(back) == DeterministicBytes(r));
  auto canonical = receipt::CanonicalJson(r);
  auto canonical_back = receipt::CanonicalJson(back);
  FUZZ_CHECK(canonical.ok() == canonical_back.ok());
  if (canonical.ok()) FUZZ_CHECK(canonical.value() == canonical_back.value());

  auto checked = receipt::VerifyReceipt(r, receipt::Fingerprint(r.coordinator_public_key()));
  FUZZ_CHECK(checked.ok() == Verifies(back));
  if (!checked.ok()) return 0;
  FUZZ_CHECK(checked->size() == 5);

  const v1::ReceiptStatement& s = r.statement();
  receipt::StatementExpectation expected{s.job_id(),      s.task_index(), s.attempt_id(),
                                         s.lease_epoch(), s.node_id(),    r.node_public_key()};
  FUZZ_CHECK(receipt::CheckStatement(s, r.node_signature(), expected).ok());

  v1::Receipt altered = r;
  altered.mutable_statement()->set_job_id(s.job_id() + "x");
  FUZZ_CHECK(!Verifies(altered));
  altered = r;
  std::string signature = r.coordinator_signature();
  signature[0] = static_cast<char>(signature[0] ^ 1);
  altered.set_coordinator_signature(signature);
  FUZZ_CHECK(!Verifies(altered));
  return 0;
}
