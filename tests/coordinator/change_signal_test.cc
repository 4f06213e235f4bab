// ChangeSignal (coordinator/change_signal.h): watchers see the version move,
// the loop sees a pass due, and Stop wakes both for good.
#include "coordinator/change_signal.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace idlegrid::coordinator {
namespace {

TEST(ChangeSignal, ANotifyWakesAWatcherWithTheNewVersion) {
  ChangeSignal changes;
  const uint64_t before = changes.version();
  std::thread notifier([&] { changes.Notify(); });
  // A minute's wait: only the notify can end it in time for the test.
  const auto start = std::chrono::steady_clock::now();
  const uint64_t after = changes.WaitForChange(before, 60'000);
  notifier.join();
  EXPECT_EQ(after, before + 1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST(ChangeSignal, AWaitWithNoChangeEndsAtItsTimeoutWithTheSameVersion) {
  ChangeSignal changes;
  changes.Notify();
  EXPECT_EQ(changes.WaitForChange(changes.version(), 20), 1u);
}

TEST(ChangeSignal, APassIsDueAtFirstAndAfterANotifyAndStopEndsTheLoop) {
  ChangeSignal changes;
  EXPECT_TRUE(changes.WaitForPass(60'000)) << "the first pass is due at once";
  changes.Notify();
  EXPECT_TRUE(changes.WaitForPass(60'000));
  std::thread stopper([&] { EXPECT_TRUE(changes.Stop()); });
  EXPECT_FALSE(changes.WaitForPass(60'000)) << "stopped: the loop ends";
  stopper.join();
  EXPECT_FALSE(changes.Stop()) << "only the first Stop says it stopped";
  const uint64_t v = changes.version();
  EXPECT_EQ(changes.WaitForChange(v, 60'000), v) << "a stopped signal does not hold watchers";
}

}  // namespace
}  // namespace idlegrid::coordinator
