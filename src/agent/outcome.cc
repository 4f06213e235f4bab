#include "agent/outcome.h"

namespace idlegrid::agent {

Outcome DecideOutcome(const RunFacts& facts) {
  Outcome o;
  if (facts.cancelled) {
    o.event = v1::STOPPED;
    return o;
  }
  if (facts.output_breach) {
    o.event = v1::ERRORED;
    o.reason = v1::DISK_LIMIT;
    o.message = *facts.output_breach;
    return o;
  }
  if (facts.disk_full) {
    o.event = v1::ERRORED;
    o.reason = v1::PLATFORM_FAILURE;
    o.message = "the node's " + *facts.disk_full;
    if (facts.exit.ok() && facts.exit->error.empty()) {
      o.message += " (the job exited " + std::to_string(facts.exit->exit_code) + "; not held against it)";
    } else {
      o.message += " (" + (facts.exit.ok() ? facts.exit->error : facts.exit.status().message()) + ")";
    }
    return o;
  }
  if (!facts.exit.ok() || !facts.exit->error.empty()) {
    o.event = v1::ERRORED;
    o.reason = v1::PLATFORM_FAILURE;
    o.message = facts.exit.ok() ? facts.exit->error : facts.exit.status().message();
    return o;
  }
  if (facts.output_files > kMaxOutputFiles) {
    o.event = v1::ERRORED;
    o.reason = v1::NONZERO_EXIT;
    o.message = "the job left " + std::to_string(facts.output_files) + " output files; at most " +
                std::to_string(kMaxOutputFiles) + " are collected";
    return o;
  }
  const runtime::ExitInfo& exit = facts.exit.value();
  o.exit_code = exit.exit_code;
  o.collect_outputs = true;
  if (exit.timed_out) {
    o.reason = v1::RUN_TIMEOUT;
    o.message = "run timeout of " + std::to_string(facts.run_timeout_seconds) + " s reached; killed";
  } else if (exit.oom) {
    o.reason = v1::OUT_OF_MEMORY;
    o.message = "killed: out of memory (limit " + std::to_string(facts.memory_bytes) + " bytes)";
  }
  return o;
}

bool NeedsFinalCheckpoint(const RunFacts& facts) {
  if (facts.output_breach) return false;
  const bool succeeded = !facts.cancelled && facts.exit.ok() && facts.exit->error.empty() &&
                         facts.exit->exit_code == 0 && !facts.exit->timed_out && !facts.exit->oom;
  return !succeeded;
}

}  // namespace idlegrid::agent
