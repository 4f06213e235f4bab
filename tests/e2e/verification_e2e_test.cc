// Verification through a real coordinator, real agents of three provider
// accounts and a real lying provider (issue 13): mallory's agent runs the
// real runc through a shim that, while a flag file exists, appends to the
// outputs of the container it ran, after the job wrote them and before the
// agent uploads them. Under `replicate` its result loses the vote, its stake
// is slashed and the requester fetches the honest outputs; under `adaptive`
// it earns trust honestly, cheats, is caught by an audit, and the results it
// had accepted on its word are re-verified and corrected.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <thread>

#include "common/fs.h"
#include "e2e/harness.h"

namespace idlegrid::testing {
namespace {

constexpr int kAlice = 1, kMallory = 2, kBob = 3;

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

class VerificationE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  }

  void StartGrid(const std::string& name, std::vector<std::string> coordinator_flags) {
    grid_ = std::make_unique<Grid>(name);
    Status st = grid_->StartCoordinator(coordinator_flags);
    ASSERT_TRUE(st.ok()) << st.message();
    for (auto [n, provider] : {std::pair{kAlice, "alice"}, {kMallory, "mallory"}, {kBob, "bob"}}) {
      ASSERT_EQ(grid_->Cli({"account", "create", provider, "--role", "provider"}).exit_code, 0);
      auto token = grid_->Cli({"join-token", "create", "--provider", provider});
      ASSERT_EQ(token.exit_code, 0) << token.err;
      grid_->agent_join_tokens[n] = Trim(token.out);
    }
  }

  // Mallory's runtime: the real runc, then (while the flag exists) a line
  // appended to the hello.txt output of the container it ran (only that
  // file: its readiness benchmark's output stays true, or it gets no work). The job's files
  // belong to the job's user (a subordinate uid), so the shim edits them from
  // a user namespace over the agent's subordinate range, as the agent itself
  // takes them back (runtime/job_files.h).
  void StartLiar(std::vector<std::string> extra = {}, bool lying = false) {
    const std::string dir = grid_->AgentDataDir(kMallory);
    ASSERT_TRUE(MakeDirs(dir, 0700).ok());
    lie_flag_ = dir + "/lie";
    const std::string runc = ::access("/usr/sbin/runc", X_OK) == 0 ? "/usr/sbin/runc" : "/usr/bin/runc";
    const std::string shim = dir + "/lying-runc";
    std::ofstream(shim) << "#!/bin/sh\n"
                        << "bundle=''; prev=''; pilot=0\n"
                        << "for a in \"$@\"; do\n"
                        << "  [ \"$prev\" = --bundle ] && bundle=\"$a\"\n"
                        << "  [ \"$a\" = --preserve-fds ] && pilot=1\n"
                        << "  prev=\"$a\"\n"
                        << "done\n"
                        << runc << " \"$@\"\n"
                        << "rc=$?\n"
                        << "if [ -n \"$bundle\" ] && [ $pilot = 0 ] && [ -e " << lie_flag_ << " ]; then\n"
                        << "  out=$(python3 -c 'import json,sys\n"
                        << "for m in json.load(open(sys.argv[1])).get(\"mounts\", []):\n"
                        << "    if m.get(\"destination\") == \"/out\": print(m[\"source\"])' \"$bundle/config.json\")\n"
                        << "  [ -n \"$out\" ] && unshare --map-root-user --map-auto sh -c "
                        << "'[ -f \"$1\"/hello.txt ] && echo tampered >> \"$1\"/hello.txt' sh \"$out\"\n"
                        << "fi\n"
                        << "exit $rc\n";
    ASSERT_EQ(::chmod(shim.c_str(), 0755), 0);
    if (!grid_->AgentUser(kMallory).empty()) {
      // The agent's data dir is its own (StartAgent chowns it again).
      ASSERT_EQ(RunCommand({"chown", grid_->AgentUser(kMallory), shim}).exit_code, 0);
    }
    if (lying) Lie(true);
    extra.insert(extra.end(), {"--runc", shim});
    Status st = grid_->StartAgent(kMallory, extra);
    ASSERT_TRUE(st.ok()) << st.message();
  }
  // Waits until `n` nodes are schedulable (their readiness benchmark passed:
  // the liar must not tamper with that, or it never gets work).
  void WaitSchedulable(int n) {
    auto nodes = grid_->WaitNodes([n](const v1::ListNodesResponse& list) {
      int ready = 0;
      for (const auto& node : list.nodes()) ready += node.schedulable() && node.state() == "online";
      return ready == n;
    });
    ASSERT_TRUE(nodes.ok()) << nodes.status().message();
  }
  void Lie(bool on) {
    if (on) {
      std::ofstream(lie_flag_) << "on\n";
    } else {
      ::unlink(lie_flag_.c_str());
    }
  }
  void Start(int n, const std::vector<std::string>& extra = {}) {
    Status st = grid_->StartAgent(n, extra);
    ASSERT_TRUE(st.ok()) << st.message();
  }

  std::string Submit(const std::string& name, const std::string& extra) {
    const std::string manifest = grid_->Manifest(name, {"write", "honest"}, extra);
    auto r = grid_->Cli({"submit", manifest, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return ParseJson<v1::Job>(r.out).id();
  }
  v1::Job Wait(const std::string& job_id, const std::function<bool(const v1::Job&)>& pred, int timeout_ms = 120000) {
    auto job = grid_->WaitJob(job_id, pred, timeout_ms);
    EXPECT_TRUE(job.ok()) << job.status().message();
    return job.ok() ? *job : v1::Job();
  }
  // Like Wait, for a state that may come after the job has settled once (a
  // succeeded job reopened for re-verification): the job's stream ends when
  // it settles, and no event announces a reopening to come, so a settled job
  // that does not satisfy `pred` yet is looked at again shortly.
  v1::Job WaitThroughReopen(const std::string& job_id, const std::function<bool(const v1::Job&)>& pred) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
    v1::Job last;
    while (std::chrono::steady_clock::now() < deadline) {
      auto job = grid_->WaitJob(job_id, pred, 60000);
      if (job.ok()) last = *job;
      if (job.ok() && pred(*job)) return *job;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    ADD_FAILURE() << "job " << job_id << " never reached the expected state: " << last.DebugString();
    return last;
  }
  // The fetched hello.txt of task 0.
  std::string FetchedHello(const std::string& job_id) {
    const std::string out = grid_->root + "/fetched-" + job_id;
    auto f = grid_->Cli({"fetch", job_id, out});
    EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
    auto text = ReadFile(out + "/task-0/hello.txt");
    return text.ok() ? *text : "(no hello.txt)";
  }
  const std::string& NodeOf(int n) { return grid_->node_ids[static_cast<size_t>(n - 1)]; }
  // The votes of node n's attempts on task 0.
  std::vector<const v1::Attempt*> RunsOf(const v1::Job& job, int n) {
    std::vector<const v1::Attempt*> out;
    for (const auto& a : job.tasks(0).attempts()) {
      if (a.node_id() == NodeOf(n)) out.push_back(&a);
    }
    return out;
  }

  // `account`'s balance once its stake fell below `staked` micros, or after
  // 20 s; polled, since the ledger announces no event to await.
  v1::LedgerBalanceResponse BalanceOnceSlashed(const std::string& account, int64_t staked) {
    v1::LedgerBalanceResponse balance;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    do {
      auto r = grid_->Cli({"ledger", "balance", "--account", account, "--json"});
      EXPECT_EQ(r.exit_code, 0) << r.err;
      balance = ParseJson<v1::LedgerBalanceResponse>(r.out);
      if (balance.stake_micros() < staked) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    } while (std::chrono::steady_clock::now() < deadline);
    return balance;
  }

  std::unique_ptr<Grid> grid_;
  std::string lie_flag_;
};

bool Settled(const v1::Job& job) { return job.state() == v1::SUCCEEDED || job.state() == v1::FAILED; }

TEST_F(VerificationE2E, ReplicateOutvotesTheLiarSlashesItAndReturnsTheHonestResult) {
  ASSERT_NO_FATAL_FAILURE(
      StartGrid("VerifyReplicate", {"--ledger", "--ledger-slash", "1", "--verification-dispute-margin", "1"}));
  // The requester (the operator here) pays; mallory has 5 credits at stake.
  ASSERT_EQ(grid_->Cli({"ledger", "deposit", "operator", "20"}).exit_code, 0);
  ASSERT_EQ(grid_->Cli({"ledger", "deposit", "mallory", "5"}).exit_code, 0);
  auto staked = grid_->Cli({"ledger", "stake", "5", "--account", "mallory"});
  ASSERT_EQ(staked.exit_code, 0) << staked.out << staked.err;
  ASSERT_NO_FATAL_FAILURE(Start(kAlice));
  ASSERT_NO_FATAL_FAILURE(StartLiar());
  ASSERT_NO_FATAL_FAILURE(WaitSchedulable(2));
  Lie(true);

  const std::string job_id = Submit("replicated", "maxCost: 4\nverification: replicate\n");
  // Alice and mallory (the only providers so far) disagree: a tie-breaker
  // must run on a third provider, so the task waits for one.
  v1::Job split = Wait(job_id, [](const v1::Job& j) {
    int pending = 0;
    for (const auto& a : j.tasks(0).attempts()) pending += a.vote() == "pending";
    return pending == 2 && j.tasks(0).state() == v1::QUEUED;
  });
  ASSERT_EQ(split.tasks(0).state(), v1::QUEUED) << split.DebugString();
  EXPECT_NE(split.tasks(0).verification().find("another run on a provider not yet used"), std::string::npos)
      << split.tasks(0).verification();
  EXPECT_NE(split.state(), v1::SUCCEEDED) << "a split is never accepted";

  ASSERT_NO_FATAL_FAILURE(Start(kBob));
  ASSERT_NO_FATAL_FAILURE(WaitSchedulable(3));
  v1::Job done = Wait(job_id, Settled);
  ASSERT_EQ(done.state(), v1::SUCCEEDED) << done.DebugString();
  EXPECT_EQ(done.tasks(0).verification(), "accepted: 2 of 3 results agree (replicate); 1 wrong");
  ASSERT_EQ(RunsOf(done, kMallory).size(), 1u);
  const v1::Attempt& lie = *RunsOf(done, kMallory)[0];
  EXPECT_EQ(lie.state(), v1::FAILED);
  EXPECT_EQ(lie.failure_reason(), v1::VERIFICATION_FAILED);
  EXPECT_EQ(lie.vote(), "wrong");
  EXPECT_NE(lie.vote_reason().find("hello.txt"), std::string::npos) << lie.vote_reason();
  for (int honest : {kAlice, kBob}) {
    ASSERT_EQ(RunsOf(done, honest).size(), 1u);
    EXPECT_EQ(RunsOf(done, honest)[0]->vote(), "agreed");
  }
  EXPECT_EQ(FetchedHello(job_id), "honest from task 0\n") << "the requester gets the honest result";

  // Slashed: one credit of mallory's stake, part of it to the requester.
  const v1::LedgerBalanceResponse mallory = BalanceOnceSlashed("mallory", 5000000);
  EXPECT_EQ(mallory.stake_micros(), 4000000) << mallory.DebugString();
  EXPECT_EQ(mallory.pending_micros(), 0) << "a wrong result is never charged";
  auto history = grid_->Cli({"ledger", "history", "--account", "mallory"});
  EXPECT_NE(history.out.find("slash"), std::string::npos) << history.out;
}

// Issue 32: three provider accounts, one lying on every task, the default
// lead of two. Each task splits 1-1 between alice and mallory, bob breaks the
// tie 2-1, and no fourth provider exists to reach a lead of two: the strict
// majority settles it (the job ends) and mallory is caught and slashed.
TEST_F(VerificationE2E, ALiarAmongThreeAccountsStallsNothingAndIsCaught) {
  ASSERT_NO_FATAL_FAILURE(StartGrid("VerifyByzantine", {"--ledger", "--ledger-slash", "1"}));
  ASSERT_EQ(grid_->Cli({"ledger", "deposit", "operator", "40"}).exit_code, 0);
  ASSERT_EQ(grid_->Cli({"ledger", "deposit", "mallory", "5"}).exit_code, 0);
  ASSERT_EQ(grid_->Cli({"ledger", "stake", "5", "--account", "mallory"}).exit_code, 0);
  ASSERT_NO_FATAL_FAILURE(Start(kAlice));
  ASSERT_NO_FATAL_FAILURE(StartLiar());
  ASSERT_NO_FATAL_FAILURE(WaitSchedulable(2));
  Lie(true);
  // Single-task jobs: the shim tampers with containers it starts itself, not
  // with the warm pilot an array's tasks share.
  constexpr int kJobs = 2;
  std::vector<std::string> ids;
  for (int i = 0; i < kJobs; ++i) {
    ids.push_back(Submit("byzantine" + std::to_string(i),
                         "maxCost: 4\nverification:\n  mode: replicate\n  replicas: 2\n  quorum: 2\n"));
  }
  // Each splits between the two providers there are and waits for bob (whose
  // account exists): before the majority rule, that wait never ended.
  for (const std::string& id : ids) {
    v1::Job split = Wait(id, [](const v1::Job& j) {
      int pending = 0;
      for (const auto& a : j.tasks(0).attempts()) pending += a.vote() == "pending";
      return pending == 2 && j.tasks(0).state() == v1::QUEUED &&
             j.tasks(0).verification().find("another run on a provider not yet used") != std::string::npos;
    });
    ASSERT_NE(split.tasks(0).verification().find("another run"), std::string::npos) << split.DebugString();
  }

  ASSERT_NO_FATAL_FAILURE(Start(kBob));
  for (const std::string& id : ids) {
    v1::Job done = Wait(id, Settled, 180000);
    ASSERT_EQ(done.state(), v1::SUCCEEDED) << done.DebugString();
    const v1::Task& t = done.tasks(0);
    EXPECT_NE(t.verification().find("settled by the majority rule"), std::string::npos) << t.verification();
    ASSERT_EQ(RunsOf(done, kMallory).size(), 1u);
    EXPECT_EQ(RunsOf(done, kMallory)[0]->vote(), "wrong");
    EXPECT_EQ(RunsOf(done, kMallory)[0]->failure_reason(), v1::VERIFICATION_FAILED);
    for (int honest : {kAlice, kBob}) {
      ASSERT_EQ(RunsOf(done, honest).size(), 1u);
      EXPECT_EQ(RunsOf(done, honest)[0]->vote(), "agreed");
    }
    EXPECT_EQ(FetchedHello(id), "honest from task 0\n");
  }
  // Caught: slashed (the ledger shows no event to await, so it is polled).
  const v1::LedgerBalanceResponse mallory = BalanceOnceSlashed("mallory", 5000000);
  EXPECT_LT(mallory.stake_micros(), 5000000) << mallory.DebugString();
}

TEST_F(VerificationE2E, AdaptiveAuditCatchesTheLiarAndReverifiesWhatItAcceptedUnchecked) {
  // Trusted after 2 verified results; a trusted result is audited half the time.
  ASSERT_NO_FATAL_FAILURE(
      StartGrid("VerifyAdaptive", {"--verification-trust-threshold", "2", "--verification-audit-floor", "0.5",
                                   "--verification-dispute-margin", "1"}));
  ASSERT_NO_FATAL_FAILURE(Start(kAlice));
  ASSERT_NO_FATAL_FAILURE(StartLiar());
  ASSERT_NO_FATAL_FAILURE(WaitSchedulable(2));

  // 1. Mallory earns trust honestly: with alice the only other provider,
  // every replicated task runs on both.
  int mallory_verified = 0;
  std::vector<std::string> honest_jobs;
  for (int i = 0; i < 12 && mallory_verified < 2; ++i) {
    const std::string id = Submit("earn" + std::to_string(i), "verification: adaptive\n");
    v1::Job j = Wait(id, Settled);
    ASSERT_EQ(j.state(), v1::SUCCEEDED) << j.DebugString();
    for (const v1::Attempt* a : RunsOf(j, kMallory)) mallory_verified += a->vote() == "agreed";
    honest_jobs.push_back(id);
  }
  ASSERT_GE(mallory_verified, 2) << "mallory never earned trust";

  // 2. Alone on the grid, trusted mallory cheats. Each result is accepted on
  // its word or audited (then it waits: the audit needs another provider).
  // Drained, not stopped: nothing of hers is handed back or left unacknowledged.
  ASSERT_EQ(grid_->Cli({"nodes", "drain", NodeOf(kAlice)}).exit_code, 0);
  Lie(true);
  std::vector<std::string> unchecked;  // accepted unverified: wrong, for now
  std::string audited;
  for (int i = 0; i < 30 && (unchecked.empty() || audited.empty()); ++i) {
    const std::string id = Submit("cheat" + std::to_string(i), "verification: adaptive\n");
    v1::Job j = Wait(id, [this](const v1::Job& j) {
      bool pending = false;
      for (const v1::Attempt* a : RunsOf(j, kMallory)) pending = pending || a->vote() == "pending";
      return Settled(j) || (j.tasks(0).state() == v1::QUEUED && pending && !j.tasks(0).verification().empty());
    });
    if (j.state() == v1::SUCCEEDED) {
      ASSERT_EQ(RunsOf(j, kMallory).size(), 1u) << j.DebugString();
      ASSERT_EQ(RunsOf(j, kMallory)[0]->vote(), "unverified") << j.DebugString();
      EXPECT_EQ(FetchedHello(id), "honest from task 0\ntampered\n") << "accepted on the liar's word";
      unchecked.push_back(id);
    } else if (audited.empty()) {
      audited = id;
    }
  }
  ASSERT_FALSE(unchecked.empty()) << "no result was accepted unaudited in 30 tries at p=0.5";
  ASSERT_FALSE(audited.empty()) << "no audit was drawn in 30 tries at p=0.5";

  // 3. Honest providers return: the audit convicts mallory, and every result
  // it had accepted unchecked since its last verified one is run again and
  // corrected.
  ASSERT_EQ(grid_->Cli({"nodes", "undrain", NodeOf(kAlice)}).exit_code, 0);
  ASSERT_NO_FATAL_FAILURE(Start(kBob));
  v1::Job caught = Wait(audited, Settled);
  ASSERT_EQ(caught.state(), v1::SUCCEEDED) << caught.DebugString();
  ASSERT_EQ(RunsOf(caught, kMallory).size(), 1u);
  EXPECT_EQ(RunsOf(caught, kMallory)[0]->vote(), "wrong");
  EXPECT_EQ(FetchedHello(audited), "honest from task 0\n");
  for (const std::string& id : unchecked) {
    const auto lie_redone = [this](const v1::Job& j) {
      return Settled(j) && !RunsOf(j, kMallory).empty() && RunsOf(j, kMallory)[0]->vote() == "wrong";
    };
    v1::Job j = WaitThroughReopen(id, lie_redone);
    EXPECT_EQ(j.state(), v1::SUCCEEDED) << j.DebugString();
    ASSERT_TRUE(lie_redone(j)) << "re-verified, and found wrong";
    EXPECT_EQ(RunsOf(j, kMallory)[0]->failure_reason(), v1::VERIFICATION_FAILED);
    EXPECT_EQ(FetchedHello(id), "honest from task 0\n") << "corrected";
  }
  // What mallory did honestly before it cheated was verified then, with
  // alice: its votes there are demoted (they count for nothing now), and a
  // result alice alone cannot carry to the quorum of two runs once more
  // (on bob: alice and mallory ran it) before it stands again.
  for (const std::string& id : honest_jobs) {
    const auto demoted = [this](const v1::Job& j) {
      bool counted = false;
      for (const v1::Attempt* a : RunsOf(j, kMallory)) counted = counted || a->vote() == "agreed";
      return Settled(j) && !counted;
    };
    v1::Job j = WaitThroughReopen(id, demoted);
    EXPECT_EQ(j.state(), v1::SUCCEEDED) << j.DebugString();
    for (const v1::Attempt* a : RunsOf(j, kMallory)) {
      if (a->state() != v1::SUCCEEDED) continue;
      EXPECT_EQ(a->vote(), "demoted") << id;
      EXPECT_NE(a->vote_reason().find("was proven wrong"), std::string::npos) << a->vote_reason();
    }
    EXPECT_EQ(FetchedHello(id), "honest from task 0\n") << "still the honest result";
  }
}

bool KnownAnswer(const v1::Task& t) {
  int agreed = 0;
  for (const auto& a : t.attempts()) agreed += a.vote() == "agreed";
  return t.state() == v1::SUCCEEDED && agreed >= 2;
}

TEST_F(VerificationE2E, AKnownAnswerCheckCatchesTheLiarAndItsUncheckedResultIsRedone) {
  // No known-answer supply (challenge.h): which results are replicated stays
  // what the test arranges, not a draw.
  ASSERT_NO_FATAL_FAILURE(
      StartGrid("VerifyChallenge", {"--verification-dispute-margin", "1", "--verification-audit-floor", "0"}));
  ASSERT_NO_FATAL_FAILURE(Start(kAlice));
  ASSERT_NO_FATAL_FAILURE(Start(kBob));
  ASSERT_NO_FATAL_FAILURE(WaitSchedulable(2));
  // Twelve 2-second tasks; every result taken on its word is followed by a
  // known-answer check of its provider (challengeRate 1).
  // Two cores each, as the agents offer: one task at a time per node.
  const std::string manifest = grid_->WriteFile(
      "challenged.yaml", "apiVersion: idlegrid/v1\nname: challenged\nimage: igtest@" + grid_->PushTestImage() +
                             "\ncommand: [\"/sim\"]\nargs: [\"write\", \"honest\", \"2000\"]\n"
                             "resources:\n  cpu: 2\n  memory: 256Mi\n  pids: 64\noutput: /out\n"
                             "array: {count: 12}\nverification: {mode: challenge, challengeRate: 1}\n");
  auto submitted = grid_->Cli({"submit", manifest, "--json"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  const std::string job_id = ParseJson<v1::Job>(submitted.out).id();

  // 1. Alice and bob settle the first tasks between them: known answers.
  v1::Job known = Wait(job_id, [](const v1::Job& j) {
    return std::any_of(j.tasks().begin(), j.tasks().end(), KnownAnswer) || Settled(j);
  });
  ASSERT_NE(known.state(), v1::SUCCEEDED) << "the job ended before the liar could join";
  // Drained, not stopped: their running tasks finish, nothing is handed back.
  for (int n : {kAlice, kBob}) ASSERT_EQ(grid_->Cli({"nodes", "drain", NodeOf(n)}).exit_code, 0);

  // 2. Mallory, alone and lying, one task at a time: its first result is
  // taken on its word, then it gets a task whose answer is known.
  ASSERT_NO_FATAL_FAILURE(StartLiar({"--no-pilots"}, true));
  v1::Job caught = Wait(job_id, [this](const v1::Job& j) {
    for (const auto& t : j.tasks()) {
      for (const auto& a : t.attempts()) {
        if (a.node_id() == NodeOf(kMallory) && a.vote_reason().rfind("challenge_failed", 0) == 0) return true;
      }
    }
    return false;
  });
  // Caught: what it returns from now on is replicated again (probation).
  ASSERT_EQ(grid_->Cli({"nodes", "drain", NodeOf(kMallory)}).exit_code, 0);
  bool failed_check = false;
  for (const auto& t : caught.tasks()) {
    for (const auto& a : t.attempts()) {
      if (a.node_id() == NodeOf(kMallory) && a.vote_reason().rfind("challenge_failed", 0) == 0) {
        EXPECT_EQ(a.vote(), "wrong");
        EXPECT_EQ(a.state(), v1::FAILED);
        EXPECT_EQ(a.failure_reason(), v1::VERIFICATION_FAILED);
        failed_check = true;
      }
    }
  }
  ASSERT_TRUE(failed_check) << caught.DebugString();

  // 3. The honest providers return: what mallory slipped through is re-run
  // and corrected, and the job ends with every task's honest result.
  for (int n : {kAlice, kBob}) ASSERT_EQ(grid_->Cli({"nodes", "undrain", NodeOf(n)}).exit_code, 0);
  v1::Job done = Wait(job_id, Settled, 240000);
  ASSERT_EQ(done.state(), v1::SUCCEEDED) << done.DebugString();
  int mallory_results = 0;
  for (const auto& t : done.tasks()) {
    for (const auto& a : t.attempts()) {
      if (a.node_id() != NodeOf(kMallory) || a.state() == v1::CANCELLED || a.failure_reason() == v1::HANDED_BACK) {
        continue;
      }
      if (a.exit_code() == 0 && a.outputs_size() > 0) ++mallory_results;
      EXPECT_NE(a.vote(), "agreed") << "task " << t.index();
      EXPECT_NE(a.vote(), "unverified") << "task " << t.index() << ": a lie left standing";
    }
  }
  EXPECT_GE(mallory_results, 2) << "its own task and the known-answer check";
  const std::string out = grid_->root + "/fetched-challenged";
  auto f = grid_->Cli({"fetch", job_id, out});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(*ReadFile(out + "/task-" + std::to_string(i) + "/hello.txt"),
              "honest from task " + std::to_string(i) + "\n");
  }
}

TEST_F(VerificationE2E, UnprovenProvidersHoldOnlyTheirShareWhileProvenOnesCouldTakeTheWork) {
  // Trusted after one verified result; no known-answer checks (one-task
  // jobs have none to send). The cap is the operator's default, 2%.
  ASSERT_NO_FATAL_FAILURE(
      StartGrid("VerifyStanding", {"--verification-trust-threshold", "1", "--verification-dispute-margin", "1",
                                   "--verification-known-answer-rate", "0"}));
  ASSERT_NO_FATAL_FAILURE(Start(kAlice));
  ASSERT_NO_FATAL_FAILURE(Start(kBob));
  ASSERT_NO_FATAL_FAILURE(WaitSchedulable(2));
  // 1. Alice and bob both run the first result (a newcomer's is replicated):
  // both are proven for the image.
  v1::Job earned = Wait(Submit("earn", "verification: adaptive\n"), Settled);
  ASSERT_EQ(earned.state(), v1::SUCCEEDED) << earned.DebugString();
  ASSERT_EQ(earned.tasks(0).verification(), "accepted: 2 of 2 results agree (adaptive)") << earned.DebugString();

  // 2. Mallory (honest here) joins: unproven. Six 1-core tasks of 8 s fit
  // the three nodes' two slots each at once, but unproven accounts may hold
  // only one (none held: one may start; two of five in flight is over 2%),
  // so one task waits for alice or bob with the cap's reason.
  ASSERT_NO_FATAL_FAILURE(Start(kMallory));
  ASSERT_NO_FATAL_FAILURE(WaitSchedulable(3));
  const std::string manifest =
      grid_->Manifest("capped", {"write", "honest", "8000"}, "array: {count: 6}\nverification: adaptive\n");
  auto submitted = grid_->Cli({"submit", manifest, "--json"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  const std::string job_id = ParseJson<v1::Job>(submitted.out).id();
  const auto live_on = [this](const v1::Job& j, int n) {
    int live = 0;
    for (const auto& t : j.tasks()) {
      for (const auto& a : t.attempts()) {
        live += a.node_id() == NodeOf(n) && (a.state() == v1::ASSIGNED || a.state() == v1::RUNNING);
      }
    }
    return live;
  };
  const auto held = [](const v1::Task& t) {
    return t.state() == v1::QUEUED && t.message().find("held for a proven provider") != std::string::npos;
  };
  v1::Job capped = Wait(job_id, [&](const v1::Job& j) {
    return Settled(j) || (live_on(j, kAlice) + live_on(j, kBob) == 4 && live_on(j, kMallory) == 1 &&
                          std::any_of(j.tasks().begin(), j.tasks().end(), held));
  });
  ASSERT_FALSE(Settled(capped)) << "no task was ever held for a proven provider: " << capped.DebugString();
  EXPECT_EQ(live_on(capped, kMallory), 1);
  for (const auto& t : capped.tasks()) {
    if (held(t)) {
      EXPECT_NE(t.message().find("unproven providers hold 1 of 5 verified tasks in flight (cap 2%"), std::string::npos)
          << t.message();
    }
  }
  // Nothing is lost to the cap: every task ends with its result.
  v1::Job done = Wait(job_id, Settled, 240000);
  ASSERT_EQ(done.state(), v1::SUCCEEDED) << done.DebugString();
}

}  // namespace
}  // namespace idlegrid::testing
