// `agent join` decided on plain values (agent/join_plan.h): URLs, XDG paths,
// the config file round trip, the unit text and the host checks.
#include "agent/join_plan.h"

#include <gtest/gtest.h>

namespace idlegrid::agent {
namespace {

TEST(CoordinatorAddressFromUrl, AcceptsTheFormsProvidersPaste) {
  struct Case {
    const char* url;
    const char* address;
  } cases[] = {
      {"https://grid.example.org:7443", "grid.example.org:7443"},
      {"https://grid.example.org:9000/", "grid.example.org:9000"},
      {"grpcs://10.0.0.5:7443", "10.0.0.5:7443"},
      {"grid.example.org", "grid.example.org:7443"},
      {"127.0.0.1:40123", "127.0.0.1:40123"},
      {"https://[::1]:7443", "[::1]:7443"},
      {"https://[fd00::1]", "[fd00::1]:7443"},
  };
  for (const Case& c : cases) {
    auto got = CoordinatorAddressFromUrl(c.url);
    ASSERT_TRUE(got.ok()) << c.url << ": " << got.status().message();
    EXPECT_EQ(*got, c.address) << c.url;
  }
}

TEST(CoordinatorAddressFromUrl, RefusesWhatIsNotAGrpcTlsAddress) {
  for (const char* url : {"http://grid:7443", "https://grid:7443/api", "https://", "https://:7443", "https://grid:port",
                          "https://[::1", "https://[::1]x"}) {
    auto got = CoordinatorAddressFromUrl(url);
    EXPECT_EQ(got.status().code(), Code::kInvalidArgument) << url;
  }
}

TEST(AgentPathsFromEnv, FollowsXdgWithHomeDefaults) {
  auto p = AgentPathsFromEnv({{"HOME", "/home/ann"}});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->config_file, "/home/ann/.config/idlegrid/agent.yaml");
  EXPECT_EQ(p->client_config_file, "/home/ann/.config/idlegrid/config.yaml");
  EXPECT_EQ(p->data_dir, "/home/ann/.local/share/idlegrid/agent");
  EXPECT_EQ(p->unit_file, "/home/ann/.config/systemd/user/idlegrid-agent.service");

  p = AgentPathsFromEnv({{"HOME", "/home/ann"}, {"XDG_CONFIG_HOME", "/cfg"}, {"XDG_DATA_HOME", "relative/ignored"}});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->config_file, "/cfg/idlegrid/agent.yaml");
  EXPECT_EQ(p->unit_file, "/cfg/systemd/user/idlegrid-agent.service");
  EXPECT_EQ(p->data_dir, "/home/ann/.local/share/idlegrid/agent") << "a relative XDG value is ignored";

  EXPECT_EQ(AgentPathsFromEnv({}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(AgentPathsFromEnv({{"HOME", "rel"}}).status().code(), Code::kInvalidArgument);
}

TEST(AgentConfigFile, RoundTripsWhatJoinWrites) {
  AgentConfig written;
  written.coordinator = "grid.example.org:7443";
  written.data_dir = "/home/ann/.local/share/idlegrid/agent";
  written.name = "ann's rig: #1";
  written.cpus = 6;
  written.memory_bytes = 8192ull << 20;
  written.region = "eu-west";
  written.driver = "podman";
  written.untrusted_runtime = "runc";
  written.policy_file = "/home/ann/policy.yaml";
  AgentConfig read;
  ASSERT_TRUE(ApplyAgentConfig(RenderAgentConfig(written), {}, &read).ok()) << RenderAgentConfig(written);
  EXPECT_EQ(read.coordinator, written.coordinator);
  EXPECT_EQ(read.data_dir, written.data_dir);
  EXPECT_EQ(read.name, written.name);
  EXPECT_EQ(read.cpus, 6);
  EXPECT_EQ(read.memory_bytes, written.memory_bytes);
  EXPECT_EQ(read.region, "eu-west");
  EXPECT_EQ(read.driver, "podman");
  EXPECT_EQ(read.untrusted_runtime, "runc");
  EXPECT_EQ(read.policy_file, "/home/ann/policy.yaml");
  EXPECT_TRUE(read.join_token.empty()) << "no secret in the config file";
}

TEST(AgentConfigFile, FlagsOnTheCommandLineWin) {
  AgentConfig c;
  c.name = "from-flag";
  ASSERT_TRUE(ApplyAgentConfig("name: from-file\nregion: eu\ndata_dir: /d\n", {"name", "data-dir"}, &c).ok());
  EXPECT_EQ(c.name, "from-flag");
  EXPECT_EQ(c.region, "eu");
  EXPECT_EQ(c.data_dir, AgentConfig{}.data_dir) << "data_dir's flag was given (as --data-dir)";
}

TEST(AgentConfigFile, RefusesTyposAndWrongTypes) {
  AgentConfig c;
  EXPECT_EQ(ApplyAgentConfig("coordinatr: x:1\n", {}, &c).code(), Code::kInvalidArgument);
  EXPECT_EQ(ApplyAgentConfig("cpus: many\n", {}, &c).code(), Code::kInvalidArgument);
  EXPECT_EQ(ApplyAgentConfig("driver: docker\n", {}, &c).code(), Code::kInvalidArgument);
  EXPECT_EQ(ApplyAgentConfig("- a list\n", {}, &c).code(), Code::kInvalidArgument);
  EXPECT_EQ(ApplyAgentConfig("a: [\n", {}, &c).code(), Code::kInvalidArgument);
  EXPECT_TRUE(ApplyAgentConfig("", {}, &c).ok());
}

TEST(RenderUserUnit, RunsTheAgentWithItsConfigAndLetsItDrain) {
  std::string unit = RenderUserUnit("/usr/bin/idlegrid", "/home/ann/.config/idlegrid/agent.yaml", 30);
  EXPECT_NE(unit.find("ExecStart=/usr/bin/idlegrid agent --config /home/ann/.config/idlegrid/agent.yaml "
                      "--shutdown-grace 30\n"),
            std::string::npos)
      << unit;
  EXPECT_NE(unit.find("KillMode=mixed\n"), std::string::npos);
  EXPECT_NE(unit.find("TimeoutStopSec=60\n"), std::string::npos) << "longer than the grace";
  EXPECT_NE(unit.find("WantedBy=default.target\n"), std::string::npos);
}

TEST(RenderUserUnit, EscapesPathsForSystemdButKeepsTheHomeSpecifier) {
  std::string unit = RenderUserUnit("/opt/my tools/idlegrid", "/home/a%b/$x.yaml", 5);
  EXPECT_NE(unit.find("ExecStart=\"/opt/my tools/idlegrid\" agent --config /home/a%%b/$$x.yaml"), std::string::npos)
      << unit;
  unit = RenderUserUnit("/usr/bin/idlegrid", "%h/.config/idlegrid/agent.yaml", 5);
  EXPECT_NE(unit.find("--config %h/.config/idlegrid/agent.yaml "), std::string::npos) << unit;
}

TEST(SubordinateRanges, ReadsTheUsersLinesByNameOrUid) {
  const std::string text = "ann:100000:65536\nbob:165536:65536\n1001:300000:1000\nann:bad:1\nann:500000:10\n";
  auto ranges = SubordinateRanges(text, "ann", 1001);
  ASSERT_EQ(ranges.size(), 3u);
  EXPECT_EQ(ranges[0].start, 100000u);
  EXPECT_EQ(ranges[1].start, 300000u);
  EXPECT_EQ(ranges[2].count, 10u);
  EXPECT_EQ(FreeSubordinateStart(text), 500010u);
  EXPECT_EQ(FreeSubordinateStart(""), 100000u);
}

HostFacts GoodHost() {
  HostFacts f;
  f.user = "ann";
  f.uid = 1001;
  f.subuid_text = "ann:100000:65536\n";
  f.subgid_text = "ann:100000:65536\n";
  f.has_podman = true;
  f.has_newuidmap = true;
  f.runtimes = {"runc", "runsc"};
  f.enforcement.set_cgroup_version("v2");
  f.enforcement.set_memory("cgroup");
  f.enforcement.set_pids("cgroup");
  f.enforcement.set_cpu("cgroup");
  return f;
}

TEST(CheckHost, AWellSetUpHostHasNothingToFix) { EXPECT_TRUE(CheckHost(GoodHost()).empty()); }

TEST(CheckHost, MissingSubordinateIdsBlockWithAUsermodThatFits) {
  HostFacts f = GoodHost();
  f.subuid_text = "bob:100000:65536\n";
  f.subgid_text = "ann:100000:1000\n";
  auto findings = CheckHost(f);
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_TRUE(findings[0].blocking);
  EXPECT_EQ(findings[0].fix, "sudo usermod --add-subuids 165536-231071 ann && podman system migrate");
  EXPECT_NE(findings[1].what.find("gives ann 1000 subordinate ids"), std::string::npos) << findings[1].what;
  EXPECT_EQ(findings[1].fix, "sudo usermod --add-subgids 101000-166535 ann && podman system migrate");
}

TEST(CheckHost, EachMissingPieceNamesItsPackage) {
  HostFacts f = GoodHost();
  f.has_podman = false;
  f.has_newuidmap = false;
  f.runtimes = {};
  auto findings = CheckHost(f);
  std::vector<std::string> fixes;
  for (const auto& x : findings) fixes.push_back(x.fix);
  EXPECT_EQ(fixes, (std::vector<std::string>{"sudo apt-get install podman", "sudo apt-get install uidmap",
                                             "sudo apt-get install runc", "sudo apt-get install runsc"}));
  EXPECT_TRUE(findings[2].blocking);
  EXPECT_FALSE(findings[3].blocking) << "without gVisor the node still runs runc jobs";
}

TEST(CheckHost, LimitsTheHostCannotEnforceAreNotesWithTheDelegationFix) {
  HostFacts f = GoodHost();
  f.enforcement.set_memory("rlimit");
  f.enforcement.set_cpu("");
  f.enforcement.set_runsc_unavailable("no memory cgroup");
  auto findings = CheckHost(f);
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_FALSE(findings[0].blocking);
  EXPECT_NE(findings[0].what.find("memory, cpu are not delegated"), std::string::npos) << findings[0].what;
  EXPECT_NE(findings[0].fix.find("Delegate=cpu cpuset io memory pids"), std::string::npos);
  EXPECT_NE(findings[1].what.find("gVisor cannot run jobs here: no memory cgroup"), std::string::npos);

  f = GoodHost();
  f.enforcement.set_cgroup_version("hybrid");
  f.enforcement.set_runsc_unavailable("no memory cgroup");
  findings = CheckHost(f);
  ASSERT_EQ(findings.size(), 2u);
  for (const Finding& x : findings) {
    EXPECT_NE(x.fix.find("systemd.unified_cgroup_hierarchy=1"), std::string::npos) << "delegation needs v2 first";
  }
}

TEST(CheckHost, PodmanThatFailsBlocksWithItsOwnError) {
  HostFacts f = GoodHost();
  f.podman_works = false;
  f.podman_error = "cannot set up namespace using newuidmap";
  auto findings = CheckHost(f);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_TRUE(findings[0].blocking);
  EXPECT_NE(findings[0].what.find("cannot set up namespace"), std::string::npos);
}

}  // namespace
}  // namespace idlegrid::agent
