#pragma once
// What an operator sets when starting a coordinator (coordinator_server.cc
// fills it from flags and the policy file); every service takes the parts it
// needs, constant after construction.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "advert/node_key.h"
#include "auth/credentials.h"
#include "auth/rate_limit.h"
#include "coordinator/ledger_shell.h"
#include "image/signature.h"
#include "jobs/log_cap.h"
#include "readiness/gpu_readiness.h"
#include "registry/allow_list.h"
#include "sched/data_policy.h"
#include "sched/policy.h"
#include "verify/spec.h"

namespace idlegrid::coordinator {

struct Options {
  int heartbeat_interval_ms = 5000;
  int heartbeat_margin = 3;           // offline after interval * margin of silence
  int dispatch_period_ms = 1000;      // timeouts are checked at least this often
  bool allow_simulated_gpus = false;  // accept advertisements with simulated devices (tests, demos)
  // Readiness benchmark: kernel rounds per run, and the slowest score (rounds/s)
  // still taken as an honest CPU; a slower one is implausible.
  uint64_t bench_iterations = 20'000'000;
  double min_cpu_score = 5'000'000;
  // GPU readiness benchmark: rounds per device thread (see
  // readiness::kDefaultGpuBenchRounds); tests lower it for the fake driver.
  uint64_t gpu_bench_rounds = readiness::kDefaultGpuBenchRounds;
  int bench_retry_ms = 300'000;       // a failed benchmark is retried after this long
  int ack_timeout_ms = 10'000;        // an assignment not acknowledged by then goes elsewhere
  sched::PolicyConfig policies;       // scheduling policies (built-ins unless a policy file replaced them)
  sched::DataPolicy data_policy;      // data classes and trusted nodes (built-ins unless the policy file has them)
  jobs::LogCap log_cap;               // per task: the first and last bytes of output kept
  auth::Quota default_quota;          // per account, where its own is 0 (0 here: no limit)
  auth::RateLimitConfig rate_limits;  // per API token, and failed authentications per peer
  uint32_t default_retention_seconds = 7 * 24 * 3600;  // jobs that name none
  // Fair share between accounts (docs/scheduling.md): account -> weight; a
  // missing account weighs 1. The hook the accounts table fills.
  std::map<std::string, double> account_weights;
  // Image signatures (docs/containment.md, Signatures). With require_signed_images, a job
  // is refused at submit unless its image carries a valid signature by one
  // of trusted_image_keys.
  bool require_signed_images = false;
  std::vector<image::ImagePublicKey> trusted_image_keys;
  // Signs the readiness benchmark images this coordinator builds, so nodes
  // that require signed images can run them if their owner trusts it.
  std::optional<image::ImageSigningKey> readiness_image_key;
  // OCI registries jobs may name images from, and whether a tag is resolved
  // at submit (docs/registries.md); none by default.
  registry::OperatorRegistries registries;
  // Hosts jobs' and workflows' callback URLs may name ("HOST" or
  // "HOST:PORT", docs/webhooks.md); none by default: callbacks are refused.
  std::vector<std::string> webhook_allow;
  // The ledger (issue 13, docs/ledger.md): off by default; on, a job must set
  // maxCost, which is escrowed from its account at submit, succeeded attempts
  // are charged and what is left is refunded when the job ends.
  LedgerOptions ledger;
  // Countersigns attempts' receipts (docs/receipts.md); none: exit reports'
  // statements are still checked, but no receipt is issued.
  std::optional<advert::NodeKey> receipt_key;
  // Result verification (docs/verification.md): the default mode for jobs
  // that name none (`none` here: a one-machine grid has one provider, and
  // replicas need several) and the parameters a job may leave unset.
  verify::VerificationPolicy verification = DefaultVerification();
  static verify::VerificationPolicy DefaultVerification() {
    verify::VerificationPolicy p;
    p.default_mode = verify::Mode::kNone;
    return p;
  }
};

}  // namespace idlegrid::coordinator
