#pragma once
// Pilots: one sandbox runs many tasks of one array job on this node, one task
// after another, so a sweep pays runc's start (~100 ms of CPU: namespaces,
// id maps, seccomp) once per sandbox instead of once per task.
//
// A pilot is an ordinary runc container, configured by BuildOciConfig from the
// first task's RunSpec exactly as that task's own container would be, except
// that its process is the pilot program (src/runtime/pilot/pilot.c, bundled
// in the agent and mounted read-only at /.idlegrid) and its pids limit is one
// higher (the pilot is a process too). The pilot forks and execs each task
// with the task's argv, environment and working directory, so a task gets the
// same namespaces, seccomp filter, rlimits and capabilities (none) as in a
// container of its own. Between tasks the pilot kills every process a task
// left (kill(-1) from the namespace's init) and clears the tmpfs directories
// and SysV IPC objects; the job's writable mounts (outputs) are per-pilot
// directories whose contents the pool moves into the attempt's own directory
// when the task ends. Read-only mounts (inputs) are hard links made when the
// pilot starts: every attempt of a key holds the same content (PilotKey).
//
// What differs from a container per task (tests/runtime/pilot_test.cc): the
// task is not PID 1 (the pilot is, and shows in /proc); the hostname is the
// pilot's name; a task sees the same kernel objects a previous task of the
// same job left in the container only if they survive the clearing above.
// Only attempts of one sandbox group (one job) ever share a pilot.
//
// A pilot whose task is killed or times out, whose program misbehaves, or
// that cannot clear its sandbox is destroyed (`runc kill`, `runc delete`); an
// idle pilot is retired after `linger`, and all of them when the pool is
// destroyed.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "image/image_config.h"
#include "runtime/active_runs.h"
#include "runtime/container_runtime.h"

namespace idlegrid::runtime {

struct PilotPoolHooks {
  std::string runc;         // absolute path of runc
  std::string state_dir;    // runc --root
  std::string bundles_dir;  // where pilots' bundles go (<bundles>/containers/<name>)
  // Host directory holding the pilot program as "pilot", mounted read-only.
  std::string program_dir;
  // Writes the bundle of a container for `spec` (its config.json) and returns
  // its directory; the caller's RuncRuntime::WriteBundle.
  std::function<Result<std::string>(const RunSpec& spec, const image::ImageConfig& image)> write_bundle;
  // `runc kill NAME KILL` and `runc delete --force NAME`; errors ignored.
  std::function<void(const std::string& name)> destroy;
};

class PilotPool {
 public:
  PilotPool(PilotPoolHooks hooks, std::chrono::milliseconds linger);
  ~PilotPool();  // retires every idle pilot; Runs in progress must have returned
  PilotPool(const PilotPool&) = delete;
  PilotPool& operator=(const PilotPool&) = delete;

  // Runs `spec` (eligible: PilotEligible) in an idle pilot of its key, or a
  // new one. nullopt when no pilot could be started for it (the caller runs
  // it in a container of its own; nothing was started). Otherwise the task's
  // ExitInfo as RuncRuntime::Run gives it, or an error.
  std::optional<Result<ExitInfo>> Run(const RunSpec& spec, const image::ImageConfig& image, const OutputSink& sink,
                                      std::chrono::milliseconds timeout, const std::function<void()>& on_started,
                                      const RunControl& stop);

  // Names of the pilots this pool runs (ListContainers must not report them
  // as leftovers).
  std::set<std::string> Names();

  // While the task of container `container_name` runs in a pilot, the
  // pilot's directories its writable mounts are (their entries move to the
  // mounts' own host paths when it ends); empty otherwise.
  // ContainerRuntime::LiveWritableDirs.
  std::vector<std::string> LiveWritableDirs(const std::string& container_name);
  // The name of the pilot container the task of `container_name` runs in
  // now; "" when none. Thread-safe.
  std::string PilotOf(const std::string& container_name);

  struct Pilot;

 private:
  struct Task;     // what one Run hands to each pilot it tries
  struct TaskEnd;  // what ended the wait for a task in a pilot
  struct Outcome;  // how one try in a pilot came out: Run's result, or another try

  // None of these may be called with the pool's mutex held: those that need
  // it take it themselves, briefly, and Retire (which ends in taking it) may
  // take seconds.
  std::unique_ptr<Pilot> TakeIdle(const std::string& key);
  Result<std::unique_ptr<Pilot>> Start(const RunSpec& spec, const image::ImageConfig& image);
  // An idle pilot of the task's key (TakeIdle), or a new one (Start; `fresh`
  // set); Start's error, logged, when none could be started.
  Result<std::unique_ptr<Pilot>> Acquire(const Task& task, bool& fresh);
  // Sends the task to `pilot` and sees it to its end there. `started` is set,
  // and the task's on_started called if it was not yet, once a pilot has
  // taken the task.
  Outcome TryIn(std::unique_ptr<Pilot> pilot, bool fresh, const Task& task, bool& started);
  // Pumps the task's output until the pilot replies, its sandbox ends, the
  // task is to be killed or its time is up.
  static TaskEnd AwaitEnd(Pilot& pilot, const Task& task);
  // The pilot replied that the task ended and its sandbox is clear: the
  // task's ExitInfo; the pilot is idle again (or retired when the task's
  // outputs could not be moved back).
  Result<ExitInfo> FinishReplied(std::unique_ptr<Pilot> pilot, const Task& task, const TaskEnd& end);
  // The task was killed, timed out, or the pilot misbehaved or ended: retires
  // the pilot. nullopt when runc could not start this fresh pilot at all.
  std::optional<Result<ExitInfo>> FinishFailed(std::unique_ptr<Pilot> pilot, const Task& task, bool fresh,
                                               const TaskEnd& end);
  // Retires `pilot` (not gracefully), moving what the task wrote to the
  // attempt's own directories once nothing runs in it; that move's status.
  Status RetireKeepingOutputs(std::unique_ptr<Pilot> pilot, const RunSpec& spec);
  // Makes `pilot` an idle pilot of `key` (for TakeIdle, or the reaper after
  // `linger`).
  void Park(std::unique_ptr<Pilot> pilot, const std::string& key);
  // Ends the pilot's container (gracefully: end of file on its requests;
  // otherwise runc kill), calls `before_removal` once nothing runs in it any
  // more, then removes its bundle.
  void Retire(std::unique_ptr<Pilot> pilot, bool gracefully, const std::function<void(Pilot&)>& before_removal = {});
  void ReaperLoop();

  struct State;
  const PilotPoolHooks hooks_;
  const std::chrono::milliseconds linger_;
  std::unique_ptr<State> state_;
};

}  // namespace idlegrid::runtime
