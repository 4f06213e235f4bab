// The node table (coordinator/node_table.h) on its own: a real SQLite store,
// real agent sessions, a manual clock, and hooks that record what the table
// asks of the other services. Registration derives the id from the node's key
// and refuses a wrong join secret; a connected node that falls silent is
// suspect (no new work) past its timeout and offline one interval later, and
// only then is its session dropped and the readiness service told to forget
// it; a drained node says so and takes work again when undone; the snapshot
// carries the readiness service's reason and the data policy in force.
#include "coordinator/node_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "advert/advertisement.h"
#include "advert/node_key.h"
#include "common/digest.h"
#include "coordinator/pipeline_support.h"
#include "coordinator/service_fixture.h"

namespace idlegrid::coordinator {
namespace {

constexpr char kSecret[] = "igj_table";

class NodeTableTest : public ServiceTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(ServiceTest::SetUp());
    tenancy_ = std::make_unique<Tenancy>(store_.get(), &clock_, auth::Quota{});
    NodeTable::Hooks hooks = testing::InertNodeHooks([this] { ++changes_; });
    hooks.forget_readiness = [this](const std::string& id) { forgotten_.push_back(id); };
    hooks.cpu_bench_error = [this] { return bench_error_; };
    Options options;  // heartbeat interval 5 s, margin 3, dispatch period 1 s
    table_ = std::make_unique<NodeTable>(store_.get(), &clock_, options, Sha256Digest(kSecret), tenancy_.get(),
                                         &sessions_, &counters_, std::move(hooks));
    table_->Load(clock_.NowMs());
  }

  // Registers a node under `secret`; its id, or "" with a failure recorded.
  std::string Register(const std::string& secret = kSecret, const std::string& version = AgentVersionString()) {
    v1::RegisterRequest request;
    request.set_join_secret(secret);
    request.set_name("node-a");
    request.mutable_info()->set_hostname("node-a");
    request.mutable_info()->set_cpu_cores(4);
    request.mutable_info()->set_memory_bytes(8ull << 30);
    request.mutable_info()->set_agent_version(version);
    *request.mutable_advertisement() = advert::SignAdvertisement(testing::AdOf(1), key_);
    auto response = table_->Register(request, "test");
    if (!response.ok()) {
      last_error_ = response.status().ToString();
      return "";
    }
    return response->node_id();
  }

  v1::Node Listed(const std::string& id) {
    auto nodes = table_->List();
    EXPECT_TRUE(nodes.ok()) << nodes.status().ToString();
    if (nodes.ok()) {
      for (const auto& n : nodes->nodes()) {
        if (n.id() == id) return n;
      }
    }
    ADD_FAILURE() << "node " << id << " not listed";
    return v1::Node();
  }

  // One loop pass per simulated second, as the coordinator's loop runs them.
  void PassSeconds(int seconds) {
    for (int s = 0; s < seconds; ++s) {
      clock_.AdvanceMs(1000);
      table_->Sweep();
    }
  }

  advert::NodeKey key_ = advert::NodeKey::Generate();
  std::unique_ptr<Tenancy> tenancy_;
  AgentSessions sessions_;
  EventCounters counters_;
  std::unique_ptr<NodeTable> table_;
  std::vector<std::string> forgotten_;
  std::string bench_error_;
  std::string last_error_;
  int changes_ = 0;
};

TEST_F(NodeTableTest, RegistrationDerivesTheIdFromTheKeyAndRefusesAWrongSecret) {
  EXPECT_EQ(Register("igj_wrong"), "");
  EXPECT_FALSE(last_error_.empty());
  const std::string id = Register();
  ASSERT_EQ(id, key_.node_id()) << last_error_;
  const v1::Node n = Listed(id);
  EXPECT_EQ(n.state(), "offline");  // registered, never connected
  EXPECT_EQ(n.provider(), store::kOperatorAccount);
  EXPECT_EQ(table_->ProviderOf(id), store::kOperatorAccount);
  EXPECT_FALSE(table_->PublicKeyOf(id).empty());
}

TEST_F(NodeTableTest, AnAgentNewerThanItsCoordinatorIsRefusedWithWhatToUpgrade) {
  const Version mine = BuildVersionParts();
  const std::string newer =
      "idlegrid-agent/" + std::to_string(mine.major) + "." + std::to_string(mine.minor + 1) + ".0";
  EXPECT_EQ(Register(kSecret, newer), "");
  EXPECT_NE(last_error_.find("FailedPrecondition"), std::string::npos) << last_error_;
  EXPECT_NE(last_error_.find("upgrade the coordinator first"), std::string::npos) << last_error_;
  EXPECT_EQ(Register(kSecret, ""), "") << "an agent that states no version";
  auto listed = table_->List();
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->nodes_size(), 0) << "a refused agent is not enrolled";
  EXPECT_EQ(Register(), key_.node_id()) << "the same agent at this version joins: " << last_error_;
}

TEST_F(NodeTableTest, ASilentNodeIsSuspectThenOfflineAndOnlyThenDropped) {
  const std::string id = Register();
  ASSERT_FALSE(id.empty()) << last_error_;
  auto session = table_->OpenSession(id, v1::NodeInfo(), "test");
  ASSERT_TRUE(table_->Heartbeat(id, v1::HeartbeatRequest()).ok());
  EXPECT_EQ(Listed(id).state(), "online");

  PassSeconds(16);  // past interval x margin (15 s): suspect, no new work
  EXPECT_EQ(Listed(id).state(), "suspect");
  auto views = table_->Views({}).views;
  ASSERT_EQ(views.size(), 1u);
  EXPECT_FALSE(views[0].online);
  EXPECT_TRUE(sessions_.Connected(id));
  EXPECT_TRUE(forgotten_.empty());

  PassSeconds(6);  // one interval later: confirmed offline
  EXPECT_EQ(Listed(id).state(), "offline");
  EXPECT_FALSE(sessions_.Connected(id));
  EXPECT_EQ(forgotten_, std::vector<std::string>{id});
}

TEST_F(NodeTableTest, HeartbeatsKeepANodeOnline) {
  const std::string id = Register();
  ASSERT_FALSE(id.empty()) << last_error_;
  auto session = table_->OpenSession(id, v1::NodeInfo(), "test");
  for (int s = 0; s < 30; s += 5) {
    ASSERT_TRUE(table_->Heartbeat(id, v1::HeartbeatRequest()).ok());
    PassSeconds(5);
  }
  EXPECT_NE(Listed(id).state(), "offline");
  EXPECT_TRUE(sessions_.Connected(id));
  EXPECT_TRUE(forgotten_.empty());
}

TEST_F(NodeTableTest, DrainTakesANodeOutOfWorkAndUndoBringsItBack) {
  const std::string id = Register();
  ASSERT_FALSE(id.empty()) << last_error_;
  auto session = table_->OpenSession(id, v1::NodeInfo(), "test");
  v1::DrainNodeRequest drain;
  drain.set_node_id(id);
  auto drained = table_->Drain(drain);
  ASSERT_TRUE(drained.ok()) << drained.status().ToString();
  EXPECT_FALSE(drained->schedulable());
  EXPECT_EQ(drained->unschedulable_reason(), "draining");
  drain.set_undo(true);
  auto back = table_->Drain(drain);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_NE(back->unschedulable_reason(), "draining");

  drain.set_node_id("no-such-node");
  drain.set_undo(false);
  EXPECT_FALSE(table_->Drain(drain).ok());
}

TEST_F(NodeTableTest, TheSnapshotCarriesTheReadinessReasonAndTheDataPolicy) {
  const std::string id = Register();
  ASSERT_FALSE(id.empty()) << last_error_;
  auto session = table_->OpenSession(id, testing::InfoOf("node-a"), "test");
  bench_error_ = "readiness benchmark unavailable: no benchmark image";
  NodeTable::Snapshot before = table_->Views({});
  ASSERT_EQ(before.views.size(), 1u);
  EXPECT_EQ(before.views[0].unschedulable_reason, bench_error_);  // never measured: the service's reason
  EXPECT_EQ(before.views[0].cpu_total, 4.0);

  const int changes = changes_;
  sched::DataPolicy replacement;
  table_->SetDataPolicy(replacement);
  EXPECT_GT(changes_, changes);  // waiting tasks may fit now
  NodeTable::Snapshot after = table_->Views({});
  EXPECT_NE(after.data, before.data);
  EXPECT_EQ(after.data, table_->DataPolicy());

  // The readiness service's measurement lands in memory and in the store.
  ReadinessBenchmarks::Hooks readiness = table_->ReadinessHooks();
  ASSERT_TRUE(readiness.update_measurement(id, [](v1::Measurement& m, const v1::Advertisement& ad) {
    m.set_passed(true);
    m.set_measured_at_ms(1);
    m.set_agent_version(ad.agent_version());
  }));
  EXPECT_EQ(table_->Views({}).views[0].unschedulable_reason, "");
  auto stored = store_->GetNode(id);
  ASSERT_TRUE(stored.ok() && *stored);
  EXPECT_TRUE((*stored)->measurement.passed());
  EXPECT_FALSE(readiness.update_measurement("no-such-node", [](v1::Measurement&, const v1::Advertisement&) {}));
}

}  // namespace
}  // namespace idlegrid::coordinator
