// The watcher of a running attempt's directories (agent/output_watch.h), on
// real directories; rounds and kills are awaited, never slept for.
#include "agent/output_watch.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "common/test_support.h"

namespace idlegrid::agent {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr auto kPatience = std::chrono::seconds(10);

void WriteBytes(const std::string& path, uint64_t n) { std::ofstream(path, std::ios::binary) << std::string(n, 'x'); }

// Counts the watch's rounds (it asks for the live directories once a round)
// and its kills, so a test can wait for either.
class WatchProbe {
 public:
  std::function<std::vector<std::string>()> LiveDirs(std::vector<std::string> dirs) {
    return [this, dirs] {
      std::lock_guard<std::mutex> lock(mu_);
      ++rounds_;
      cv_.notify_all();
      return dirs;
    };
  }
  std::function<void(const std::string&)> Kill() {
    return [this](const std::string&) {
      std::lock_guard<std::mutex> lock(mu_);
      ++kills_;
      cv_.notify_all();
    };
  }
  bool WaitRounds(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kPatience, [&] { return rounds_ >= n; });
  }
  bool WaitKill() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kPatience, [&] { return kills_ > 0; });
  }
  int kills() {
    std::lock_guard<std::mutex> lock(mu_);
    return kills_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int rounds_ = 0;
  int kills_ = 0;
};

class OutputWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    out_ = tmp_.path() + "/out";
    checkpoint_ = tmp_.path() + "/checkpoint";
    pilot_ = tmp_.path() + "/pilot-rw0";
    for (const auto& d : {out_, checkpoint_, pilot_}) std::filesystem::create_directory(d);
  }
  OutputWatch::Options Options(uint64_t cap_bytes, std::vector<std::string> live = {}) {
    return {{out_, checkpoint_},
            probe_.LiveDirs(std::move(live)),
            OutputCap{cap_bytes, true},
            std::chrono::milliseconds(5),
            probe_.Kill()};
  }
  testing::TempDir tmp_{"output-watch"};
  std::string out_, checkpoint_, pilot_;
  WatchProbe probe_;
};

TEST_F(OutputWatchTest, OutputAndCheckpointTogetherPastTheCapKillOnce) {
  // Each directory alone is within the cap; together they are not.
  WriteBytes(out_ + "/a.bin", 3 * kMiB);
  WriteBytes(checkpoint_ + "/state", 3 * kMiB);
  OutputWatch watch(Options(4 * kMiB));
  ASSERT_TRUE(probe_.WaitKill());
  watch.Stop();
  EXPECT_EQ(probe_.kills(), 1);
  ASSERT_TRUE(watch.Breach());
  EXPECT_EQ(*watch.Breach(),
            "wrote more than 4Mi (resources.disk) to its home, output and checkpoint directories; killed");
}

TEST_F(OutputWatchTest, WithinTheCapNothingIsKilled) {
  WriteBytes(out_ + "/a.bin", kMiB);
  OutputWatch watch(Options(4 * kMiB));
  ASSERT_TRUE(probe_.WaitRounds(3));
  watch.Stop();
  EXPECT_EQ(probe_.kills(), 0);
  EXPECT_FALSE(watch.Breach());
}

TEST_F(OutputWatchTest, WhatTheJobWritesWhileWatchedIsSeen) {
  OutputWatch watch(Options(4 * kMiB));
  ASSERT_TRUE(probe_.WaitRounds(1));
  EXPECT_EQ(probe_.kills(), 0);
  for (int i = 0; i < 5; ++i) WriteBytes(out_ + "/f" + std::to_string(i), kMiB);
  ASSERT_TRUE(probe_.WaitKill());
  watch.Stop();
  EXPECT_TRUE(watch.Breach());
}

TEST_F(OutputWatchTest, WhereAPilotTaskWritesNowCounts) {
  // A task in a pilot writes to the pilot's directory, not to the attempt's.
  WriteBytes(pilot_ + "/a.bin", 5 * kMiB);
  OutputWatch watch(Options(4 * kMiB, {pilot_}));
  ASSERT_TRUE(probe_.WaitKill());
  watch.Stop();
  EXPECT_TRUE(watch.Breach());
}

TEST_F(OutputWatchTest, ADirectoryThatCannotBeMeasuredStopsTheContainer) {
  // Not a directory at all: the walk cannot vouch for it, round after round.
  WriteBytes(tmp_.path() + "/not-a-dir", 10);
  OutputWatch::Options options = Options(4 * kMiB, {tmp_.path() + "/not-a-dir"});
  options.unreadable_grace = std::chrono::milliseconds(50);
  OutputWatch watch(options);
  ASSERT_TRUE(probe_.WaitKill());
  watch.Stop();
  ASSERT_TRUE(watch.Breach());
  EXPECT_NE(watch.Breach()->find("could not measure"), std::string::npos) << *watch.Breach();
}

// A directory hidden for a moment (a job's chmod 0 just before it exits) is
// no breach; only one that stays unreadable for the grace is.
TEST_F(OutputWatchTest, ADirectoryUnreadableForAMomentIsNotABreach) {
  WriteBytes(tmp_.path() + "/not-a-dir", 10);
  std::mutex mu;
  int rounds = 0;
  OutputWatch::Options options = Options(4 * kMiB);
  options.unreadable_grace = std::chrono::hours(1);
  const auto count = probe_.LiveDirs({});
  options.live_dirs = [&, count] {
    count();
    std::lock_guard<std::mutex> lock(mu);
    return ++rounds <= 3 ? std::vector<std::string>{tmp_.path() + "/not-a-dir"} : std::vector<std::string>{};
  };
  OutputWatch watch(options);
  ASSERT_TRUE(probe_.WaitRounds(8));
  watch.Stop();
  EXPECT_EQ(probe_.kills(), 0);
  EXPECT_FALSE(watch.Breach());
}

TEST(MeasureWritableDirsTest, AMissingDirectoryHoldsNothing) {
  testing::TempDir tmp("measure-dirs");
  WriteBytes(tmp.path() + "/f", kMiB);
  Result<uint64_t> total = MeasureWritableDirs({tmp.path(), tmp.path() + "/not-made"});
  ASSERT_TRUE(total.ok()) << total.status().ToString();
  EXPECT_GE(*total, kMiB);
}

}  // namespace
}  // namespace idlegrid::agent
