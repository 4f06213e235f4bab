// What only the PostgreSQL store promises (the shared contract is in
// store_test.cc and runs here too): several coordinator processes on one
// database. Each test forks processes that open their own stores on a fresh
// database; what happened is checked from the database afterwards.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "store/store_fixture.h"

namespace idlegrid::store {
namespace {

using namespace backends;  // NOLINT: the shared fixture and helpers

class PostgresStoreTest : public StoreFixture, public ::testing::Test {
 protected:
  void SetUp() override { CreateDatabase(BackendKind::kPostgres); }
};

// Forks `n` children that run `work(i, wait_for_start)` and _exit with what
// it returns; `wait_for_start()` returns once every child has called it, so
// they can get ready (connect) and then race from a common start line.
// Returns their exit codes.
template <typename Work>
std::vector<int> RunProcesses(int n, Work work) {
  int ready[2], gate[2];
  if (::pipe(ready) != 0 || ::pipe(gate) != 0) return {};
  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(ready[0]);
      ::close(gate[1]);
      auto wait_for_start = [&] {
        char c = 'r';
        (void)::write(ready[1], &c, 1);
        (void)::read(gate[0], &c, 1);  // returns at EOF: when the parent lets everyone go
      };
      ::_exit(work(i, wait_for_start));
    }
    pids.push_back(pid);
  }
  ::close(ready[1]);
  ::close(gate[0]);
  char c;
  for (int i = 0; i < n && ::read(ready[0], &c, 1) == 1; ++i) {
  }
  ::close(ready[0]);
  ::close(gate[1]);
  std::vector<int> codes;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  return codes;
}

// Before the schema versions were shared with SQLite, PostgreSQL numbered
// its own: its 1 and 2 are today's 6 and 7. Such a database opens without
// re-running a script and ends at the shared version.
TEST_F(PostgresStoreTest, DatabaseFromTheOwnNumberingOpensAtTheSharedVersion) {
  CreateJob("j1");
  store_.reset();
  // Back to the schema that numbering called 2 (today's 7): undo v15, v14, v13, v12, v11 and v10.
  ASSERT_TRUE(db_->Exec(kUndoV18).ok());
  ASSERT_TRUE(db_->Exec(kUndoV17).ok());
  ASSERT_TRUE(db_->Exec(kUndoV16).ok());
  ASSERT_TRUE(db_->Exec(kUndoV15).ok());
  ASSERT_TRUE(db_->Exec("ALTER TABLE attempts DROP COLUMN receipt").ok());
  ASSERT_TRUE(db_->Exec("DROP TABLE ledger_entries; DROP TABLE ledger_postings; DROP TABLE ledger_balances; DROP TABLE "
                        "ledger_settlement")
                  .ok());
  ASSERT_TRUE(db_->Exec("ALTER TABLE attempts DROP COLUMN provenance").ok());
  ASSERT_TRUE(
      db_->Exec("DROP TABLE artifact_refs; DROP TABLE join_tokens; DROP TABLE accounts; "
                "DROP INDEX jobs_by_account; DROP INDEX api_tokens_by_id; "
                "ALTER TABLE jobs DROP COLUMN account; ALTER TABLE jobs DROP COLUMN retention_ms; "
                "ALTER TABLE nodes DROP COLUMN provider; ALTER TABLE artifacts DROP COLUMN public; "
                "ALTER TABLE api_tokens DROP COLUMN id; ALTER TABLE api_tokens DROP COLUMN account; "
                "ALTER TABLE api_tokens DROP COLUMN scopes; ALTER TABLE api_tokens DROP COLUMN expires_ms; "
                "ALTER TABLE api_tokens DROP COLUMN revoked_ms; ALTER TABLE api_tokens DROP COLUMN name; "
                "INSERT INTO api_tokens(hash, role, created_ms) VALUES('sha256:0123456789abcdef99', 'admin', 1)")
          .ok());
  ASSERT_TRUE(db_->Exec("DROP TABLE log_usage; DROP INDEX logs_by_task_part; ALTER TABLE logs DROP COLUMN part").ok());
  ASSERT_TRUE(db_->SetSchemaVersion(2).ok());
  Open();
  EXPECT_EQ(*db_->SchemaVersion(), LatestSchemaVersion(BackendKind::kPostgres));
  EXPECT_GE(LatestSchemaVersion(BackendKind::kPostgres), 12);
  EXPECT_EQ(Job("j1").tasks_size(), 1);
  // v11 (tenancy): old jobs and the old administrator token are the operator's.
  EXPECT_EQ(Job("j1").account(), kOperatorAccount);
  auto token = store_->TokenByHash("sha256:0123456789abcdef99");
  ASSERT_TRUE(token.ok() && token->has_value()) << token.status().ToString();
  EXPECT_EQ((*token)->account, kOperatorAccount);
  EXPECT_EQ((*token)->role, "operator");
  EXPECT_EQ((*token)->id, "0123456789abcdef");
}

TEST_F(PostgresStoreTest, CoordinatorsStartingTogetherMigrateOnce) {
  auto fresh = CreateTestDatabase(BackendKind::kPostgres);
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  const std::string url = (*fresh)->location();
  std::vector<int> codes = RunProcesses(6, [&](int, auto wait_for_start) {
    wait_for_start();
    auto opened = OpenStore(url);
    if (!opened.ok()) {
      std::fprintf(stderr, "open: %s\n", opened.status().ToString().c_str());
      return 1;
    }
    return (*opened)->CreateJob("j", Spec(), "sha256:spec", 1000).ok() ? 0 : 2;
  });
  // Everyone opened it; exactly one created the job (the rest: AlreadyExists).
  EXPECT_EQ(std::count(codes.begin(), codes.end(), 1), 0);
  EXPECT_EQ(std::count(codes.begin(), codes.end(), 0), 1);
  EXPECT_EQ(*(*fresh)->SchemaVersion(), LatestSchemaVersion(BackendKind::kPostgres));
  EXPECT_EQ(*(*fresh)->QueryInt("SELECT COUNT(*) FROM idlegrid_schema"), 1);
  EXPECT_EQ(*(*fresh)->QueryInt("SELECT COUNT(*) FROM tasks"), 1);
}

// Each process plays a coordinator with two scheduling threads: take the head
// of the queue, shuffle it (so commits collide in every order) and commit it,
// until nothing is queued. It reports how many assignments it was told
// succeeded through `out`, one uint32 per committed attempt index.
template <typename Wait>
int CommitUntilDrained(const std::string& url, int process, int out_fd, Wait wait_for_start) {
  auto opened = OpenStore(url);
  if (!opened.ok()) return 1;
  Store& store = **opened;
  wait_for_start();
  std::atomic<bool> failed{false};
  std::atomic<uint32_t> committed{0};
  auto worker = [&](int thread) {
    std::mt19937 rng(process * 100 + thread);
    for (int round = 0; !failed; ++round) {
      auto queued = store.QueuedTasks(24);
      if (!queued.ok()) {
        failed = true;
        return;
      }
      if (queued->empty()) return;
      std::shuffle(queued->begin(), queued->end(), rng);
      std::vector<NewAttempt> batch;
      for (const auto& t : *queued) {
        std::string id = "p" + std::to_string(process) + "t" + std::to_string(thread) + "r" + std::to_string(round) +
                         "-" + t.job_id + "-" + std::to_string(t.index);
        batch.push_back({id, t.job_id, t.index, "node-" + std::to_string(t.index % 7), 5000});
      }
      auto done = store.CommitAssignments(batch);
      if (!done.ok()) {
        std::fprintf(stderr, "commit: %s\n", done.status().ToString().c_str());
        failed = true;
        return;
      }
      committed += static_cast<uint32_t>(done->size());
    }
  };
  std::thread a(worker, 0), b(worker, 1);
  a.join();
  b.join();
  uint32_t n = committed;
  if (::write(out_fd, &n, sizeof n) != sizeof n) return 3;
  return failed ? 2 : 0;
}

TEST_F(PostgresStoreTest, CoordinatorsCommittingTheSameTasksNeverGrantOneTwice) {
  constexpr int kJobs = 6;
  constexpr uint32_t kTasksPerJob = 100;
  constexpr int kProcesses = 4;
  for (int j = 0; j < kJobs; ++j) CreateJob("j" + std::to_string(j), {.array_count = kTasksPerJob});
  store_.reset();
  int counts[2];
  ASSERT_EQ(::pipe(counts), 0);
  std::vector<int> codes =
      RunProcesses(kProcesses, [&](int i, auto wait) { return CommitUntilDrained(path_, i, counts[1], wait); });
  ::close(counts[1]);
  uint32_t told_committed = 0;
  uint32_t n;
  while (::read(counts[0], &n, sizeof n) == sizeof n) told_committed += n;
  ::close(counts[0]);
  for (int code : codes) EXPECT_EQ(code, 0);

  // From the database: every task assigned exactly once, and what the
  // coordinators were told they committed is exactly what is there.
  const int64_t total = kJobs * kTasksPerJob;
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM (SELECT job_id, idx FROM attempts GROUP BY job_id, idx "
                     "HAVING COUNT(*) > 1) twice"),
            0);
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM attempts"), total);
  EXPECT_EQ(QueryInt("SELECT COUNT(*) FROM tasks WHERE state = " + std::to_string(v1::ASSIGNED) + " AND attempts = 1"),
            total);
  EXPECT_EQ(told_committed, total);
  // The work really was spread: more than one process won tasks.
  EXPECT_GT(QueryInt("SELECT COUNT(DISTINCT substr(id, 1, 2)) FROM attempts"), 1);
}

TEST_F(PostgresStoreTest, DuplicateReportsRacingFromManyConnectionsApplyOnce) {
  CreateJob("j", {.array_count = 20});
  std::vector<NewAttempt> batch;
  for (uint32_t i = 0; i < 20; ++i) batch.push_back({"a" + std::to_string(i), "j", i, "n1", 2000});
  ASSERT_EQ(store_->CommitAssignments(batch)->size(), 20u);
  std::atomic<int> errors{0}, applied{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&] {
      for (uint32_t i = 0; i < 20; ++i) {
        for (auto event : {v1::STARTED, v1::EXITED}) {
          auto r = store_->ApplyAttemptReport("n1", Report("a" + std::to_string(i), event, 0), 3000);
          if (r.ok()) {
            if (r->outcome.changed) ++applied;
          } else if (r.status().code() != Code::kFailedPrecondition) {
            ++errors;
            ADD_FAILURE() << r.status().ToString();
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors, 0);
  // Each attempt started once and exited once, whoever got there first.
  EXPECT_EQ(applied, 40);
  v1::Job job = Job("j");
  EXPECT_EQ(job.state(), v1::SUCCEEDED);
  for (const auto& t : job.tasks()) {
    ASSERT_EQ(t.attempts_size(), 1);
    EXPECT_EQ(t.attempts(0).state(), v1::SUCCEEDED);
  }
}

}  // namespace
}  // namespace idlegrid::store
