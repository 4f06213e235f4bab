// RunDrainingOnSignal: a signal's drain finishes before the run's caller
// goes on (the agent's shutdown once touched an agent already destroyed).
#include "common/signal_drain.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace idlegrid {
namespace {

TEST(RunDrainingOnSignal, ReturnsOnlyAfterTheDrainThatMadeTheRunReturnHasFinished) {
  std::mutex mu;
  std::condition_variable cv;
  bool draining = false;
  int drained_signal = 0;
  std::atomic<bool> drain_finished{false};
  const int rc = RunDrainingOnSignal(
      [&] {
        ::kill(::getpid(), SIGTERM);  // process-directed, as systemd sends it
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return draining; });
        return 7;  // the run ends as soon as the drain has begun
      },
      [&](int sig) {
        {
          std::lock_guard lock(mu);
          draining = true;
          drained_signal = sig;
        }
        cv.notify_all();
        // Still working well after the run returned: a caller that went on
        // without waiting would see drain_finished false.
        std::unique_lock lock(mu);
        cv.wait_for(lock, std::chrono::milliseconds(300), [] { return false; });
        drain_finished = true;
      });
  EXPECT_EQ(rc, 7);
  EXPECT_EQ(drained_signal, SIGTERM);
  EXPECT_TRUE(drain_finished.load()) << "returned while the drain was still running";
}

TEST(RunDrainingOnSignal, ARunThatEndsOnItsOwnReturnsWithoutDraining) {
  bool drained = false;
  const int rc = RunDrainingOnSignal([] { return 3; }, [&](int) { drained = true; });
  EXPECT_EQ(rc, 3);
  EXPECT_FALSE(drained);
  // The caller's mask is as it was: SIGTERM is not left blocked.
  sigset_t now;
  pthread_sigmask(SIG_SETMASK, nullptr, &now);
  EXPECT_FALSE(sigismember(&now, SIGTERM));
}

}  // namespace
}  // namespace idlegrid
