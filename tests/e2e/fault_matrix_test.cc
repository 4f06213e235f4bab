// The fault matrix (issue 32, docs/reliability.md): a real grid of a
// coordinator and two agents, all the failpoint build (idlegrid-faults), runs a
// sweep while one process is killed (SIGKILL, from inside, at exactly the named
// step) at each failpoint of the attempt protocol in turn; the process is
// restarted, the sweep must end with every task succeeded exactly once, and
// the history checker (history_check_support.h) must find nothing: no task
// lost or taken twice, no attempt live twice, no capacity held twice.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/random.h"
#include "e2e/fault_env_support.h"
#include "e2e/harness.h"
#include "e2e/history_check_support.h"
#include "e2e/pg_support.h"
#include "jobs/task_state.h"

namespace idlegrid::testing {
namespace {

// Where, and on which hit, a process dies. agent 0: the coordinator.
struct Fault {
  const char* failpoint;
  int agent;
  int hit;
};

// Every step of an attempt's life, on the side that takes it: the
// coordinator's commit of a placement and of each report (before it, the
// report is lost and resent; after it, the reply is lost), and the agent's
// acceptance, container start, upload and final report.
const Fault kFaults[] = {
    {"coordinator.dispatch.after_commit", 0, 2},
    {"coordinator.report.ACCEPTED.after_commit", 0, 3},
    {"coordinator.report.STARTED.before_commit", 0, 3},
    {"coordinator.report.EXITED.before_commit", 0, 2},
    {"coordinator.report.EXITED.after_commit", 0, 2},
    {"agent.attempt.before_accept", 1, 2},
    {"agent.attempt.after_start", 1, 2},
    {"agent.attempt.before_upload", 2, 2},
    {"agent.attempt.before_report", 2, 2},
};

const std::vector<std::string> kCoordinatorFlags = {"--heartbeat-interval-ms", "300", "--heartbeat-margin", "3",
                                                    "--ack-timeout-ms",        "3000"};

// Run on each store: SQLite (the default) and PostgreSQL, whose commit path
// (store/postgres) is a different program.
class FaultMatrix : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    grid_ = std::make_unique<Grid>("FaultMatrix");
    grid_->UseBinary(IDLEGRID_FAULTS_BINARY);
    flags_ = kCoordinatorFlags;
    if (GetParam() == "postgres") {
      char pg_dir[] = "/tmp/igpg-fm-XXXXXX";
      ASSERT_NE(::mkdtemp(pg_dir), nullptr);
      auto url = FreshDatabase(pg_dir);
      ASSERT_TRUE(url.ok()) << url.status().message();
      flags_.insert(flags_.end(), {"--db", *url});
    }
    ASSERT_TRUE(grid_->StartCoordinator(flags_).ok());
    // Restarts keep the address the agents dial.
    grid_->listen_port = std::stoi(grid_->grpc_addr.substr(grid_->grpc_addr.rfind(':') + 1));
    for (int n : {1, 2}) ASSERT_TRUE(grid_->StartAgent(n).ok());
  }

  // Restarts the process `f` names with its failpoint armed (or none).
  void Restart(const Fault& f, const std::string& failpoints) {
    if (f.agent == 0) {
      if (grid_->coordinator && grid_->coordinator->running()) grid_->StopCoordinator(SIGTERM);
      grid_->coordinator_failpoints = failpoints;
      Status st = grid_->StartCoordinator(flags_);
      ASSERT_TRUE(st.ok()) << st.message();
    } else {
      grid_->StopAgent(f.agent, SIGTERM);
      grid_->agent_failpoints[f.agent] = failpoints;
      Status st = grid_->StartAgent(f.agent);
      ASSERT_TRUE(st.ok()) << st.message();
    }
  }
  Process* ProcessOf(const Fault& f) {
    return f.agent == 0 ? grid_->coordinator.get() : grid_->agents[size_t(f.agent - 1)].get();
  }

  std::unique_ptr<Grid> grid_;
  std::vector<std::string> flags_;
};

TEST_P(FaultMatrix, AKillAtEveryProtocolStepLosesNothingAndRunsNothingTwice) {
  for (size_t i = 0; i < std::size(kFaults); ++i) {
    const Fault& f = kFaults[i];
    SCOPED_TRACE(f.failpoint);
    grid_->SetFailpointGate(false);
    ASSERT_NO_FATAL_FAILURE(Restart(f, std::string(f.failpoint) + "=crash@" + std::to_string(f.hit)));
    // Start-up work (a reconnecting node's checks) passes the same steps: the
    // hits that count are the sweep's, once both nodes take work again.
    auto nodes = grid_->WaitNodes([](const v1::ListNodesResponse& list) {
      int ready = 0;
      for (const auto& node : list.nodes()) ready += node.schedulable() && node.state() == "online";
      return ready == 2;
    });
    ASSERT_TRUE(nodes.ok()) << nodes.status().message();
    grid_->SetFailpointGate(true);
    const std::string manifest = grid_->Manifest("fault" + std::to_string(i), {"write", "fault"},
                                                 "array: {count: 6}\nretries: 3\nidempotent: true\n");
    auto submitted = grid_->Cli({"submit", manifest, "--json"});
    ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
    const std::string job_id = ParseJson<v1::Job>(submitted.out).id();

    // The armed process dies at the failpoint: a kill -9 at exactly that step.
    Process* armed = ProcessOf(f);
    ASSERT_TRUE(armed->WaitExit(120000)) << f.failpoint << " was never reached";
    EXPECT_EQ(armed->Wait(), 128 + SIGKILL);
    ASSERT_NO_FATAL_FAILURE(Restart(f, ""));

    auto done = grid_->WaitJob(
        job_id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 180000);
    ASSERT_TRUE(done.ok()) << done.status().ToString();
    EXPECT_EQ(done->state(), v1::SUCCEEDED) << done->DebugString();
    ExpectSoundHistory(*done, grid_->node_ids);
  }
}

INSTANTIATE_TEST_SUITE_P(Stores, FaultMatrix, ::testing::Values("sqlite", "postgres"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// The requester's ledger once the job's escrow is gone (settled: its charges
// made, the rest refunded); polled, as settlement announces nothing.
Result<v1::LedgerBalanceResponse> BalanceOnceSettled(Grid& grid, const std::string& account) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  v1::LedgerBalanceResponse last;
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = grid.Cli({"ledger", "balance", "--account", account, "--json"});
    if (r.exit_code == 0) {
      last = ParseJson<v1::LedgerBalanceResponse>(r.out);
      if (last.escrow_micros() == 0) return last;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return Status::Unavailable("escrow never released in 60 s: " + last.DebugString());
}

// The verification verdict and the ledger settlement are the two writes the
// crash matrix above cannot reach (they need a verified job on two provider
// accounts and the ledger): a kill just before each, then a restart. The job
// ends accepted, the history is sound, every posting balances, and each
// accepted run is charged exactly once, the rest of the escrow refunded.
TEST(VerifiedFaults, AKillBeforeTheVerdictOrTheSettlementPaysOnceAndLosesNothing) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("VerifiedFaults");
  grid.UseBinary(IDLEGRID_FAULTS_BINARY);
  std::vector<std::string> flags = kCoordinatorFlags;
  flags.insert(flags.end(), {"--ledger"});
  ASSERT_TRUE(grid.StartCoordinator(flags).ok());
  grid.listen_port = std::stoi(grid.grpc_addr.substr(grid.grpc_addr.rfind(':') + 1));
  for (auto [n, provider] : {std::pair{1, "alice"}, {2, "bob"}}) {
    ASSERT_EQ(grid.Cli({"account", "create", provider, "--role", "provider"}).exit_code, 0);
    auto token = grid.Cli({"join-token", "create", "--provider", provider});
    ASSERT_EQ(token.exit_code, 0) << token.err;
    grid.agent_join_tokens[n] = Trim(token.out);
    ASSERT_TRUE(grid.StartAgent(n).ok());
    // A price, so that a run paid twice would show: 36 credits a core-hour.
    ASSERT_TRUE(grid.WriteOwnerPolicy(n, "asks:\n  cpu-core: 36\n").ok());
  }
  ASSERT_EQ(grid.Cli({"ledger", "deposit", "operator", "20"}).exit_code, 0);
  const int64_t deposited = 20'000'000;
  int64_t charged_before = 0;
  for (auto [failpoint, name] :
       {std::pair{"coordinator.verdict.before_commit", "verdict"}, {"coordinator.settle.before_commit", "settle"}}) {
    SCOPED_TRACE(failpoint);
    grid.SetFailpointGate(false);
    grid.StopCoordinator(SIGTERM);
    grid.coordinator_failpoints = std::string(failpoint) + "=crash@1";
    ASSERT_TRUE(grid.StartCoordinator(flags).ok());
    auto nodes = grid.WaitNodes([](const v1::ListNodesResponse& list) {
      int ready = 0;
      for (const auto& node : list.nodes()) {
        ready += node.schedulable() && node.state() == "online" && node.advertisement().asks_size() == 1;
      }
      return ready == 2;
    });
    ASSERT_TRUE(nodes.ok()) << nodes.status().message();
    grid.SetFailpointGate(true);
    const std::string manifest =
        grid.Manifest(std::string("verified-") + name, {"write", "verified", "500"},
                      "array: {count: 4}\nmaxCost: 4\nrunTimeout: 30\nverification:\n  mode: replicate\n"
                      "  replicas: 2\n  quorum: 2\n");
    auto submitted = grid.Cli({"submit", manifest, "--json"});
    ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
    const std::string job_id = ParseJson<v1::Job>(submitted.out).id();
    ASSERT_TRUE(grid.coordinator->WaitExit(120000)) << failpoint << " was never reached";
    EXPECT_EQ(grid.coordinator->Wait(), 128 + SIGKILL);
    grid.coordinator_failpoints.clear();
    ASSERT_TRUE(grid.StartCoordinator(flags).ok());

    auto done = grid.WaitJob(
        job_id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 180000);
    ASSERT_TRUE(done.ok()) << done.status().ToString();
    ASSERT_EQ(done->state(), v1::SUCCEEDED) << done->DebugString();
    ExpectSoundHistory(*done, grid.node_ids);
    int accepted_runs = 0;
    for (const auto& t : done->tasks()) {
      EXPECT_NE(t.verification().find("accepted"), std::string::npos) << t.verification();
      for (const auto& a : t.attempts()) accepted_runs += a.state() == v1::SUCCEEDED;
    }

    // The books: every posting balances; each accepted run charged once.
    auto balance = BalanceOnceSettled(grid, "operator");
    ASSERT_TRUE(balance.ok()) << balance.status().message();
    auto history = grid.Cli({"ledger", "history", "--account", "operator", "--limit", "1000", "--json"});
    ASSERT_EQ(history.exit_code, 0) << history.err;
    int charges = 0;
    int64_t charged = 0;
    std::set<std::string> keys;
    const auto postings = ParseJson<v1::LedgerHistoryResponse>(history.out);
    for (const auto& p : postings.postings()) {
      EXPECT_TRUE(keys.insert(p.key()).second) << "posting " << p.key() << " applied twice";
      int64_t sum = 0;
      for (const auto& e : p.entries()) sum += e.micros();
      EXPECT_EQ(sum, 0) << "posting " << p.key() << " does not balance";
      if (p.job_id() != job_id || p.reason() != "charge" || p.entries().empty()) continue;
      ++charges;
      for (const auto& e : p.entries()) {
        if (e.owner() == "operator") charged -= e.micros();
      }
    }
    EXPECT_EQ(charges, accepted_runs) << history.out;
    charged_before += charged;
    EXPECT_EQ(balance->available_micros(), deposited - charged_before) << balance->DebugString();
  }
}

// "/readyz" answers 200 (`ready`) or not; polled: the coordinator announces
// no event when its store comes or goes.
bool WaitReady(Grid& grid, bool want, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if ((grid.Curl("/readyz", {"--max-time", "5"}).exit_code == 0) == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// WaitJob, again while the call fails as Unavailable: a call that meets the
// database restarting may fail so (clients retry Unavailable); what must hold
// is the sweep's end, not every call's success.
Result<v1::Job> WaitThroughRestart(Grid& grid, const std::string& job_id,
                                   const std::function<bool(const v1::Job&)>& pred, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    Result<v1::Job> job = grid.WaitJob(job_id, pred, int(std::max<int64_t>(left, 1)));
    if (job.ok() || job.status().code() != Code::kUnavailable || left <= 0) return job;
    std::fprintf(stderr, "[fault] %s; calling again\n", job.status().ToString().c_str());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// The coordinator's PostgreSQL crashes mid-sweep and comes back at once
// (crash recovery, every connection cut), then goes away for a while (an
// outage, as a partition between them looks from the coordinator) and comes
// back: the pool reconnects (store/postgres/pg_pool.cc), /readyz says so, and
// the sweep ends with nothing lost.
TEST(PostgresFaults, ACrashAndAnOutageMidSweepLoseNothing) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("PgFaults");
  // A private cluster: the run's shared one must not be restarted under other tests.
  const std::string pg_dir = "/tmp/igpg-fault-" + RandomHex(6);
  const std::string script = std::string(IDLEGRID_SOURCE_DIR) + "/scripts/pg-test-cluster.sh";
  auto started = RunCommand({script, "start", pg_dir, std::to_string(::getpid())});
  ASSERT_EQ(started.exit_code, 0) << "cannot start PostgreSQL (run scripts/install-deps.sh): " << started.err;
  struct Cleanup {
    std::string script, dir;
    ~Cleanup() { RunCommand({script, "stop", dir}); }
  } cleanup{script, pg_dir};
  ASSERT_TRUE(grid.StartCoordinator({"--db", Trim(started.out), "--heartbeat-interval-ms", "300", "--heartbeat-margin",
                                     "10", "--ack-timeout-ms", "3000"})
                  .ok());
  for (int n : {1, 2}) ASSERT_TRUE(grid.StartAgent(n).ok());
  const std::string manifest =
      grid.Manifest("pgfault", {"write", "pg"}, "array: {count: 24}\nretries: 3\nidempotent: true\n");
  auto submitted = grid.Cli({"submit", manifest, "--json"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  const std::string job_id = ParseJson<v1::Job>(submitted.out).id();

  // 1. A crash and an immediate restart.
  ASSERT_TRUE(grid.WaitJob(job_id, SucceededAtLeast(3)).ok());
  ASSERT_EQ(RunCommand({script, "crash", pg_dir}).exit_code, 0);
  ASSERT_EQ(RunCommand({script, "resume", pg_dir}).exit_code, 0);
  // 2. An outage the coordinator notices before the database returns.
  ASSERT_TRUE(WaitThroughRestart(grid, job_id, SucceededAtLeast(10), 120000).ok());
  ASSERT_EQ(RunCommand({script, "crash", pg_dir}).exit_code, 0);
  EXPECT_TRUE(WaitReady(grid, false, 30000)) << "/readyz still ready with the database down";
  ASSERT_EQ(RunCommand({script, "resume", pg_dir}).exit_code, 0);
  EXPECT_TRUE(WaitReady(grid, true, 60000)) << "/readyz never ready again after the database returned";

  auto done = WaitThroughRestart(
      grid, job_id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 240000);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->state(), v1::SUCCEEDED) << done->DebugString();
  ExpectSoundHistory(*done, grid.node_ids);
}

// A partition between the coordinator and its PostgreSQL with the database
// still up: iptables drops every packet to and from the server's port on
// the loopback, so connections hang rather than reset. The coordinator's
// connections give up within seconds (libpq keepalives and a TCP user
// timeout, pg_connection.cc), /readyz says not ready, and once the link
// heals the sweep ends with nothing lost.
TEST(PostgresFaults, APartitionFromTheDatabaseWhileItStaysUpLosesNothing) {
  if (::geteuid() != 0) GTEST_SKIP() << "cutting a link with iptables needs root";
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("PgPartition");
  const std::string pg_dir = "/tmp/igpg-cut-" + RandomHex(6);
  const std::string port = std::to_string(20000 + ::getpid() % 20000);
  const std::string script = std::string(IDLEGRID_SOURCE_DIR) + "/scripts/pg-test-cluster.sh";
  auto started = RunCommand({"env", "IG_PG_TCP_PORT=" + port, script, "start", pg_dir, std::to_string(::getpid())});
  ASSERT_EQ(started.exit_code, 0) << "cannot start PostgreSQL (run scripts/install-deps.sh): " << started.err;
  struct Cleanup {
    std::string script, dir;
    ~Cleanup() { RunCommand({script, "stop", dir}); }
  } cleanup{script, pg_dir};
  const std::vector<std::vector<std::string>> rules = {
      {"OUTPUT", "-o", "lo", "-p", "tcp", "--dport", port, "-j", "DROP"},
      {"OUTPUT", "-o", "lo", "-p", "tcp", "--sport", port, "-j", "DROP"}};
  auto iptables = [&](const std::string& op) {
    bool ok = true;
    for (const auto& rule : rules) {
      std::vector<std::string> argv = {"iptables", op};
      argv.insert(argv.end(), rule.begin(), rule.end());
      auto r = RunCommand(argv);
      if (r.exit_code != 0) ADD_FAILURE() << "iptables " << op << ": " << r.err;
      ok = ok && r.exit_code == 0;
    }
    return ok;
  };
  struct Heal {
    std::function<bool(const std::string&)> iptables;
    bool cut = false;
    ~Heal() {
      if (cut) iptables("-D");
    }
  } heal{iptables};
  ASSERT_TRUE(grid.StartCoordinator({"--db", Trim(started.out), "--heartbeat-interval-ms", "300", "--heartbeat-margin",
                                     "10", "--ack-timeout-ms", "3000"})
                  .ok());
  for (int n : {1, 2}) ASSERT_TRUE(grid.StartAgent(n).ok());
  const std::string manifest =
      grid.Manifest("pgcut", {"write", "pgcut"}, "array: {count: 24}\nretries: 4\nidempotent: true\n");
  auto submitted = grid.Cli({"submit", manifest, "--json"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  const std::string job_id = ParseJson<v1::Job>(submitted.out).id();
  ASSERT_TRUE(grid.WaitJob(job_id, SucceededAtLeast(3)).ok());

  ASSERT_TRUE(heal.cut = iptables("-I"));
  EXPECT_TRUE(WaitReady(grid, false, 60000)) << "/readyz still ready with the database cut off";
  heal.cut = !iptables("-D");
  EXPECT_TRUE(WaitReady(grid, true, 90000)) << "/readyz never ready again after the link healed";

  auto done = WaitThroughRestart(
      grid, job_id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 240000);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->state(), v1::SUCCEEDED) << done->DebugString();
  ExpectSoundHistory(*done, grid.node_ids);
}

}  // namespace
}  // namespace idlegrid::testing
