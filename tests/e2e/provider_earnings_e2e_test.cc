// A provider's side through a real coordinator (--ledger), agent and CLI:
// after its node ran a priced job, `provider earnings` shows the accepted
// work at its placement price, the ledger's pending money and an estimate at
// its asks; `market` shows the clearing price; `nodes` shows the heartbeat
// handshake's parts; and another provider cannot read its earnings.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "e2e/harness.h"

namespace idlegrid::testing {
namespace {

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

TEST(ProviderEarningsE2E, EarningsMarketPricesAndHandshakeAfterAPricedJob) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("ProviderEarningsE2E");
  ASSERT_TRUE(grid.StartCoordinator({"--ledger"}).ok());
  for (const char* p : {"alice", "bob"}) {
    ASSERT_EQ(grid.Cli({"account", "create", p, "--role", "provider"}).exit_code, 0);
  }
  auto join = grid.Cli({"join-token", "create", "--provider", "alice"});
  ASSERT_EQ(join.exit_code, 0) << join.err;
  grid.agent_join_tokens[1] = Trimmed(join.out);
  Status started = grid.StartAgent(1);
  ASSERT_TRUE(started.ok()) << started.message();
  // 360 credits per core-hour: even a short run earns something.
  ASSERT_TRUE(grid.WriteOwnerPolicy(1, "asks:\n  cpu-core: 360\n").ok());
  auto asking = grid.WaitNodes([](const v1::ListNodesResponse& list) {
    return list.nodes_size() == 1 && list.nodes(0).schedulable() && list.nodes(0).advertisement().asks_size() == 1;
  });
  ASSERT_TRUE(asking.ok()) << asking.status().message();
  const uint32_t cores = asking->nodes(0).advertisement().capacity().cpu_cores();
  ASSERT_GT(cores, 0u);

  // A requester with money pays for the run.
  ASSERT_EQ(grid.Cli({"account", "create", "carol", "--role", "requester"}).exit_code, 0);
  auto carol_token = grid.Cli({"token", "create", "--account", "carol", "--scope", "submit,read", "--expires", "1h"});
  ASSERT_EQ(carol_token.exit_code, 0) << carol_token.err;
  const std::string carol = Trimmed(carol_token.out);
  ASSERT_EQ(grid.Cli({"ledger", "deposit", "carol", "10"}).exit_code, 0);
  const std::string archive = "/tmp/igtest-image-" + std::to_string(::getpid()) + ".tar";
  // Manifest() writes the test image's archive too.
  const std::string manifest = grid.Manifest("paid", {"write", "paid"}, "maxCost: 4\nrunTimeout: 30s\n");
  ASSERT_EQ(grid.Cli({"image", "push", archive, "--token", carol}).exit_code, 0);
  auto run = grid.Cli({"submit", manifest, "--wait", "--json", "--token", carol});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  ASSERT_EQ(ParseJson<v1::Job>(run.out).state(), v1::SUCCEEDED);

  auto earned = grid.Cli({"provider", "earnings", "--provider", "alice", "--json"});
  ASSERT_EQ(earned.exit_code, 0) << earned.out << earned.err;
  const auto e = ParseJson<v1::ProviderEarningsResponse>(earned.out);
  EXPECT_EQ(e.provider(), "alice");
  ASSERT_EQ(e.nodes_size(), 1) << earned.out;
  EXPECT_EQ(e.nodes(0).node_id(), grid.node_ids[0]);
  // Its readiness benchmark (placed before the asks were read, at 0) is work too.
  EXPECT_GE(e.nodes(0).attempts(), 1u);
  EXPECT_GT(e.metered_credits(), 0) << "a run at 360/core-hour is worth something";
  EXPECT_TRUE(e.ledger());
  EXPECT_DOUBLE_EQ(e.estimate_per_hour(), 360.0 * cores) << "every offered core at its ask";
  auto text = grid.Cli({"provider", "earnings", "--provider", "alice"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("accepted attempt(s)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("cpu-core at 360.0000/h (recently cleared at"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("latest 360.0000"), std::string::npos) << text.out;

  // The market shows what placements cleared at.
  auto market = grid.Cli({"market", "--json"});
  ASSERT_EQ(market.exit_code, 0) << market.err;
  bool priced = false;
  const auto book = ParseJson<v1::MarketResponse>(market.out);
  for (const auto& row : book.rows()) {
    if (row.device_class() == "cpu-core" && row.recent_placements() >= 1 && row.recent_price() == 360) priced = true;
  }
  EXPECT_TRUE(priced) << market.out;

  // The handshake's parts: the agent times its heartbeats' round trips.
  auto timed = grid.WaitNodes([](const v1::ListNodesResponse& list) {
    return list.nodes_size() == 1 && list.nodes(0).reliability_components().rtt_ms() > 0;
  });
  ASSERT_TRUE(timed.ok()) << timed.status().message();
  auto nodes = grid.Cli({"nodes", "--details"});
  ASSERT_EQ(nodes.exit_code, 0);
  EXPECT_NE(nodes.out.find("handshake: heartbeat jitter"), std::string::npos) << nodes.out;

  // Bob's token reads bob's earnings (nothing), never alice's.
  auto bob_token = grid.Cli({"token", "create", "--account", "bob", "--scope", "read", "--expires", "1h"});
  ASSERT_EQ(bob_token.exit_code, 0) << bob_token.err;
  const std::string bob = Trimmed(bob_token.out);
  auto own = grid.Cli({"provider", "earnings", "--json", "--token", bob});
  ASSERT_EQ(own.exit_code, 0) << own.err;
  EXPECT_EQ(ParseJson<v1::ProviderEarningsResponse>(own.out).nodes_size(), 0);
  auto other = grid.Cli({"provider", "earnings", "--provider", "alice", "--token", bob});
  EXPECT_NE(other.exit_code, 0) << other.out;
}

}  // namespace
}  // namespace idlegrid::testing
