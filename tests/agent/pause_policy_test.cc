// Owner-first scheduling on the node (agent/pause_policy.h, issue 15): which
// observations pause the node, the hysteresis before it resumes, when the
// work is handed back, and how the owner writes it in policy.yaml.
#include "agent/pause_policy.h"

#include <gtest/gtest.h>

#include <fstream>

#include "agent/local_policy.h"
#include "agent/pause_observe.h"

namespace idlegrid::agent {
namespace {

GpuObservation Gpu(uint32_t index) {
  GpuObservation g;
  g.index = index;
  g.live_known = true;
  g.processes_known = true;
  g.temperature_c = 50;
  g.power_draw_mw = 100'000;
  return g;
}

struct ConditionCase {
  const char* name;
  PausePolicy policy;
  PauseObservation seen;
  const char* cause;   // "" when nothing pauses
  const char* reason;  // checked when not null
};

std::vector<ConditionCase> ConditionCases() {
  std::vector<ConditionCase> cases;
  PausePolicy gpu;
  gpu.owner_gpu_processes = true;
  {
    PauseObservation s;
    s.gpus.push_back(Gpu(0));
    s.gpus[0].foreign_processes.push_back({4242, "steam"});
    cases.push_back({"a foreign GPU process pauses", gpu, s, "owner-gpu", "process steam (pid 4242) uses GPU 0"});
  }
  {
    PauseObservation s;
    s.gpus.push_back(Gpu(0));
    cases.push_back({"a GPU without foreign processes does not", gpu, s, "", nullptr});
  }
  {
    PauseObservation s;
    s.gpus.push_back(Gpu(1));
    s.gpus[0].processes_known = false;
    s.gpus[0].foreign_processes.push_back({1, "x"});
    cases.push_back({"unknown processes never pause", gpu, s, "", nullptr});
  }
  {
    PauseObservation s;
    s.gpus.push_back(Gpu(0));
    s.gpus[0].foreign_processes.push_back({4242, "steam"});
    cases.push_back({"the setting off: GPU processes do not pause", PausePolicy{}, s, "", nullptr});
  }
  PausePolicy busy;
  busy.owner_gpu_utilization_above = 50;
  {
    PauseObservation s;
    s.gpus.push_back(Gpu(0));
    s.gpus[0].utilization_pct = 80;
    cases.push_back(
        {"utilisation above the threshold pauses", busy, s, "owner-gpu", "GPU 0 80% busy, utilizationAbove 50"});
    s.gpus[0].held_by_agent = true;
    cases.push_back({"a job's own device's utilisation does not", busy, s, "", nullptr});
    s.gpus[0].held_by_agent = false;
    s.gpus[0].utilization_pct = 50;
    cases.push_back({"at the threshold does not", busy, s, "", nullptr});
  }
  PausePolicy hot;
  hot.max_gpu_temp_c = 85;
  hot.max_gpu_power_w = 300;
  hot.owner_gpu_processes = true;
  {
    PauseObservation s;
    s.gpus.push_back(Gpu(0));
    s.gpus[0].temperature_c = 91;
    s.gpus[0].throttle_reasons = 0x20 | 0x40;
    s.gpus[0].foreign_processes.push_back({4242, "steam"});
    cases.push_back({"too hot comes first, with its throttle reasons", hot, s, "thermal",
                     "GPU 0 at 91 C, maxGpuTemp 85; throttled: sw-thermal, hw-thermal"});
    s.gpus[0].temperature_c = 85;
    s.gpus[0].foreign_processes.clear();
    cases.push_back({"at the limit is not too hot", hot, s, "", nullptr});
    s.gpus[0].power_draw_mw = 350'000;
    s.gpus[0].throttle_reasons = 0x4;
    cases.push_back(
        {"too much power", hot, s, "power", "GPU 0 draws 350 W, maxGpuPower 300 W; throttled: sw-power-cap"});
  }
  PausePolicy games;
  games.processes = {"steam"};
  {
    PauseObservation s;
    s.named_processes.push_back({77, "steam"});
    cases.push_back({"a named program", games, s, "owner-process", "process steam (pid 77) is running"});
  }
  PausePolicy user;
  user.user_active = true;
  user.on_battery = true;
  {
    PauseObservation s;
    s.user_idle = false;
    cases.push_back({"the owner at the keyboard", user, s, "user-active", nullptr});
    s.user_idle = std::nullopt;
    cases.push_back({"logind unknown never pauses", user, s, "", nullptr});
    s.user_idle = true;
    s.on_battery = true;
    cases.push_back({"on battery", user, s, "battery", nullptr});
  }
  PausePolicy hours;
  hours.hours = {*ParseHoursWindow("22:00-07:00")};
  {
    PauseObservation s;
    s.minute_of_day = 23 * 60;
    cases.push_back({"inside a window across midnight", hours, s, "hours", "owner's hours 22:00-07:00"});
    s.minute_of_day = 6 * 60 + 59;
    cases.push_back({"its last minute", hours, s, "hours", nullptr});
    s.minute_of_day = 7 * 60;
    cases.push_back({"its end is outside", hours, s, "", nullptr});
    s.minute_of_day = -1;
    cases.push_back({"the time unknown", hours, s, "", nullptr});
  }
  return cases;
}

TEST(PauseConditionTest, Table) {
  for (const auto& c : ConditionCases()) {
    SCOPED_TRACE(c.name);
    auto found = FindPauseCondition(c.policy, c.seen);
    if (std::string(c.cause).empty()) {
      EXPECT_FALSE(found.has_value()) << found->reason;
      continue;
    }
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->cause, c.cause);
    if (c.reason != nullptr) {
      EXPECT_EQ(found->reason, c.reason);
    }
  }
}

PauseCondition Game() { return {"owner-gpu", "process steam (pid 4242) uses GPU 0", 0}; }

TEST(DecidePauseTest, FreezesAtOnceAndResumesOnlyAfterTheConditionStayedClear) {
  PausePolicy p;
  p.resume_after_ms = 1000;
  p.hand_back_after_ms = 60'000;
  PauseDecision d = DecidePause(p, {}, Game(), 10'000);
  EXPECT_TRUE(d.freeze);
  EXPECT_TRUE(d.next.paused);
  EXPECT_EQ(d.next.since_ms, 10'000);
  EXPECT_EQ(d.next.pauses, 1u);
  // Still there: nothing new.
  d = DecidePause(p, d.next, Game(), 10'500);
  EXPECT_FALSE(d.freeze);
  EXPECT_TRUE(d.next.paused);
  // Clear, but not long enough: still paused.
  d = DecidePause(p, d.next, std::nullopt, 11'000);
  EXPECT_TRUE(d.next.paused);
  EXPECT_FALSE(d.thaw);
  // Back before resumeAfter: the clear period starts over.
  d = DecidePause(p, d.next, Game(), 11'500);
  d = DecidePause(p, d.next, std::nullopt, 12'000);
  d = DecidePause(p, d.next, std::nullopt, 12'900);
  EXPECT_TRUE(d.next.paused) << "only 900 ms clear";
  d = DecidePause(p, d.next, std::nullopt, 13'000);
  EXPECT_TRUE(d.thaw);
  EXPECT_FALSE(d.next.paused);
  EXPECT_EQ(d.next.paused_ms_total, 3000);
  EXPECT_EQ(d.next.pauses, 1u);
  EXPECT_FALSE(d.hand_back);
}

TEST(DecidePauseTest, HandsBackOncePerPauseAfterTheGracePeriod) {
  PausePolicy p;
  p.resume_after_ms = 0;
  p.hand_back_after_ms = 5000;
  PauseDecision d = DecidePause(p, {}, Game(), 0);
  EXPECT_FALSE(d.hand_back);
  d = DecidePause(p, d.next, Game(), 4999);
  EXPECT_FALSE(d.hand_back);
  d = DecidePause(p, d.next, Game(), 5000);
  EXPECT_TRUE(d.hand_back);
  d = DecidePause(p, d.next, Game(), 9000);
  EXPECT_FALSE(d.hand_back) << "once per pause";
  d = DecidePause(p, d.next, std::nullopt, 9500);
  EXPECT_TRUE(d.thaw);
  d = DecidePause(p, d.next, Game(), 20'000);
  EXPECT_TRUE(d.freeze);
  EXPECT_EQ(d.next.pauses, 2u);
  EXPECT_FALSE(d.hand_back) << "a new pause has its own grace period";
}

TEST(DecidePauseTest, ActionHandBackHandsBackAtOnce) {
  PausePolicy p;
  p.action = PauseAction::kHandBack;
  PauseDecision d = DecidePause(p, {}, Game(), 100);
  EXPECT_TRUE(d.freeze);
  EXPECT_TRUE(d.hand_back);
}

TEST(PauseHoursTest, WindowsParseAndRefuseNonsense) {
  auto w = ParseHoursWindow("09:30-17:00");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->start_minute, 9 * 60 + 30);
  EXPECT_EQ(w->end_minute, 17 * 60);
  EXPECT_TRUE(ParseHoursWindow("18:00-24:00").ok());
  EXPECT_FALSE(ParseHoursWindow("25:00-07:00").ok());
  EXPECT_FALSE(ParseHoursWindow("10:00-10:00").ok());
  EXPECT_FALSE(ParseHoursWindow("10:00").ok());
  EXPECT_FALSE(ParseHoursWindow("10:00-11:00x").ok());
}

TEST(PausePolicyParseTest, TheOwnersFileSaysAllOfIt) {
  auto parsed = ParseOwnerPolicy(
      "pauseWhen:\n"
      "  ownerGpu: {processes: true, utilizationAbove: 40}\n"
      "  processes: [steam, Game.exe]\n"
      "  userActive: true\n"
      "  onBattery: true\n"
      "  hours: [\"22:00-07:00\"]\n"
      "  resumeAfter: 2m\n"
      "  action: freeze\n"
      "  handBackAfter: 15m\n"
      "maxGpuTemp: 85\n"
      "maxGpuPower: 320\n",
      "policy.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const PausePolicy& p = parsed->pause;
  EXPECT_TRUE(p.owner_gpu_processes);
  EXPECT_EQ(p.owner_gpu_utilization_above, 40);
  EXPECT_EQ(p.processes, (std::vector<std::string>{"steam", "Game.exe"}));
  EXPECT_TRUE(p.user_active);
  EXPECT_TRUE(p.on_battery);
  ASSERT_EQ(p.hours.size(), 1u);
  EXPECT_EQ(p.resume_after_ms, 120'000);
  EXPECT_EQ(p.action, PauseAction::kFreeze);
  EXPECT_EQ(p.hand_back_after_ms, 900'000);
  EXPECT_EQ(p.max_gpu_temp_c, 85u);
  EXPECT_EQ(p.max_gpu_power_w, 320u);
  EXPECT_TRUE(p.Enabled());
  EXPECT_FALSE(DefaultOwnerPolicy().pause.Enabled());

  auto short_form = ParseOwnerPolicy("pauseWhen: {ownerGpu: true, action: handBack}\n", "p.yaml");
  ASSERT_TRUE(short_form.ok()) << short_form.status().message();
  EXPECT_TRUE(short_form->pause.owner_gpu_processes);
  EXPECT_EQ(short_form->pause.action, PauseAction::kHandBack);
}

TEST(PausePolicyParseTest, MistakesNameTheirPlace) {
  struct Bad {
    const char* yaml;
    const char* message;
  } cases[] = {
      {"pauseWhen:\n  ownerGpus: true\n", "p.yaml:2:3: pauseWhen: unknown setting \"ownerGpus\""},
      {"pauseWhen:\n  hours: [\"25:00-01:00\"]\n", "p.yaml:2:11: pauseWhen.hours: \"25:00-01:00\": hours are"},
      {"pauseWhen:\n  action: sleep\n", "p.yaml:2:11: pauseWhen.action: expected freeze or handBack"},
      {"pauseWhen:\n  resumeAfter: soon\n", "p.yaml:2:16: pauseWhen.resumeAfter:"},
      {"pauseWhen:\n  processes: [/usr/bin/steam]\n", "p.yaml:2:15: pauseWhen.processes: a program name"},
      {"maxGpuTemp: hot\n", "p.yaml:1:13: maxGpuTemp: expected a whole number from 1 to 150"},
      {"maxGpuPower: 0\n", "p.yaml:1:14: maxGpuPower: expected a whole number from 1 to 5000"},
      {"pauseWhen:\n  ownerGpu: {utilizationAbove: 100}\n", "p.yaml:2:32: pauseWhen.ownerGpu.utilizationAbove"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.yaml);
    auto parsed = ParseOwnerPolicy(c.yaml, "p.yaml");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().message().rfind(c.message, 0), 0u) << parsed.status().message();
  }
}

TEST(PauseObserveTest, IdleHintAndNamedProcesses) {
  EXPECT_EQ(ParseIdleHint("yes\n"), std::optional<bool>(true));
  EXPECT_EQ(ParseIdleHint("no\n"), std::optional<bool>(false));
  EXPECT_EQ(ParseIdleHint("Failed to get user: No such user"), std::nullopt);
  // This test program itself is a running process with a name.
  std::ifstream comm("/proc/self/comm");
  std::string self;
  std::getline(comm, self);
  ASSERT_FALSE(self.empty());
  auto found = FindNamedProcesses({"no-such-program-here", self});
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found[0].name, self);
  EXPECT_TRUE(FindNamedProcesses({"no-such-program-here"}).empty());
}

TEST(ThrottleReasonsTest, InWords) {
  EXPECT_EQ(DescribeThrottleReasons(0), "none");
  EXPECT_EQ(DescribeThrottleReasons(0x4 | 0x40), "sw-power-cap, hw-thermal");
  EXPECT_EQ(DescribeThrottleReasons(0x1000 | 0x1), "gpu-idle, 0x1000");
}

}  // namespace
}  // namespace idlegrid::agent
