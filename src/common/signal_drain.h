#pragma once

#include <functional>

namespace idlegrid {

// Runs run() with SIGINT and SIGTERM blocked, and when one of them arrives
// calls drain(signal) on a thread of its own, which is expected to make run()
// return. It returns run()'s value only once drain() has returned too: drain
// may use everything run() uses (the agent's Shutdown touches the agent that
// the caller destroys as soon as this returns). If run() returns without a
// signal, drain is never called.
int RunDrainingOnSignal(const std::function<int()>& run, const std::function<void(int)>& drain);

}  // namespace idlegrid
