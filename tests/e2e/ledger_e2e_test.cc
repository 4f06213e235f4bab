// The ledger through a real coordinator (--ledger), agent and CLI: an
// operator deposits, a requester's job escrows its cost cap at submit and
// the unused part comes back when it ends; a job its funds cannot cover is
// refused with the amounts; the books balance.
#include <gtest/gtest.h>
#include <google/protobuf/util/json_util.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "e2e/harness.h"

namespace idlegrid::testing {
namespace {

constexpr int64_t kMicros = 1000000;

TEST(LedgerE2E, EscrowAtSubmitRefundAtTheEndAndShortFundsRefused) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("LedgerE2E");
  ASSERT_TRUE(grid.StartCoordinator({"--ledger"}).ok());
  Status started = grid.StartAgent(1);
  ASSERT_TRUE(started.ok()) << started.message();
  // The provider asks 360 credits per core-hour (0.1 a second), so even a
  // short run costs something.
  ASSERT_TRUE(grid.WriteOwnerPolicy(1, "asks:\n  cpu-core: 360\n").ok());
  auto asking = grid.WaitNodes([](const v1::ListNodesResponse& list) {
    return list.nodes_size() == 1 && list.nodes(0).schedulable() && list.nodes(0).advertisement().asks_size() == 1;
  });
  ASSERT_TRUE(asking.ok()) << asking.status().message();
  ASSERT_EQ(grid.Cli({"account", "create", "alice", "--role", "requester"}).exit_code, 0);
  auto token_out = grid.Cli({"token", "create", "--account", "alice", "--scope", "submit,read", "--expires", "1h"});
  ASSERT_EQ(token_out.exit_code, 0) << token_out.err;
  std::string alice = token_out.out;
  while (!alice.empty() && (alice.back() == '\n' || alice.back() == ' ')) alice.pop_back();
  auto as_alice = [&](std::vector<std::string> args) {
    args.push_back("--token");
    args.push_back(alice);
    return grid.Cli(args);
  };
  auto balance = [&] {
    auto r = grid.Cli({"ledger", "balance", "--account", "alice", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return ParseJson<v1::LedgerBalanceResponse>(r.out);
  };

  // A requester cannot mint money; the operator deposits 10 credits.
  EXPECT_NE(as_alice({"ledger", "deposit", "alice", "1000"}).exit_code, 0);
  auto deposit = grid.Cli({"ledger", "deposit", "alice", "10"});
  ASSERT_EQ(deposit.exit_code, 0) << deposit.out << deposit.err;
  EXPECT_EQ(balance().available_micros(), 10 * kMicros);

  const std::string archive = "/tmp/igtest-image-" + std::to_string(::getpid()) + ".tar";
  const std::string manifest = grid.Manifest("paid", {"write", "paid"}, "maxCost: 4\nrunTimeout: 30s\n");
  ASSERT_EQ(as_alice({"image", "push", archive}).exit_code, 0);

  // More than she holds: refused before anything is stored, with the amounts.
  const std::string greedy = grid.Manifest("greedy", {"write", "x"}, "maxCost: 25\n");
  auto refused = as_alice({"submit", greedy});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("25.000000"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("10.000000"), std::string::npos) << refused.err;
  EXPECT_EQ(balance().available_micros(), 10 * kMicros) << "a refused job holds nothing";

  // The cap covers the worst case: 360/h for its 30 s run timeout is 3 credits.
  auto run = as_alice({"submit", manifest, "--wait", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const v1::Job job = ParseJson<v1::Job>(run.out);
  ASSERT_EQ(job.state(), v1::SUCCEEDED);

  // Settlement follows the job's end: wait for its escrow to be released.
  v1::LedgerBalanceResponse after;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  do {
    after = balance();
    if (after.escrow_micros() == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  } while (std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(after.escrow_micros(), 0) << "the unused cap is refunded";
  // She paid at most the cap, and what she paid is exactly what was charged.
  const int64_t paid = 10 * kMicros - after.available_micros();
  EXPECT_GT(paid, 0) << "the provider's ask was charged";
  EXPECT_LE(paid, 4 * kMicros);

  auto history = grid.Cli({"ledger", "history", "--account", "alice", "--json"});
  ASSERT_EQ(history.exit_code, 0) << history.err;
  const auto postings = ParseJson<v1::LedgerHistoryResponse>(history.out);
  std::vector<std::string> reasons;
  int64_t charged = 0;
  for (const auto& p : postings.postings()) {
    reasons.push_back(p.reason());
    int64_t sum = 0;
    for (const auto& e : p.entries()) sum += e.micros();
    EXPECT_EQ(sum, 0) << "posting " << p.key() << " is unbalanced";
    if (p.reason() == "charge") {
      for (const auto& e : p.entries()) {
        if (e.kind() == "pending") charged += e.micros();
      }
    }
  }
  ASSERT_GE(reasons.size(), 3u) << history.out;
  EXPECT_EQ(reasons[0], "deposit");
  EXPECT_EQ(reasons[1], "escrow");
  EXPECT_EQ(reasons.back(), "refund") << history.out;
  EXPECT_EQ(charged, paid) << history.out;
  std::printf("[ info ] cap 4 credits, charged %lld micro-credits, refunded the rest\n", static_cast<long long>(paid));
}

}  // namespace
}  // namespace idlegrid::testing
