// `receipt` and `receipt verify` (receipt_commands.cc, docs/receipts.md).
#include <iostream>
#include <memory>
#include <string>

#include "cli/command_groups.h"
#include "cli/commands.h"

namespace idlegrid::cli {
namespace {

struct ReceiptFlags {
  ReceiptQuery query;
  uint32_t task = 0;
  CLI::Option* task_opt = nullptr;  // --task: given or not
  std::string file, fingerprint;
};

int ReceiptCommand(const CommonFlags& common, ReceiptFlags& f) {
  if (f.query.job_id.empty()) {
    std::cerr << "receipt: a job is required (or: receipt verify FILE)\n";
    return 2;
  }
  if (f.task_opt->count() > 0) f.query.task_index = f.task;
  return Receipt(common, f.query);
}

}  // namespace

void RegisterReceiptCommands(CLI::App& app, CommandRegistry& reg, CommonFlags& common) {
  auto f = std::make_shared<ReceiptFlags>();
  auto* receipt =
      app.add_subcommand("receipt", "an attempt's signed receipt: metering, price, provenance (docs/receipts.md)");
  receipt->add_option("job", f->query.job_id, "the job (its latest attempt with a receipt)");
  f->task_opt = receipt->add_option("--task", f->task, "that task's latest attempt");
  receipt->add_option("--attempt", f->query.attempt_id, "that attempt");
  receipt->add_option("-o,--output", f->query.output_file, "save it (JSON) to this file");
  AddClientFlags(receipt, common);
  auto* verify = receipt->add_subcommand("verify", "verify a saved receipt offline, with public keys only");
  verify->add_option("file", f->file, "a receipt saved with `receipt JOB -o FILE`")->required();
  verify->add_option("--coordinator-key-fingerprint", f->fingerprint,
                     "sha256:<hex> of the coordinator's receipt key (default: the client config's "
                     "receipt_key_fingerprint)");
  verify->add_option("--config", common.config_file, "client config YAML (env IDLEGRID_CONFIG)");

  reg.Add(verify, [f, &common] { return ReceiptVerify(common, f->file, f->fingerprint); });
  reg.Add(receipt, [f, &common] { return ReceiptCommand(common, *f); });
}

}  // namespace idlegrid::cli
