// The owner keeps their GPU (issue 27): ownerGpu ignores display servers,
// a GPU job with a checkpoint directory is handed back at once, the owner's
// `agent pause` file and its expiry, lendGpus and per-GPU pauses as
// GpuDevice.owner_hold in the advertisement.
#include <gtest/gtest.h>

#include "agent/advertiser.h"
#include "agent/local_policy.h"
#include "agent/owner_command.h"
#include "agent/pause_policy.h"

namespace idlegrid::agent {
namespace {

GpuObservation GpuWith(std::vector<GpuObservation::Process> procs) {
  GpuObservation g;
  g.index = 0;
  g.live_known = true;
  g.processes_known = true;
  g.foreign_processes = std::move(procs);
  return g;
}

TEST(OwnerGpuIgnoreTest, DisplayServersDoNotPauseAGameDoes) {
  PausePolicy p;
  p.owner_gpu_processes = true;
  PauseObservation desktop;
  desktop.gpus.push_back(GpuWith({{100, "Xorg"}, {101, "gnome-shell"}, {102, "Xwayland"}, {103, "kwin_wayland"}}));
  EXPECT_FALSE(FindPauseCondition(p, desktop).has_value()) << "a desktop alone is not the owner gaming";

  PauseObservation game = desktop;
  game.gpus[0].foreign_processes.push_back({4242, "steam"});
  auto c = FindPauseCondition(p, game);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->cause, "owner-gpu");
  EXPECT_EQ(c->reason, "process steam (pid 4242) uses GPU 0") << "the game named, not the display server listed first";
}

TEST(OwnerGpuIgnoreTest, TheOwnerExtendsTheListInPolicyYaml) {
  auto parsed =
      ParseOwnerPolicy("pauseWhen:\n  ownerGpu: {processes: true, ignoreProcesses: [my-wm, obs]}\n", "p.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  PauseObservation seen;
  seen.gpus.push_back(GpuWith({{1, "Xorg"}, {2, "my-wm"}, {3, "obs"}}));
  EXPECT_FALSE(FindPauseCondition(parsed->pause, seen).has_value());
  seen.gpus[0].foreign_processes.push_back({4, "blender"});
  EXPECT_TRUE(FindPauseCondition(parsed->pause, seen).has_value());

  auto bad = ParseOwnerPolicy("pauseWhen:\n  ownerGpu: {ignoreProcesses: [/usr/bin/Xorg]}\n", "p.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("p.yaml:2:32: pauseWhen.ownerGpu.ignoreProcesses: a program name"),
            std::string::npos)
      << bad.status().message();
}

TEST(GpuJobPauseActionTest, AGpuJobWithACheckpointIsHandedBackAtOnceByDefault) {
  PausePolicy p;  // action freeze, gpuJobs handBack
  EXPECT_EQ(ActionForAttempt(p, /*holds_gpu=*/true, /*has_checkpoint=*/true), PauseAction::kHandBack);
  EXPECT_EQ(ActionForAttempt(p, true, false), PauseAction::kFreeze) << "nothing to resume from: frozen";
  EXPECT_EQ(ActionForAttempt(p, false, true), PauseAction::kFreeze) << "a CPU job holds no VRAM";
  EXPECT_EQ(ActionForAttempt(p, false, false), PauseAction::kFreeze);

  auto frozen = ParseOwnerPolicy("pauseWhen:\n  gpuJobs: freeze\n", "p.yaml");
  ASSERT_TRUE(frozen.ok()) << frozen.status().message();
  EXPECT_EQ(ActionForAttempt(frozen->pause, true, true), PauseAction::kFreeze) << "the owner's choice";
  auto all = ParseOwnerPolicy("pauseWhen:\n  action: handBack\n  gpuJobs: freeze\n", "p.yaml");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(ActionForAttempt(all->pause, false, false), PauseAction::kHandBack);

  auto bad = ParseOwnerPolicy("pauseWhen:\n  gpuJobs: later\n", "p.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("p.yaml:2:12: pauseWhen.gpuJobs: expected handBack", 0), 0u)
      << bad.status().message();
}

TEST(OwnerCommandTest, ACommandedPauseEndsWhenResumedWithoutResumeAfter) {
  PausePolicy p;
  p.resume_after_ms = 30'000;
  const PauseCondition cmd{kOwnerCommandCause, "the owner ran idlegrid agent pause", 0};
  PauseDecision d = DecidePause(p, {}, cmd, 1000);
  ASSERT_TRUE(d.next.paused);
  d = DecidePause(p, d.next, std::nullopt, 1200);
  EXPECT_FALSE(d.next.paused) << "the owner said resume";
  EXPECT_TRUE(d.thaw);
  EXPECT_EQ(d.next.paused_ms_total, 200);
}

TEST(OwnerCommandTest, TheFileRoundTripsExpiresAndRefusesNonsense) {
  OwnerCommand c;
  c.since_ms = 1000;
  c.until_ms = 7'201'000;
  c.for_text = "2h";
  c.gpus = {"0", "GPU-abc"};
  auto back = ParseOwnerCommand(FormatOwnerCommand(c));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->since_ms, 1000);
  EXPECT_EQ(back->until_ms, 7'201'000);
  EXPECT_EQ(back->for_text, "2h");
  EXPECT_EQ(back->gpus, c.gpus);
  EXPECT_EQ(DescribeOwnerCommand(*back), "the owner ran idlegrid agent pause --gpu 0 --gpu GPU-abc --for 2h");
  EXPECT_FALSE(OwnerCommandExpired(*back, 7'200'999));
  EXPECT_TRUE(OwnerCommandExpired(*back, 7'201'000));
  OwnerCommand forever;
  EXPECT_FALSE(OwnerCommandExpired(forever, INT64_MAX)) << "no --for: until resumed";

  auto bad = ParseOwnerCommand("since_ms 1\nuntil_ms soon\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "line 2: \"soon\" is not a time in ms");
  EXPECT_FALSE(ParseOwnerCommand("pause everything\n").ok());
}

v1::GpuDevice Device(uint32_t index, const std::string& uuid) {
  v1::GpuDevice d;
  d.set_index(index);
  d.set_uuid(uuid);
  d.set_name("NVIDIA GeForce RTX 4090");
  d.set_memory_total_bytes(24ull << 30);
  return d;
}

TEST(GpuOwnerHoldTest, LendOnlySomeGpusAndPauseOneByHand) {
  const auto a = Device(0, "GPU-aaa"), b = Device(1, "GPU-bbb");
  EXPECT_EQ(GpuOwnerHold(std::nullopt, std::nullopt, a), "") << "unset lendGpus lends all";
  const std::vector<std::string> lend = {"GPU-bbb"};
  EXPECT_EQ(GpuOwnerHold(lend, std::nullopt, a), "not lent (policy.yaml lendGpus)");
  EXPECT_EQ(GpuOwnerHold(lend, std::nullopt, b), "");
  const std::vector<std::string> by_index = {"0"};
  EXPECT_EQ(GpuOwnerHold(by_index, std::nullopt, a), "");
  EXPECT_EQ(GpuOwnerHold(std::vector<std::string>{}, std::nullopt, a), "not lent (policy.yaml lendGpus)")
      << "lendGpus: [] lends none";

  OwnerCommand gpu1;
  gpu1.gpus = {"1"};
  EXPECT_EQ(GpuOwnerHold(std::nullopt, gpu1, a), "") << "the other GPU keeps working";
  EXPECT_EQ(GpuOwnerHold(std::nullopt, gpu1, b), "paused: the owner ran idlegrid agent pause --gpu 1");
  OwnerCommand node;  // a whole-node pause is the NodePause, not a device hold
  EXPECT_EQ(GpuOwnerHold(std::nullopt, node, b), "");
}

TEST(GpuOwnerHoldTest, TheAdvertisementCarriesTheHolds) {
  auto policy = ParseOwnerPolicy("lendGpus: [1]\n", "p.yaml");
  ASSERT_TRUE(policy.ok()) << policy.status().message();
  AdvertiserInputs in;
  in.owner = *policy;
  *in.inventory.mutable_gpus()->add_devices() = Device(0, "GPU-aaa");
  *in.inventory.mutable_gpus()->add_devices() = Device(1, "GPU-bbb");
  v1::Advertisement ad = BuildAdvertisement(in);
  ASSERT_EQ(ad.inventory().gpus().devices_size(), 2);
  EXPECT_EQ(ad.inventory().gpus().devices(0).owner_hold(), "not lent (policy.yaml lendGpus)");
  EXPECT_EQ(ad.inventory().gpus().devices(1).owner_hold(), "");

  OwnerPolicy other = *policy;
  other.lend_gpus = std::vector<std::string>{"0", "1"};
  EXPECT_TRUE(AdvertisedPolicyDiffers(*policy, other)) << "a lendGpus edit re-advertises at once";

  auto bad = ParseOwnerPolicy("lendGpus: [first]\n", "p.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "p.yaml:1:12: lendGpus: \"first\" is neither a GPU index (0, 1, ...) nor a UUID (GPU-...)");
}

// What the advertisement says is left is the coordinator's own rule
// (capacity/ledger.h): a device held whole has nothing left, a VRAM slice
// leaves the rest less the owner's reserve, and cores and memory are what
// the holds leave of what the node offers.
TEST(AdvertisementCapacityTest, WhatIsLeftAfterTheHoldsByTheLedgersRule) {
  AdvertiserInputs in;
  in.capacity.set_cpu_cores(8);
  in.capacity.set_memory_bytes(32ull << 30);
  in.owner.policy.set_reserved_cpu(2);
  in.owner.policy.set_reserved_gpu_memory_bytes(4ull << 30);
  *in.inventory.mutable_gpus()->add_devices() = Device(0, "GPU-aaa");
  *in.inventory.mutable_gpus()->add_devices() = Device(1, "GPU-bbb");
  in.holds.push_back({1.5, 4ull << 30, 2ull << 30, 1000, {"GPU-aaa"}});  // whole, naming 2 GiB
  in.holds.push_back({0.5, 1ull << 30, 6ull << 30, 0, {"GPU-bbb"}});     // a 6 GiB slice
  v1::Advertisement ad = BuildAdvertisement(in);
  EXPECT_DOUBLE_EQ(ad.allocatable_cpu(), 4);
  EXPECT_EQ(ad.allocatable_memory_bytes(), 27ull << 30);
  ASSERT_EQ(ad.inventory().gpus().devices_size(), 2);
  EXPECT_EQ(ad.inventory().gpus().devices(0).allocatable_memory_bytes(), 0u) << "held whole";
  EXPECT_EQ(ad.inventory().gpus().devices(0).reserved_memory_bytes(), 4ull << 30);
  EXPECT_EQ(ad.inventory().gpus().devices(1).allocatable_memory_bytes(), 14ull << 30) << "24 - 4 reserve - 6";
  EXPECT_FALSE(ad.inventory().gpus().devices(1).measured()) << "only the coordinator may call a figure measured";
}

}  // namespace
}  // namespace idlegrid::agent
