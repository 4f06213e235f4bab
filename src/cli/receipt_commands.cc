// `idlegrid receipt`: fetch an attempt's signed receipt, and verify one
// offline with public keys only (docs/receipts.md).
#include <google/protobuf/util/json_util.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <iostream>

#include "cli/commands.h"
#include "cli/gpu_usage_format.h"
#include "cli/support.h"
#include "common/fs.h"
#include "common/grpc_status.h"
#include "receipt/receipt.h"
#include "receipt/receipt_json.h"

namespace idlegrid::cli {
namespace {

std::string Seconds(uint64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llu.%03llu s", static_cast<unsigned long long>(ms / 1000),
                static_cast<unsigned long long>(ms % 1000));
  return buf;
}

void PrintReceipt(const v1::Receipt& r) {
  const v1::ReceiptStatement& s = r.statement();
  const v1::Metering& m = s.metering();
  std::cout << "receipt: job " << s.job_id() << " task " << s.task_index() << " attempt " << s.attempt_id()
            << " (lease epoch " << s.lease_epoch() << ")\n"
            << "  node      " << s.node_id() << " (key " << receipt::Fingerprint(r.node_public_key()) << "), provider "
            << r.provider() << "\n"
            << "  ended     " << r.state() << (r.failure_reason().empty() ? "" : " (" + r.failure_reason() + ")")
            << ", exit code " << s.exit_code() << "\n"
            << "  times     assigned " << r.assigned_at_ms() << ", started " << r.started_at_ms() << ", finished "
            << r.finished_at_ms() << " (coordinator, ms since epoch)\n"
            << "  metered   run " << Seconds(m.run_ms()) << ", CPU " << Seconds(m.cpu_millis())
            << (m.cpu_source().empty() ? " (not measured)" : " (" + m.cpu_source() + ")") << ", GPU "
            << Seconds(m.gpu_millis()) << ", " << m.bytes_in() << " bytes in, " << m.bytes_out() << " bytes out\n";
  for (const auto& g : m.gpus()) std::cout << "  gpu       " << FormatGpuUsage(g) << "\n";
  std::cout << "  price     " << r.pricing_rule() << " " << r.price_per_hour_micro() << " micro-credits/h, charge "
            << r.charge_micro() << " micro-credits\n"
            << "  ran       image " << s.provenance().image_config_digest() << " with " << s.provenance().driver()
            << "/" << s.provenance().runtime() << ", spec " << s.provenance().job_spec_digest() << "\n";
  for (const auto& in : s.input_digests()) std::cout << "  input     " << in << "\n";
  for (const auto& out : s.outputs()) {
    std::cout << "  output    " << out.path() << " " << out.digest() << " (" << out.size() << " bytes)\n";
  }
  std::cout << "  signed by node " << s.node_id() << ", countersigned by coordinator key "
            << receipt::Fingerprint(r.coordinator_public_key()) << "\n";
}

// The pinned coordinator key: the flag, else the client config's
// receipt_key_fingerprint (the coordinator writes it to DATA_DIR/client.yaml).
Result<std::pair<std::string, std::string>> PinnedFingerprint(const std::string& flag, const std::string& config_file) {
  if (!flag.empty()) return std::make_pair(flag, std::string("--coordinator-key-fingerprint"));
  std::string file = config_file;
  if (file.empty() && std::getenv("IDLEGRID_CONFIG")) file = std::getenv("IDLEGRID_CONFIG");
  if (file.empty() && std::getenv("HOME")) file = std::string(std::getenv("HOME")) + "/.config/idlegrid/config.yaml";
  if (!file.empty() && PathExists(file)) {
    try {
      YAML::Node y = YAML::LoadFile(file);
      if (y["receipt_key_fingerprint"]) {
        return std::make_pair(y["receipt_key_fingerprint"].as<std::string>(), file);
      }
    } catch (const YAML::Exception& e) {
      return Status::InvalidArgument(file + ": " + e.what());
    }
  }
  return Status::InvalidArgument(
      "no coordinator key to verify against: pass --coordinator-key-fingerprint sha256:<hex> (the coordinator logs "
      "it and writes it to DATA_DIR/receipt-key.fingerprint), or set receipt_key_fingerprint in the client config");
}

}  // namespace

int Receipt(const CommonFlags& f, const ReceiptQuery& q) {
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::GetReceiptRequest req;
  req.set_job_id(q.job_id);
  if (q.task_index) req.set_task_index(*q.task_index);
  req.set_attempt_id(q.attempt_id);
  v1::Receipt r;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->GetReceipt(ctx.get(), req, &r));
  if (!st.ok()) return Fail(st);
  const std::string json = receipt::ReceiptJson(r);
  if (!q.output_file.empty()) {
    if (Status w = WriteFileAtomic(q.output_file, json, 0644); !w.ok()) return Fail(w);
    std::cerr << "receipt of attempt " << r.statement().attempt_id() << " saved to " << q.output_file << "\n";
  }
  if (f.json) {
    std::cout << json;
  } else if (q.output_file.empty()) {
    PrintReceipt(r);
  }
  return 0;
}

int ReceiptVerify(const CommonFlags& f, const std::string& file, const std::string& fingerprint) {
  auto pinned = PinnedFingerprint(fingerprint, f.config_file);
  if (!pinned.ok()) return Fail(pinned.status());
  auto text = ReadFile(file);
  if (!text.ok()) return Fail(text.status());
  v1::Receipt r;
  auto parsed = google::protobuf::util::JsonStringToMessage(*text, &r);
  if (!parsed.ok()) {
    return Fail(Status::InvalidArgument(file + " is not a receipt: " + std::string(parsed.message())));
  }
  auto checked = receipt::VerifyReceipt(r, pinned->first);
  if (!checked.ok()) {
    std::cout << "receipt " << file << " does NOT verify\n";
    return Fail(checked.status());
  }
  std::cout << "receipt " << file << " verifies (coordinator key pinned by " << pinned->second
            << "; nothing was contacted)\n";
  for (const auto& line : *checked) std::cout << "  ok: " << line << "\n";
  return 0;
}

}  // namespace idlegrid::cli
