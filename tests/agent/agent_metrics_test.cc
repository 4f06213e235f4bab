// An agent's own metrics (agent/agent_metrics.h): what it counts, its
// Prometheus text, and that it serves them on loopback only.
#include "agent/agent_metrics.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include "common/version.h"

namespace idlegrid::agent {
namespace {

TEST(AgentMetricsTest, CountsReportsAndHeartbeatsAndReadsGaugesAtRender) {
  AgentMetrics m;
  m.CountReport("started");
  m.CountReport("exited");
  m.CountReport("exited");
  m.CountHeartbeat(true);
  m.CountHeartbeat(false);
  m.CountHeartbeat(true);
  m.SetConnected(true);
  const std::string text = m.Render({3, true, false});
  for (const std::string& line :
       {std::string("idlegrid_agent_build_info{version=\"") + BuildVersion() + "\"} 1",
        std::string("idlegrid_agent_running_attempts 3"), std::string("idlegrid_agent_paused 1"),
        std::string("idlegrid_agent_draining 0"), std::string("idlegrid_agent_connected 1"),
        std::string("idlegrid_agent_reports_total{event=\"exited\"} 2"),
        std::string("idlegrid_agent_reports_total{event=\"started\"} 1"),
        std::string("idlegrid_agent_heartbeats_total{result=\"delivered\"} 2"),
        std::string("idlegrid_agent_heartbeats_total{result=\"failed\"} 1"),
        std::string("# TYPE idlegrid_agent_reports_total counter")}) {
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << line << "\n" << text;
  }
  EXPECT_EQ(text.find("# idlegrid: left out"), std::string::npos) << text;
}

TEST(AgentMetricsTest, OnlyLoopbackAddressesMayBeServed) {
  for (const char* ok : {"127.0.0.1:9464", "[::1]:0", "localhost:9464"}) {
    EXPECT_TRUE(CheckLoopbackListen(ok).ok()) << ok;
  }
  for (const char* bad : {"0.0.0.0:9464", "192.168.1.5:9464", ":9464", "127.0.0.1", "127.0.0.1:http", "[::]:9464"}) {
    Status st = CheckLoopbackListen(bad);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << bad;
  }
}

TEST(AgentMetricsTest, TheServerAnswersScrapesWithTheCurrentText) {
  MetricsServer server;
  int scrapes = 0;
  auto port = server.Start("127.0.0.1:0", [&] { return "idlegrid_agent_paused " + std::to_string(++scrapes) + "\n"; });
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  ASSERT_GT(*port, 0);
  httplib::Client client("127.0.0.1", *port);
  auto first = client.Get("/metrics");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(first->body, "idlegrid_agent_paused 1\n");
  auto second = client.Get("/metrics");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->body, "idlegrid_agent_paused 2\n") << "rendered at each scrape";
  EXPECT_EQ(client.Get("/other")->status, 404);
  server.Stop();
  EXPECT_FALSE(server.Start("0.0.0.0:0", [] { return std::string(); }).ok());
}

}  // namespace
}  // namespace idlegrid::agent
