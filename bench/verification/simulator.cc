#include "bench/verification/simulator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <unordered_map>

#include "ledger/book.h"
#include "verify/adaptive.h"
#include "verify/challenge.h"
#include "verify/standing.h"
#include "verify/quorum.h"

namespace idlegrid::bench {
namespace {

using ledger::Micros;
constexpr char kRequester[] = "requester";
constexpr char kJob[] = "j-sim";
constexpr int64_t kMsPerTask = 1000;

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::string Right(uint64_t task) { return "sha256:ok-" + std::to_string(task); }

struct Provider {
  std::string account;
  size_t cls = 0;
  uint64_t joins_at = 0;
  uint32_t count = 0;  // consecutive verified results (one image in this simulation)
  uint32_t reliability = 1000;
  uint32_t verified = 0;
  bool suspended = false;
  bool trusted_once = false;
  bool on_probation = false;  // caught, and no result verified since (challenge mode replicates it)
  uint64_t runs = 0;
  std::optional<uint64_t> first_uncaught_wrong;  // own run index
  std::deque<int64_t> catches_ms;                // when proven wrong, inside the dispute window
};

struct Vote {
  size_t provider;
  std::string attempt;
  std::string digest;
};

struct AcceptedTask {
  std::string digest;
  std::vector<Vote> voters;  // charged runs that agreed (or the one unverified run)
  verify::Check check = verify::Check::kUnverified;
  int64_t accepted_ms = 0;
};

void Must(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
    std::abort();
  }
}

template <typename T>
T Must(Result<T> r, const char* what) {
  Must(r.status(), what);
  return std::move(r).value();
}

class Simulation {
 public:
  explicit Simulation(const SimConfig& c) : c_(c), rng_(c.seed), report_() {
    report_.classes.resize(c.classes.size());
    providers_.reserve(1 << 20);
    for (size_t i = 0; i < c.classes.size(); ++i) {
      report_.classes[i].name = c.classes[i].name;
      for (uint32_t k = 0; k < c.classes[i].count; ++k) Join(i, uint64_t(c.classes[i].joins_at * double(c.tasks)));
    }
    Deposit(kRequester, Micros(1) << 52);
    Apply(Must(ledger::EscrowForJob(kRequester, kJob, Micros(1) << 52, Available(kRequester)), "escrow"));
  }

  SimReport Run();

 private:
  double Draw() { return std::uniform_real_distribution<double>(0, 1)(rng_); }
  Micros Available(const std::string& owner) { return book_.Balance(ledger::Available(owner)); }
  void Apply(const ledger::Posting& p) { Must(book_.Apply(p), p.key.c_str()); }
  void Deposit(const std::string& owner, Micros amount) {
    Apply(Must(ledger::Deposit(owner, amount, "d" + std::to_string(++postings_)), "deposit"));
    deposited_[owner] += amount;
  }

  void Join(size_t cls, uint64_t at);
  void TopUpStake(Provider& p);
  std::optional<size_t> Pick(const std::set<std::string>& excluded);
  std::string Execute(size_t provider, uint64_t task, const std::string& attempt);
  void Charge(const Vote& v);
  void ReleaseDue();
  void ProvenWrong(size_t provider, const std::string& attempt, uint64_t task);
  void VerifiedRight(size_t provider);
  // Runs a quorum for `task` over `votes` plus new runs on providers not in
  // `excluded`; returns the accepted digest and its voters, or nullopt. Votes
  // in `uncharged` (and the new runs) are charged when they agree.
  std::optional<AcceptedTask> Quorum(uint64_t task, std::vector<Vote> votes, std::vector<Vote> uncharged,
                                     std::set<std::string> excluded);
  void NewTask(uint64_t task);
  void Challenge(size_t provider, uint64_t task);
  // A known-answer check of provider `i` as the coordinator sends one (a task
  // of the job two providers agreed on, which `i` never ran).
  void KnownAnswerCheck(size_t i);
  // A known answer provider i never voted on, as the coordinator looks for
  // one (20 draws from the pool); nullopt when none was found.
  std::optional<uint64_t> KnownFor(size_t i);
  void Trusted(Provider& p);
  void Reverify(uint64_t task);
  // The dispute window's accepted results that involve `account` (all that
  // verify::OnCaught looks at).
  std::vector<verify::AcceptedResult> History(const std::string& account);
  void Finish();
  void Involve(uint64_t task) {
    const AcceptedTask& a = accepted_[task];
    for (const Vote& v : a.voters) {
      involved_[providers_[v.provider].account].push_back({task, int64_t(now_task_) * kMsPerTask, false});
    }
    if (a.voters.size() >= 2) known_.push_back(task);
  }

  const SimConfig& c_;
  std::mt19937_64 rng_;
  SimReport report_;
  ledger::MemoryBook book_;
  std::map<std::string, Micros> deposited_;
  std::vector<Provider> providers_;
  std::unordered_map<uint64_t, AcceptedTask> accepted_;
  // Per provider account: accepted tasks it voted in, oldest first (an index
  // into accepted_ so a catch reads only its own share of the window).
  struct Involvement {
    uint64_t task;
    int64_t at_ms;
    bool check_passed;  // a known-answer check of the task it passed: its own verified result
  };
  std::unordered_map<std::string, std::deque<Involvement>> involved_;
  std::vector<uint64_t> known_;                    // tasks accepted by a quorum of two or more: known answers
  std::deque<std::tuple<Vote, int64_t>> charges_;  // to release, oldest first
  std::deque<std::pair<uint64_t, size_t>> reverify_queue_;
  std::set<uint64_t> queued_;
  std::vector<std::pair<size_t, uint64_t>> catch_samples_;   // class, runs to catch
  std::vector<std::string> wrong_attempts_;                  // charged attempts whose result was wrong
  std::unordered_map<std::string, std::string> charged_by_;  // attempt -> provider account
  // The last kStandingWindow runs, whether each was an unproven account's
  // (SimConfig::unproven_share), and how many were.
  static constexpr size_t kStandingWindow = 1000;
  std::deque<bool> recent_runs_;
  uint64_t recent_unproven_ = 0;
  uint64_t now_task_ = 0;
  uint64_t postings_ = 0;
  uint64_t attempts_ = 0;
};

void Simulation::Join(size_t cls, uint64_t at) {
  Provider p;
  p.account = "p" + std::to_string(providers_.size());
  p.cls = cls;
  p.joins_at = at;
  providers_.push_back(p);
  report_.classes[cls].accounts++;
  TopUpStake(providers_.back());
}

void Simulation::TopUpStake(Provider& p) {
  const Micros stake = book_.Balance(ledger::Stake(p.account));
  if (stake >= c_.min_stake) return;
  const Micros need = c_.stake - stake;
  Deposit(p.account, need);
  Apply(Must(ledger::StakeFunds(p.account, need, Available(p.account), "s" + std::to_string(++postings_)), "stake"));
}

std::optional<size_t> Simulation::Pick(const std::set<std::string>& excluded) {
  bool any_proven = false;
  if (c_.unproven_share < 1) {
    for (const Provider& p : providers_) {
      any_proven = any_proven || (!p.suspended && p.joins_at <= now_task_ && !excluded.count(p.account) &&
                                  p.count >= c_.policy.trust_threshold);
    }
  }
  for (int tries = 0; tries < 1000; ++tries) {
    size_t i = std::uniform_int_distribution<size_t>(0, providers_.size() - 1)(rng_);
    Provider& p = providers_[i];
    if (p.suspended || p.joins_at > now_task_ || excluded.count(p.account)) continue;
    if (c_.unproven_weight < 1 && p.count < c_.policy.trust_threshold && Draw() >= c_.unproven_weight) continue;
    if (p.count < c_.policy.trust_threshold &&
        !verify::UnprovenMayTake({c_.unproven_share}, recent_unproven_, recent_runs_.size(), any_proven)) {
      continue;
    }
    TopUpStake(p);
    return i;
  }
  return std::nullopt;
}

std::string Simulation::Execute(size_t i, uint64_t task, const std::string& attempt) {
  Provider& p = providers_[i];
  const ProviderClass& cls = c_.classes[p.cls];
  ClassReport& r = report_.classes[p.cls];
  ++p.runs;
  ++r.runs;
  ++report_.executions;
  const bool unproven = p.count < c_.policy.trust_threshold;
  recent_runs_.push_back(unproven);
  recent_unproven_ += unproven;
  if (recent_runs_.size() > kStandingWindow) {
    recent_unproven_ -= recent_runs_.front();
    recent_runs_.pop_front();
  }
  bool cheat = false;
  if (cls.behaviour == Behaviour::kLazy) cheat = Draw() < cls.cheat_rate;
  // The group fakes the same tasks, so two of its members given one task agree.
  if (cls.behaviour == Behaviour::kColluding)
    cheat = double(SplitMix(task ^ 0xc011dedull) >> 11) * 0x1p-53 < cls.cheat_rate;
  if (!cheat) return Right(task);
  ++r.wrong;
  r.compute_saved += c_.compute_cost;
  if (!p.first_uncaught_wrong) p.first_uncaught_wrong = p.runs;
  if (cls.behaviour == Behaviour::kColluding) return "sha256:colluded-" + std::to_string(task);
  return "sha256:garbage-" + attempt;
}

void Simulation::Charge(const Vote& v) {
  const Provider& p = providers_[v.provider];
  ledger::ChargeRequest req{kRequester,
                            kJob,
                            p.account,
                            v.attempt,
                            c_.price,
                            book_.Balance(ledger::Escrow(kRequester, kJob)),
                            ledger::AttemptEnd::kVerified};
  Apply(Must(ledger::Charge(req), "charge"));
  charges_.emplace_back(v, int64_t(now_task_) * kMsPerTask);
  if (v.digest != Right(std::stoull(v.attempt.substr(1)))) wrong_attempts_.push_back(v.attempt);
  charged_by_[v.attempt] = p.account;
}

void Simulation::ReleaseDue() {
  const int64_t now_ms = int64_t(now_task_) * kMsPerTask;
  while (!charges_.empty() && std::get<1>(charges_.front()) + c_.ledger.dispute_window_ms <= now_ms) {
    const auto& [v, at] = charges_.front();
    const std::string& owner = providers_[v.provider].account;
    Micros pending = book_.Balance(ledger::Pending(owner, v.attempt));
    Apply(Must(ledger::Release(owner, v.attempt, pending, at, now_ms, c_.ledger), "release"));
    charges_.pop_front();
  }
}

std::vector<verify::AcceptedResult> Simulation::History(const std::string& account) {
  std::vector<verify::AcceptedResult> out;
  auto list = involved_.find(account);
  if (list == involved_.end()) return out;
  const int64_t now_ms = int64_t(now_task_) * kMsPerTask;
  auto& tasks = list->second;
  while (!tasks.empty() && tasks.front().at_ms + c_.ledger.dispute_window_ms <= now_ms) tasks.pop_front();
  std::set<uint64_t> seen;
  for (const Involvement& in : tasks) {
    const uint64_t task = in.task;
    // As the coordinator's history holds it: a passed check is one of the
    // provider's own verified results (backtracking starts after it).
    if (in.check_passed) out.push_back({"k" + std::to_string(task), account, verify::Check::kChallengePassed, {}});
    auto it = accepted_.find(task);
    if (it == accepted_.end() || !seen.insert(task).second) continue;
    const AcceptedTask& a = it->second;
    if (std::none_of(a.voters.begin(), a.voters.end(),
                     [&](const Vote& v) { return providers_[v.provider].account == account; })) {
      continue;
    }
    verify::AcceptedResult r{std::to_string(task), providers_[a.voters.front().provider].account, a.check, {}};
    for (size_t k = 1; k < a.voters.size(); ++k) r.vouched_by.push_back(providers_[a.voters[k].provider].account);
    out.push_back(std::move(r));
  }
  return out;
}

void Simulation::VerifiedRight(size_t i) {
  Provider& p = providers_[i];
  p.count = verify::CountAfterVerification(p.count, true);
  p.reliability = verify::ReliabilityAfterValid(p.reliability);
  p.on_probation = false;
  ++p.verified;
}

void Simulation::Trusted(Provider& p) {
  if (p.trusted_once) return;
  p.trusted_once = true;
  ClassReport& r = report_.classes[p.cls];
  ++r.trusted;
  r.trust_verified_sum += p.verified;
  r.max_verified_to_trust = std::max(r.max_verified_to_trust, p.verified);
}

void Simulation::ProvenWrong(size_t i, const std::string& attempt, uint64_t task) {
  Provider& p = providers_[i];
  ClassReport& r = report_.classes[p.cls];
  ++r.caught;
  if (p.first_uncaught_wrong) {
    catch_samples_.emplace_back(p.cls, p.runs - *p.first_uncaught_wrong);
    p.first_uncaught_wrong.reset();
  }
  const Micros pending = book_.Balance(ledger::Pending(p.account, attempt));
  Apply(Must(ledger::Clawback(kRequester, kJob, p.account, attempt, pending), "clawback"));
  const Micros stake = book_.Balance(ledger::Stake(p.account));
  ledger::Posting slash = Must(ledger::Slash(p.account, kRequester, kJob, attempt, stake, c_.ledger), "slash");
  for (const ledger::Entry& e : slash.entries) {
    if (e.account == ledger::Stake(p.account)) r.slashed -= e.amount;
  }
  Apply(slash);

  const int64_t now_ms = int64_t(now_task_) * kMsPerTask;
  while (!p.catches_ms.empty() && p.catches_ms.front() + c_.ledger.dispute_window_ms <= now_ms)
    p.catches_ms.pop_front();
  const uint32_t caught_before = uint32_t(p.catches_ms.size());
  p.catches_ms.push_back(now_ms);
  verify::CaughtOutcome out =
      verify::OnCaught(p.account, p.reliability, caught_before, c_.policy, c_.backtrack, History(p.account));
  p.count = out.consecutive_valid;
  p.reliability = out.reliability;
  p.on_probation = true;
  for (const std::string& id : out.reverify) {
    const uint64_t t = std::stoull(id);
    if (t != task && queued_.insert(t).second) reverify_queue_.emplace_back(t, i);
  }
  for (const std::string& id : out.demote) {
    AcceptedTask& a = accepted_[std::stoull(id)];
    std::erase_if(a.voters, [&](const Vote& v) { return v.provider == i; });
    if (a.voters.size() < c_.policy.replicas) a.check = verify::Check::kUnverified;
  }
  if (!p.suspended && p.reliability < c_.suspend_below) {
    p.suspended = true;
    ++r.suspended;
    if (c_.whitewash) Join(p.cls, now_task_);
  }
}

std::optional<AcceptedTask> Simulation::Quorum(uint64_t task, std::vector<Vote> votes, std::vector<Vote> uncharged,
                                               std::set<std::string> excluded) {
  const verify::ReplicationRule rule{c_.policy.replicas, verify::MajorityOf(c_.policy.replicas),
                                     uint32_t(votes.size()) + c_.policy.replicas + c_.policy.extra_runs,
                                     c_.policy.dispute_margin};
  verify::CompareSpec compare;
  compare.outputs = {"out"};
  for (const Vote& v : votes) excluded.insert(providers_[v.provider].account);
  std::vector<Vote> fresh = std::move(uncharged);
  while (true) {
    std::vector<verify::ReplicaResult> results;
    for (const Vote& v : votes) {
      results.push_back({v.attempt, providers_[v.provider].account, "", {{"out", v.digest, std::nullopt}}});
    }
    verify::QuorumDecision d = verify::DecideQuorum(rule, compare, results, uint32_t(votes.size()), 0);
    if (d.verdict == verify::Verdict::kAccept) {
      AcceptedTask accepted;
      accepted.check = verify::Check::kReplicated;
      std::set<std::string> agreeing(d.agreeing.begin(), d.agreeing.end());
      for (const Vote& v : votes) {
        if (!agreeing.count(v.attempt)) continue;
        accepted.digest = v.digest;
        accepted.voters.push_back(v);
        VerifiedRight(v.provider);
        for (const Vote& f : fresh) {
          if (f.attempt == v.attempt) Charge(v);
        }
      }
      for (const verify::Vote& w : d.wrong) {
        for (const Vote& v : votes) {
          if (v.attempt == w.attempt_id) ProvenWrong(v.provider, v.attempt, task);
        }
      }
      return accepted;
    }
    if (d.verdict != verify::Verdict::kNeedMoreRuns) return std::nullopt;
    for (uint32_t k = 0; k < d.more_runs; ++k) {
      std::optional<size_t> i = Pick(excluded);
      if (!i) return std::nullopt;
      excluded.insert(providers_[*i].account);
      Vote v{*i, "t" + std::to_string(task) + "-" + std::to_string(++attempts_), ""};
      v.digest = Execute(*i, task, v.attempt);
      votes.push_back(v);
      fresh.push_back(v);
    }
  }
}

void Simulation::Challenge(size_t i, uint64_t task) {
  ++report_.challenges;
  const uint64_t known_task = task | (uint64_t(1) << 62);
  const std::string attempt = "t" + std::to_string(known_task) + "-" + std::to_string(++attempts_);
  const std::string digest = Execute(i, known_task, attempt);
  verify::CompareSpec compare;
  compare.outputs = {"out"};
  verify::ChallengeVerdict v =
      Must(verify::JudgeChallenge(compare, {{"out", Right(known_task), std::nullopt}}, {{"out", digest, std::nullopt}}),
           "judge");
  if (v.passed) {
    VerifiedRight(i);
  } else {
    ProvenWrong(i, attempt, known_task);
  }
}

std::optional<uint64_t> Simulation::KnownFor(size_t i) {
  const std::string& account = providers_[i].account;
  for (int tries = 0; tries < 20 && !known_.empty(); ++tries) {
    const uint64_t t = known_[std::uniform_int_distribution<size_t>(0, known_.size() - 1)(rng_)];
    auto it = accepted_.find(t);
    // Demoted since, or one the provider ran: not a check for it.
    if (it == accepted_.end() || it->second.voters.size() < 2 || it->second.check != verify::Check::kReplicated)
      continue;
    if (std::any_of(it->second.voters.begin(), it->second.voters.end(),
                    [&](const Vote& v) { return providers_[v.provider].account == account; })) {
      continue;
    }
    return t;
  }
  return std::nullopt;
}

void Simulation::KnownAnswerCheck(size_t i) {
  const std::string account = providers_[i].account;
  if (std::optional<uint64_t> found = KnownFor(i)) {
    const uint64_t t = *found;
    auto it = accepted_.find(t);
    ++report_.known_answer_checks;
    const std::string known = it->second.digest;
    if (known != Right(t)) ++report_.known_answer_wrong;
    Vote v{i, "t" + std::to_string(t) + "-" + std::to_string(++attempts_), ""};
    v.digest = Execute(i, t, v.attempt);
    verify::CompareSpec compare;
    compare.outputs = {"out"};
    verify::ChallengeVerdict verdict = Must(
        verify::JudgeChallenge(compare, {{"out", known, std::nullopt}}, {{"out", v.digest, std::nullopt}}), "judge");
    if (!verdict.passed) {
      ++report_.known_answer_failed;
      ProvenWrong(i, v.attempt, t);
      return;
    }
    // The check's run agreed: the coordinator records it as a third agreeing
    // vote, charged like any agreeing replica.
    VerifiedRight(i);
    Charge(v);
    it->second.voters.push_back(v);
    involved_[account].push_back({t, int64_t(now_task_) * kMsPerTask, true});
    return;
  }
}

void Simulation::NewTask(uint64_t task) {
  std::optional<size_t> first = Pick({});
  if (!first) return;
  if (c_.challenge_rate > 0 && verify::ShouldChallenge(c_.challenge_rate, Draw())) {
    Challenge(*first, task);
    first = Pick({});
    if (!first) return;
  }
  Provider& p = providers_[*first];
  bool replicate = c_.mode == verify::Mode::kReplicate;
  if (c_.mode == verify::Mode::kAdaptive) {
    // The floor gives way to known-answer checks once one can reach the
    // provider (verify::AuditFloor), unless the strategy keeps it.
    const double floor =
        c_.keep_floor_with_known_answers || c_.known_answer_rate <= 0 || c_.policy.audit_floor <= 0
            ? c_.policy.audit_floor
            : verify::AuditFloor(c_.policy.audit_floor, c_.known_answer_rate, KnownFor(*first).has_value());
    verify::ReplicationChoice choice = verify::ChooseReplication({c_.policy.trust_threshold, floor}, p.count, Draw());
    replicate = choice.replicate;
    if (choice.trusted) Trusted(p);
  }
  if (c_.mode == verify::Mode::kChallenge) {
    // verify::DecideTask's challenge rule (the real one).
    replicate = verify::ReplicateUnderChallenge(!known_.empty(), p.on_probation, c_.policy.audit_floor, Draw());
    if (!replicate) Trusted(p);
  }
  Vote v{*first, "t" + std::to_string(task) + "-" + std::to_string(++attempts_), ""};
  v.digest = Execute(*first, task, v.attempt);
  if (!replicate) {
    Charge(v);
    accepted_[task] = {v.digest, {v}, verify::Check::kUnverified, int64_t(now_task_) * kMsPerTask};
    Involve(task);
    if (c_.known_answer_rate > 0 && verify::ShouldChallenge(c_.known_answer_rate, Draw())) KnownAnswerCheck(*first);
    return;
  }
  ++report_.replicated;
  std::optional<AcceptedTask> a = Quorum(task, {v}, {v}, {});
  if (!a) {
    ++report_.failed_verification;
    return;
  }
  a->accepted_ms = int64_t(now_task_) * kMsPerTask;
  accepted_[task] = std::move(*a);
  Involve(task);
}

void Simulation::Reverify(uint64_t task) {
  auto it = accepted_.find(task);
  if (it == accepted_.end()) return;
  ++report_.reverified;
  // The result's own voters' answer is the claim under test: it needs one
  // independent provider to agree, and loses to a majority that does not.
  std::vector<Vote> claim = it->second.voters;
  std::set<std::string> excluded;
  for (const Vote& v : claim) excluded.insert(providers_[v.provider].account);
  std::optional<AcceptedTask> after = Quorum(task, claim, {}, excluded);
  if (!after) return;  // no quorum now either: the result stands as it was
  after->accepted_ms = it->second.accepted_ms;
  it->second = *after;
  Involve(task);
}

SimReport Simulation::Run() {
  for (uint64_t t = 0; t < c_.tasks; ++t) {
    now_task_ = t;
    ReleaseDue();
    NewTask(t);
    while (!reverify_queue_.empty()) {
      auto [task, because] = reverify_queue_.front();
      reverify_queue_.pop_front();
      queued_.erase(task);
      (void)because;
      Reverify(task);
    }
  }
  Finish();
  return report_;
}

void Simulation::Finish() {
  const int64_t end_ms = int64_t(c_.tasks) * kMsPerTask;
  for (const auto& [task, a] : accepted_) {
    const bool wrong = a.digest != Right(task);
    ++report_.accepted;
    report_.accepted_wrong += wrong;
    if (a.accepted_ms + c_.ledger.dispute_window_ms <= end_ms) {
      ++report_.settled;
      report_.settled_wrong += wrong;
    }
  }
  std::map<std::string, size_t> class_of;
  for (const Provider& p : providers_) class_of[p.account] = p.cls;
  for (const std::string& attempt : wrong_attempts_) {
    if (book_.Applied("clawback:" + attempt)) continue;
    // The charge went to whoever ran it; find them through the charge key's posting owner.
    auto owner = charged_by_.find(attempt);
    if (owner != charged_by_.end()) report_.classes[class_of[owner->second]].kept_for_wrong += c_.price;
  }
  // One pass over the book (MemoryBook::Total scans it per call).
  std::unordered_map<std::string, Micros> pending;
  for (const auto& [key, balance] : book_.balances()) {
    if (key.kind == ledger::Kind::kPending) pending[key.owner] += balance;
  }
  for (const Provider& p : providers_) {
    ClassReport& r = report_.classes[p.cls];
    const Micros holdings = Available(p.account) + book_.Balance(ledger::Stake(p.account)) + pending[p.account];
    r.earned += holdings - deposited_[p.account];
  }
  for (ClassReport& r : report_.classes) {
    r.earned += r.slashed;
    const Micros spent = Micros(r.runs) * c_.compute_cost - r.compute_saved;
    r.net = r.earned - r.slashed - spent;
  }
  std::map<size_t, std::pair<uint64_t, uint64_t>> sums;
  for (const auto& [cls, runs] : catch_samples_) {
    sums[cls].first += runs;
    sums[cls].second += 1;
  }
  for (const auto& [cls, sum] : sums) report_.classes[cls].mean_runs_to_catch = double(sum.first) / double(sum.second);
  report_.ledger_sum = book_.SumExceptWorld();
  for (const auto& [owner, amount] : deposited_) report_.ledger_deposits += amount;
}

}  // namespace

SimReport Simulate(const SimConfig& config) { return Simulation(config).Run(); }

}  // namespace idlegrid::bench
