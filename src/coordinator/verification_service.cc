// Result verification's shell (verification_service.h, docs/verification.md).
#include "coordinator/verification_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <utility>

#include "common/failpoint.h"
#include "common/fs.h"
#include "jobs/task_state.h"
#include "manifest/image_ref.h"
#include "manifest/manifest.h"
#include "sched/scheduler.h"
#include "verify/adaptive.h"
#include "verify/caught.h"
#include "verify/challenge.h"

namespace idlegrid::coordinator {

namespace {

// Outputs compared by their numbers are read back from the artifact store;
// past this size such an output is not comparable (verify/compare.h says so).
constexpr uint64_t kMaxComparedOutputBytes = 16 << 20;
constexpr size_t kMaxBacktrack = 1000;

// Whether a task's result was accepted by a quorum: a known answer.
bool KnownAnswer(const v1::Task& task) {
  if (task.state() != v1::SUCCEEDED) return false;
  int agreed = 0;
  for (const auto& a : task.attempts()) agreed += a.state() == v1::SUCCEEDED && a.vote() == "agreed";
  return agreed >= 2;
}

store::TrustRecord RecordFor(const std::vector<store::TrustRecord>& records, const std::string& provider,
                             const std::string& image) {
  for (const auto& r : records) {
    if (r.image == image) return r;
  }
  store::TrustRecord fresh;
  fresh.provider = provider;
  fresh.image = image;
  return fresh;
}

const v1::Task* TaskOf(const v1::Job& job, uint32_t index) {
  for (const auto& t : job.tasks()) {
    if (t.index() == index) return &t;
  }
  return nullptr;
}

}  // namespace

VerificationService::VerificationService(store::Store* store, artifacts::ArtifactStore* artifacts, LedgerShell* ledger,
                                         const Clock* clock, verify::VerificationPolicy policy,
                                         int64_t backtrack_window_ms, Hooks hooks, uint64_t seed)
    : store_(store),
      artifacts_(artifacts),
      ledger_(ledger),
      clock_(clock),
      policy_(std::move(policy)),
      backtrack_window_ms_(backtrack_window_ms),
      hooks_(std::move(hooks)),
      rng_(seed) {}

Status VerificationService::Resolve(v1::JobSpec* spec) const {
  // A job that names no mode gets the operator's default, written into the
  // stored spec so the stores know it is verified ("" stays "": none).
  if (spec->verification().mode().empty() && policy_.default_mode != verify::Mode::kNone) {
    spec->mutable_verification()->set_mode(verify::ModeName(policy_.default_mode));
  }
  return verify::Resolve(spec->verification(), policy_).status();
}

void VerificationService::Sweep() {
  const int64_t now = clock_->NowMs();
  if (now - swept_ms_ < kSweepMs) return;
  swept_ms_ = now;
  auto held = store_->HeldTasks(200);
  if (!held.ok()) {
    spdlog::warn("verification: held tasks not read: {}", held.status().ToString());
    return;
  }
  for (const store::TaskKey& k : *held) OnResultHeld(k.job_id, k.index);
  WithdrawStaleChecks();
}

void VerificationService::OnResultHeld(const std::string& job_id, uint32_t index) {
  Status st = Decide(job_id, index);
  if (!st.ok()) spdlog::warn("verification of {}/{}: {} (retried by the sweep)", job_id, index, st.ToString());
}

double VerificationService::Draw() {
  MutexLock lock(&rng_mu_);
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
}

Status VerificationService::Decide(const std::string& job_id, uint32_t index) {
  // One verdict at a time: trust counts are read, changed and written back.
  MutexLock verdicts(&verdict_mu_);
  IG_ASSIGN_OR_RETURN(v1::Job job, store_->GetJob(job_id));
  const v1::Task* task = TaskOf(job, index);
  if (task == nullptr) return Status::NotFound("task " + job_id + "/" + std::to_string(index));
  bool known_answer = false;
  for (const auto& t : job.tasks()) known_answer = known_answer || (t.index() != index && KnownAnswer(t));
  IG_ASSIGN_OR_RETURN(verify::VerificationSpec spec, verify::Resolve(job.spec().verification(), policy_));
  const std::string image = manifest::ImageDigestOf(job.spec().image());

  verify::TaskVerdictInput in;
  in.spec = spec;
  in.known_answer = known_answer;
  in.runs = RunRecordsOf(*task, spec);
  std::string pending_provider;
  for (const verify::RunRecord& run : in.runs) {
    if (run.vote == "pending" && run.state == v1::SUCCEEDED) pending_provider = run.provider;
  }
  // Each provider's records, read once for this verdict (the pending run's
  // provider is usually among those it verifies or convicts).
  std::map<std::string, std::vector<store::TrustRecord>> trust_of;
  const auto records_of = [&](const std::string& p) -> Result<const std::vector<store::TrustRecord>*> {
    auto it = trust_of.find(p);
    if (it == trust_of.end()) {
      IG_ASSIGN_OR_RETURN(auto records, store_->TrustOf(p));
      it = trust_of.emplace(p, std::move(records)).first;
    }
    return &it->second;
  };
  if (!pending_provider.empty()) {
    // Only adaptive's floor asks (AuditFloor); the search reads every attempt.
    if (spec.mode == verify::Mode::kAdaptive && spec.challenge_rate > 0) {
      in.check_can_reach = KnownAnswerFor(job, index, pending_provider) != nullptr;
    }
    IG_ASSIGN_OR_RETURN(const std::vector<store::TrustRecord>* mine, records_of(pending_provider));
    in.consecutive_valid = RecordFor(*mine, pending_provider, image).consecutive;
    in.provider_on_probation = RecordFor(*mine, pending_provider, "").caught > 0 && in.consecutive_valid == 0;
  }
  in.draw = Draw();
  if (hooks_.provider_accounts) in.providers = hooks_.provider_accounts();
  const verify::TaskVerdict verdict = verify::DecideTask(in);
  if (verdict.outcome == verify::TaskOutcome::kNothing) return Status::Ok();

  const int64_t now = clock_->NowMs();
  IG_ASSIGN_OR_RETURN(store::VerdictWrite w, VerdictWriteOf(job_id, index, image, verdict, records_of, now));
  if (IG_FAILPOINT("coordinator.verdict.before_commit")) return Status::Unavailable("failpoint: verdict not written");
  IG_ASSIGN_OR_RETURN(bool applied, store_->ApplyVerdict(w, now));
  if (!applied) return Status::Ok();  // decided elsewhere first
  spdlog::info("verification {}/{}: {} ({})", job_id, index, verify::TaskOutcomeName(verdict.outcome), verdict.line);
  AfterVerdict(job, spec, verdict, in.runs, pending_provider, now);
  hooks_.verdict_written(job_id);
  hooks_.changed();
  return Status::Ok();
}

Result<store::VerdictWrite> VerificationService::VerdictWriteOf(
    const std::string& job_id, uint32_t index, const std::string& image, const verify::TaskVerdict& verdict,
    const std::function<Result<const std::vector<store::TrustRecord>*>(const std::string&)>& records_of, int64_t now) {
  store::VerdictWrite w;
  w.job_id = job_id;
  w.index = index;
  w.verification = verdict.line;
  w.task.updated_ms = now;
  w.task.message = verdict.line;
  switch (verdict.outcome) {
    case verify::TaskOutcome::kAccept:
      w.task.state = v1::SUCCEEDED;
      break;
    case verify::TaskOutcome::kMoreRuns:
      w.task.state = v1::QUEUED;
      w.task.queued_ms = now;
      w.not_before_ms = now;
      for (const auto& p : verdict.exclude_providers) w.exclude.push_back(sched::kProviderExclusion + p);
      break;
    default:
      w.task.state = v1::FAILED;
      w.task.reason = v1::VERIFICATION_FAILED;
      break;
  }
  for (const auto& v : verdict.votes) w.votes.push_back({v.attempt_id, v.vote, v.reason, v.failed});
  // Providers' records: +1 for a verified result, reset (every image) for a wrong one.
  for (const std::string& p : verdict.verified) {
    IG_ASSIGN_OR_RETURN(const std::vector<store::TrustRecord>* records, records_of(p));
    store::TrustRecord mine = RecordFor(*records, p, image);
    mine.consecutive = verify::CountAfterVerification(mine.consecutive, true);
    store::TrustRecord self = RecordFor(*records, p, "");
    self.reliability = verify::ReliabilityAfterValid(self.reliability);
    w.trust.push_back(mine);
    w.trust.push_back(self);
  }
  for (const std::string& p : verdict.caught) {
    IG_ASSIGN_OR_RETURN(const std::vector<store::TrustRecord>* records, records_of(p));
    store::TrustRecord self = RecordFor(*records, p, "");
    const verify::CaughtOutcome caught =
        verify::OnCaught(p, self.reliability, self.caught, policy_, verify::Backtrack::kSinceLastVerified, {});
    for (store::TrustRecord r : *records) {
      if (r.image.empty()) continue;
      r.consecutive = caught.consecutive_valid;
      w.trust.push_back(r);
    }
    store::TrustRecord mine = RecordFor(*records, p, image);
    mine.consecutive = 0;
    if (!image.empty()) w.trust.push_back(mine);
    self.reliability = caught.reliability;
    self.caught += 1;
    w.trust.push_back(self);
  }
  return w;
}

void VerificationService::AfterVerdict(const v1::Job& job, const verify::VerificationSpec& spec,
                                       const verify::TaskVerdict& verdict, const std::vector<verify::RunRecord>& runs,
                                       const std::string& pending_provider, int64_t now) {
  for (const auto& v : verdict.votes) {
    if (!v.failed) continue;
    const std::string provider = [&] {
      for (const auto& r : runs) {
        if (r.attempt_id == v.attempt_id) return r.provider;
      }
      return std::string();
    }();
    spdlog::warn("verification: attempt {} of provider {} was wrong ({})", v.attempt_id, provider, v.reason);
    if (ledger_) {
      Status punished = ledger_->PunishWrongResult(job.account(), job.id(), provider, v.attempt_id, now);
      if (!punished.ok()) spdlog::warn("ledger: slash for {} not applied: {}", v.attempt_id, punished.ToString());
    }
    Backtrack(provider, v.attempt_id);
  }
  // A result taken on its run's word (challenge, or a trusted provider's
  // under adaptive) may bring its provider a known-answer check.
  if (spec.challenge_rate > 0 && verdict.outcome == verify::TaskOutcome::kAccept && verdict.votes.size() == 1 &&
      verdict.votes[0].vote == "unverified") {
    if (verify::ShouldChallenge(spec.challenge_rate, Draw())) SendKnownAnswerCheck(job, pending_provider, now);
  }
}

std::vector<verify::RunRecord> VerificationService::RunRecordsOf(const v1::Task& task,
                                                                 const verify::VerificationSpec& spec) {
  std::vector<verify::RunRecord> runs;
  for (const v1::Attempt& a : task.attempts()) {
    verify::RunRecord run{a.id(), hooks_.provider_of(a.node_id()), a.state(), a.vote(), {}};
    for (const auto& o : a.outputs()) {
      verify::OutputFile f{o.path(), o.digest(), std::nullopt};
      const bool by_numbers = std::any_of(spec.compare.tolerances.begin(), spec.compare.tolerances.end(),
                                          [&](const verify::ToleranceRule& r) { return r.output == o.path(); });
      if (by_numbers && o.size() <= kMaxComparedOutputBytes && artifacts_->Has(o.digest())) {
        auto bytes = ReadFile(artifacts_->PathOf(o.digest()));
        if (bytes.ok()) f.content = std::move(bytes).value();
      }
      run.outputs.push_back(std::move(f));
    }
    runs.push_back(std::move(run));
  }
  return runs;
}

const v1::Task* VerificationService::KnownAnswerFor(const v1::Job& job, uint32_t except, const std::string& provider) {
  for (const v1::Task& t : job.tasks()) {
    if (t.index() == except || !KnownAnswer(t)) continue;
    const bool ran = std::any_of(t.attempts().begin(), t.attempts().end(),
                                 [&](const v1::Attempt& a) { return hooks_.provider_of(a.node_id()) == provider; });
    if (!ran) return &t;
  }
  return nullptr;
}

void VerificationService::SendKnownAnswerCheck(const v1::Job& job, const std::string& provider, int64_t now) {
  // A task of the job with a known answer that the provider never ran: to
  // it, one more task of the job it is working on.
  if (const v1::Task* found = KnownAnswerFor(job, UINT32_MAX, provider)) {
    const v1::Task& t = *found;
    store::VerdictWrite w;
    w.job_id = job.id();
    w.index = t.index();
    w.expect = store::VerdictWrite::Expect::kSucceeded;
    w.task.state = v1::QUEUED;
    w.task.updated_ms = now;
    w.task.queued_ms = now;
    w.verification = t.verification() + "; known-answer check of a provider in progress";
    w.task.message = w.verification;
    w.not_before_ms = now;
    w.reset_exclusions = true;
    w.exclude.push_back(sched::kOnlyProvider + provider);
    auto applied = store_->ApplyVerdict(w, now);
    if (!applied.ok()) {
      spdlog::warn("verification: known-answer check {}/{} not sent: {}", job.id(), t.index(),
                   applied.status().ToString());
    } else if (*applied) {
      spdlog::info("verification: known-answer check {}/{} sent to provider {}", job.id(), t.index(), provider);
    }
  }
}

void VerificationService::WithdrawStaleChecks() {
  const int64_t now = clock_->NowMs();
  auto waiting = store_->TasksExcluding(sched::kOnlyProvider, 200);
  if (!waiting.ok()) return;
  for (const auto& [key, changed_ms] : *waiting) {
    if (now - changed_ms < kChallengeWaitMs) continue;
    store::VerdictWrite w;
    w.job_id = key.job_id;
    w.index = key.index;
    w.expect = store::VerdictWrite::Expect::kQueued;
    w.task.state = v1::SUCCEEDED;
    w.task.updated_ms = now;
    w.verification = "accepted; a known-answer check was withdrawn (its provider did not take it within 60 s)";
    w.task.message = w.verification;
    w.reset_exclusions = true;
    auto applied = store_->ApplyVerdict(w, now);
    if (applied.ok() && *applied)
      spdlog::info("verification: known-answer check {}/{} withdrawn", key.job_id, key.index);
  }
}

void VerificationService::Backtrack(const std::string& provider, const std::string& caught_on) {
  const int64_t now = clock_->NowMs();
  auto results = store_->ProviderResults(provider, now - backtrack_window_ms_, kMaxBacktrack);
  if (!results.ok()) {
    spdlog::warn("verification: {}'s results not read for backtracking: {}", provider, results.status().ToString());
    return;
  }
  std::vector<verify::AcceptedResult> history;
  for (const auto& r : *results) {
    history.push_back(
        {r.attempt_id, provider, r.vote == "unverified" ? verify::Check::kUnverified : verify::Check::kReplicated, {}});
  }
  const verify::CaughtOutcome caught =
      verify::OnCaught(provider, 0, 0, policy_, verify::Backtrack::kSinceLastVerified, history);
  for (const std::string& attempt : caught.reverify) {
    auto it = std::find_if(results->begin(), results->end(),
                           [&](const store::ProviderResult& r) { return r.attempt_id == attempt; });
    if (it == results->end()) continue;
    store::VerdictWrite w;
    w.job_id = it->job_id;
    w.index = it->index;
    w.expect = store::VerdictWrite::Expect::kSucceeded;
    w.task.state = v1::QUEUED;
    w.task.updated_ms = now;
    w.task.queued_ms = now;
    w.verification = "re-verifying: its provider was caught with a wrong result (attempt " + caught_on + ")";
    w.task.message = w.verification;
    w.not_before_ms = now;
    w.exclude.push_back(sched::kProviderExclusion + provider);
    w.votes.push_back({attempt, "pending", "re-verifying: its provider was caught on attempt " + caught_on, false});
    auto applied = store_->ApplyVerdict(w, now);
    if (!applied.ok()) {
      spdlog::warn("verification: {} not reopened: {}", attempt, applied.status().ToString());
    } else if (*applied) {
      spdlog::info("verification: {}/{} re-verified (attempt {} of caught provider {})", it->job_id, it->index, attempt,
                   provider);
    }
  }
  Demote(provider, caught_on, *results, caught.demote, now);
  hooks_.changed();
}

void VerificationService::Demote(const std::string& provider, const std::string& caught_on,
                                 const std::vector<store::ProviderResult>& results,
                                 const std::vector<std::string>& attempts, int64_t now) {
  for (const std::string& attempt : attempts) {
    auto it = std::find_if(results.begin(), results.end(),
                           [&](const store::ProviderResult& r) { return r.attempt_id == attempt; });
    if (it == results.end()) continue;
    auto job = store_->GetJob(it->job_id);
    if (!job.ok()) continue;
    const v1::Task* task = TaskOf(*job, it->index);
    auto spec = verify::Resolve(job->spec().verification(), policy_);
    if (task == nullptr || !spec.ok()) continue;
    const verify::DemoteDecision d = verify::DecideDemote(*spec, provider, caught_on, RunRecordsOf(*task, *spec));
    if (!d.changed) continue;
    store::VerdictWrite w;
    w.job_id = it->job_id;
    w.index = it->index;
    w.expect = store::VerdictWrite::Expect::kSucceeded;
    w.verification = d.line;
    w.task.state = d.reopen ? v1::QUEUED : v1::SUCCEEDED;
    w.task.updated_ms = now;
    w.task.message = d.reopen ? d.line : task->message();
    if (d.reopen) {
      w.task.queued_ms = now;
      w.not_before_ms = now;
      // Every provider that ran it, listed afresh (the accept left its own list).
      w.reset_exclusions = true;
      for (const auto& p : d.exclude_providers) w.exclude.push_back(sched::kProviderExclusion + p);
    }
    for (const auto& v : d.votes) w.votes.push_back({v.attempt_id, v.vote, v.reason, v.failed});
    auto applied = store_->ApplyVerdict(w, now);
    if (!applied.ok()) {
      spdlog::warn("verification: {}'s vote on {}/{} not demoted: {}", provider, it->job_id, it->index,
                   applied.status().ToString());
    } else if (*applied) {
      spdlog::info("verification: {}'s vote on {}/{} demoted{}", provider, it->job_id, it->index,
                   d.reopen ? "; reopened for another run" : "");
    }
  }
}

}  // namespace idlegrid::coordinator
