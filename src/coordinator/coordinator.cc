#include "coordinator/coordinator.h"

#include <spdlog/spdlog.h>

#include "common/digest.h"

namespace idlegrid::coordinator {

namespace {

ImageCatalog::Options CatalogOptions(const Options& o) {
  return {o.require_signed_images, o.trusted_image_keys, o.readiness_image_key, o.registries};
}

}  // namespace

Coordinator::Coordinator(std::unique_ptr<store::Store> store, std::unique_ptr<artifacts::ArtifactStore> artifacts,
                         std::unique_ptr<sched::Scheduler> scheduler, std::string join_secret, Options options,
                         Clock* clock, std::unique_ptr<registry::RegistryClient> registry)
    : store_(std::move(store)),
      artifacts_(std::move(artifacts)),
      options_(std::move(options)),
      clock_(clock),
      registry_(std::move(registry)),
      tenancy_(store_.get(), clock, options_.default_quota),
      rate_limits_(options_.rate_limits),
      images_(store_.get(), artifacts_.get(), registry_.get(), clock, CatalogOptions(options_),
              [this] { changes_.Notify(); }),
      artifact_rights_(store_.get(), &images_, clock, join_secret),
      sender_(store_.get(), &images_, &artifact_rights_, &sessions_),
      ledger_(options_.ledger.enabled ? std::make_unique<LedgerShell>(store_.get(), options_.ledger.policy) : nullptr),
      ledger_requests_(store_.get(), ledger_.get(), clock),
      settler_(store_.get(), ledger_.get(), clock),
      receipts_(store_.get(), options_.receipt_key),
      account_terms_(store_.get(), clock_, options_.default_quota.max_running_tasks, options_.account_weights),
      standing_(store_.get(), options_.verification),
      retention_(store_.get(), artifacts_.get(), clock) {
  WireNodeSide(join_secret);
  WireRequesterSide(std::move(scheduler));
}

// Verification, attempt reports, the node table and the readiness service,
// which call one another through hooks (each reads the others lazily).
void Coordinator::WireNodeSide(const std::string& join_secret) {
  const auto changed = [this] { changes_.Notify(); };
  VerificationService::Hooks hooks;
  hooks.provider_of = [this](const std::string& node_id) { return nodes_->ProviderOf(node_id); };
  // Provider accounts that could still run a split task: those with a node
  // and those created but not joined yet (they may join and break the tie).
  hooks.provider_accounts = [this] {
    std::set<std::string> out = nodes_->ProviderAccounts();
    if (auto accounts = store_->ListAccounts(); accounts.ok()) {
      for (const auto& a : *accounts) {
        if (a.role == "provider") out.insert(a.name);
      }
    }
    return out;
  };
  hooks.verdict_written = [this](const std::string& job_id) { settler_.SettleJob(job_id); };
  hooks.changed = changed;
  const int64_t backtrack_window_ms =
      ledger_ ? options_.ledger.policy.dispute_window_ms : VerificationService::kDefaultBacktrackWindowMs;
  verification_ = std::make_unique<VerificationService>(store_.get(), artifacts_.get(), ledger_.get(), clock_,
                                                        options_.verification, backtrack_window_ms, std::move(hooks));
  AttemptReports::Hooks report_hooks;
  report_hooks.public_key_of = [this](const std::string& node_id) { return nodes_->PublicKeyOf(node_id); };
  report_hooks.judge_readiness = [this](const v1::Job& job) { readiness_->Judge(job); };
  report_hooks.settle_ledger = [this](const v1::Job& job) { settler_.SettleJob(job); };
  report_hooks.changed = changed;
  attempts_ = std::make_unique<AttemptReports>(store_.get(), &receipts_, &counters_, verification_.get(), clock_,
                                               options_.log_cap, std::move(report_hooks));
  NodeTable::Hooks node_hooks;
  node_hooks.report_attempt = [this](const std::string& node_id, const v1::ReportAttemptRequest& report) {
    return attempts_->Report(node_id, report);
  };
  node_hooks.resend = [this](const store::NewAttempt& attempt) { return sender_.Send(attempt); };
  node_hooks.judge_readiness = [this](const std::string& job_id) { readiness_->Judge(job_id); };
  node_hooks.forget_readiness = [this](const std::string& node_id) { readiness_->ForgetNode(node_id); };
  node_hooks.cpu_bench_error = [this] { return readiness_->CpuBenchError(); };
  node_hooks.gpu_bench_error = [this] { return readiness_->GpuBenchError(); };
  node_hooks.readiness_key_untrusted = [this](const v1::Advertisement& ad) {
    return images_.ReadinessKeyUntrusted(ad);
  };
  node_hooks.changed = changed;
  nodes_ = std::make_unique<NodeTable>(store_.get(), clock_, options_, Sha256Digest(join_secret), &tenancy_, &sessions_,
                                       &counters_, std::move(node_hooks));
  readiness_ = std::make_unique<ReadinessBenchmarks>(
      store_.get(), artifacts_.get(), &images_, clock_,
      ReadinessBenchmarks::Options{options_.bench_iterations, options_.min_cpu_score, options_.gpu_bench_rounds,
                                   options_.bench_retry_ms},
      nodes_->ReadinessHooks());
}

// Jobs, workflows, the dispatcher and the reports, which read the node side.
void Coordinator::WireRequesterSide(std::unique_ptr<sched::Scheduler> scheduler) {
  const auto changed = [this] { changes_.Notify(); };
  JobRequests::Hooks job_hooks;
  job_hooks.data_policy = [this] { return nodes_->DataPolicy(); };
  job_hooks.fill_waiting = [this](v1::Job* job) { dispatcher_->FillWaiting(job); };
  job_hooks.stop_attempts = [this](const std::vector<store::ActiveAttempt>& stopped) {
    // Each attempt's node is told to stop it (one not connected learns at its next heartbeat).
    for (const auto& a : stopped) {
      v1::Command cmd;
      cmd.mutable_cancel()->set_attempt_id(a.attempt_id);
      cmd.mutable_cancel()->set_reason("cancelled by user");
      sessions_.Push(a.node_id, std::move(cmd));
    }
  };
  job_hooks.settle_ledger = [this](const std::string& job_id) { settler_.SettleJob(job_id); };
  job_hooks.prepare_callback = [this](v1::JobSpec* spec) {
    return webhooks_->Prepare(spec->callback_url(), spec->mutable_callback_secret());
  };
  job_hooks.register_callback = [this](const std::string& job_id, const v1::JobSpec& spec) {
    return webhooks_->Register("job", job_id, spec.callback_url(), spec.callback_secret());
  };
  job_hooks.changed = changed;
  job_hooks.version = [this] { return changes_.version(); };
  job_hooks.wait_for_change = [this](uint64_t known, int wait_ms) { return changes_.WaitForChange(known, wait_ms); };
  WebhookDesk::Hooks webhook_hooks;
  webhook_hooks.job = [this](const std::string& job_id) {
    v1::GetJobRequest summary;  // state and summary, no tasks
    summary.set_job_id(job_id);
    summary.set_paged(true);
    return jobs_->Get(summary);
  };
  webhook_hooks.workflow = [this](const std::string& workflow_id) { return workflows_->Get(workflow_id); };
  webhooks_ =
      std::make_unique<WebhookDesk>(store_.get(), &poster_, clock_, options_.webhook_allow, std::move(webhook_hooks));
  jobs_ = std::make_unique<JobRequests>(
      store_.get(), artifacts_.get(), &images_, &tenancy_, verification_.get(), ledger_.get(), &retention_, clock_,
      JobRequests::Settings{options_.default_retention_seconds, options_.policies}, std::move(job_hooks));
  workflows_ = std::make_unique<WorkflowService>(store_.get(), clock_, jobs_.get(), webhooks_.get(),
                                                 options_.default_retention_seconds);
  dispatcher_ = std::make_unique<Dispatcher>(Dispatcher::Parts{store_.get(), clock_, nodes_.get(), &images_, &sender_,
                                                               &account_terms_, &standing_, &counters_, &changes_},
                                             std::move(scheduler), options_.policies);
  FleetReports::Sources sources;
  sources.jobs = [this] { return jobs_->List(""); };
  sources.nodes = [this] { return nodes_->List(); };
  sources.market = [this] { return dispatcher_->Market(); };
  sources.heartbeat_gaps = [this] { return nodes_->HeartbeatGaps(); };
  sources.recent_prices = [this](int64_t now_ms) { return dispatcher_->RecentPrices(now_ms); };
  reports_ = std::make_unique<FleetReports>(store_.get(), &counters_, ledger_ ? &ledger_requests_ : nullptr, clock_,
                                            std::move(sources));
}

Coordinator::~Coordinator() { Stop(); }

void Coordinator::Start() {
  nodes_->Load(clock_->NowMs());
  loop_ = std::thread([this] { Loop(); });
  webhooks_->Start();
}

void Coordinator::Stop() {
  if (!changes_.Stop()) return;
  sessions_.CloseAll();
  if (loop_.joinable()) loop_.join();
  webhooks_->Stop();
}

void Coordinator::Loop() {
  while (changes_.WaitForPass(options_.dispatch_period_ms)) Tick();
}

void Coordinator::Tick() {
  nodes_->Sweep();
  readiness_->Ensure();
  retention_.Sweep();
  settler_.Sweep();
  verification_->Sweep();  // verdicts a crash or a failed write left undone
  dispatcher_->Pass();
  workflows_->Sweep();  // steps whose jobs ended since the last pass
  reports_->SampleLoad();
}

}  // namespace idlegrid::coordinator
