#include "common/signal_drain.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <thread>

namespace idlegrid {

int RunDrainingOnSignal(const std::function<int()>& run, const std::function<void(int)>& drain) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigset_t previous;
  // Blocked before the waiter starts, so it (and every thread run() starts)
  // inherits the mask and only the waiter's sigwait ever takes them.
  pthread_sigmask(SIG_BLOCK, &signals, &previous);
  std::atomic<bool> run_returned{false};
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (!run_returned.load()) drain(sig);
  });
  const int rc = run();
  run_returned = true;
  // Wakes a waiter still in sigwait; one already draining is joined, so
  // nothing drain() touches is destroyed under it. The signal is
  // thread-directed: if the waiter has already left sigwait it is dropped
  // with the thread.
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return rc;
}

}  // namespace idlegrid
