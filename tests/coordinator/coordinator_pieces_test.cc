// The coordinator's small thread-safe pieces on their own: sessions,
// the running-attempt index, the event counters.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "coordinator/agent_session.h"
#include "coordinator/agent_tokens.h"
#include "coordinator/event_counters.h"
#include "coordinator/running_index.h"

namespace idlegrid::coordinator {
namespace {

v1::Command Cancel(const std::string& attempt) {
  v1::Command c;
  c.mutable_cancel()->set_attempt_id(attempt);
  return c;
}

TEST(AgentSessionsTest, PushReachesOnlyTheCurrentSession) {
  AgentSessions sessions;
  EXPECT_FALSE(sessions.Connected("n1"));
  EXPECT_FALSE(sessions.Push("n1", Cancel("a0"))) << "no session: nothing queued";
  auto first = sessions.Open("n1");
  EXPECT_TRUE(sessions.Connected("n1"));
  ASSERT_TRUE(sessions.Push("n1", Cancel("a1")));
  auto got = first->Next(0);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->cancel().attempt_id(), "a1");
  EXPECT_FALSE(first->Next(0).has_value());

  auto second = sessions.Open("n1");  // a reconnect
  EXPECT_TRUE(first->closed()) << "the replaced stream is closed";
  ASSERT_TRUE(sessions.Push("n1", Cancel("a2")));
  EXPECT_FALSE(first->Next(0).has_value());
  got = second->Next(0);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->cancel().attempt_id(), "a2");

  // The old stream ending late does not disconnect the new one.
  EXPECT_FALSE(sessions.Close("n1", first));
  EXPECT_TRUE(sessions.Connected("n1"));
  EXPECT_TRUE(sessions.Close("n1", second));
  EXPECT_FALSE(sessions.Connected("n1"));
  EXPECT_TRUE(second->closed());
}

TEST(AgentSessionsTest, DropAndCloseAllCloseTheStreams) {
  AgentSessions sessions;
  auto a = sessions.Open("a");
  auto b = sessions.Open("b");
  sessions.Drop("a");
  EXPECT_TRUE(a->closed());
  EXPECT_FALSE(sessions.Connected("a"));
  EXPECT_FALSE(b->closed());
  sessions.CloseAll();
  EXPECT_TRUE(b->closed());
}

TEST(AgentSessionTest, NextWakesOnPushFromAnotherThread) {
  AgentSession session;
  std::thread pusher([&] { session.Push(Cancel("late")); });
  // Generous: the push wakes it long before; a missed wake-up fails instead of hanging.
  auto got = session.Next(10'000);
  pusher.join();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->cancel().attempt_id(), "late");
}

TEST(AgentSessionTest, CloseWakesNextAndDropsLaterPushes) {
  AgentSession session;
  std::thread closer([&] { session.Close(); });
  EXPECT_FALSE(session.Next(10'000).has_value());
  closer.join();
  session.Push(Cancel("after"));
  EXPECT_FALSE(session.Next(0).has_value());
}

TEST(AgentTokenCacheTest, ReRegistrationForgetsOnlyThatNodesTokens) {
  AgentTokenCache tokens;
  EXPECT_FALSE(tokens.NodeOf("h1").has_value());
  tokens.Remember("h1", "n1");
  tokens.Remember("h2", "n1");
  tokens.Remember("h3", "n2");
  EXPECT_EQ(tokens.NodeOf("h1"), "n1");
  tokens.ForgetNode("n1");
  EXPECT_FALSE(tokens.NodeOf("h1").has_value());
  EXPECT_FALSE(tokens.NodeOf("h2").has_value());
  EXPECT_EQ(tokens.NodeOf("h3"), "n2");
}

store::ActiveAttempt Active(const std::string& id, const std::string& node, v1::TaskState state) {
  store::ActiveAttempt a;
  a.attempt_id = id;
  a.node_id = node;
  a.state = state;
  return a;
}

TEST(RunningIndexTest, BuildSeparatesRunningFromAssigned) {
  RunningIndex index = RunningIndexCache::Build(
      {Active("a1", "n1", v1::RUNNING), Active("a2", "n1", v1::ASSIGNED), Active("a3", "n2", v1::ASSIGNED)});
  ASSERT_EQ(index.size(), 2u);
  EXPECT_EQ(index["n1"].running, std::vector<std::string>{"a1"});
  EXPECT_EQ(index["n1"].active, (std::vector<std::string>{"a1", "a2"}));
  EXPECT_TRUE(index["n2"].running.empty());
  EXPECT_EQ(index["n2"].active, std::vector<std::string>{"a3"});
}

TEST(EventCountersTest, CountsEndedAttemptsByReason) {
  EventCounters counters;
  jobs::AttemptOutcome succeeded{};
  succeeded.attempt_state = v1::SUCCEEDED;
  jobs::AttemptOutcome lost{};
  lost.attempt_state = v1::FAILED;
  lost.reason = v1::NODE_LOST;
  jobs::AttemptOutcome duplicate = lost;
  duplicate.changed = false;
  jobs::AttemptOutcome started{};
  started.attempt_state = v1::RUNNING;
  for (const auto* o : {&succeeded, &lost, &lost, &duplicate, &started}) counters.CountOutcome(*o);
  counters.HeartbeatReceived();
  counters.HeartbeatReceived();
  counters.NodeSuspected();
  counters.NodeLost();
  EventCounters::Snapshot s = counters.Read();
  EXPECT_EQ(s.attempts_succeeded, 1u);
  EXPECT_EQ(s.attempt_failures[v1::NODE_LOST], 2u);
  EXPECT_EQ(s.attempt_failures.size(), 1u);
  EXPECT_EQ(s.heartbeats_received, 2u);
  EXPECT_EQ(s.nodes_suspected, 1u);
  EXPECT_EQ(s.nodes_lost, 1u);
}

}  // namespace
}  // namespace idlegrid::coordinator
