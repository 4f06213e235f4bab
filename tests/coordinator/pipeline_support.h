#pragma once
// A coordinator driven by hand, for tests of its pipeline: a real SQLite store
// and artifact store in a fresh temp dir, the real pipeline scheduler, a
// manual clock, and no loop thread -- each pass of the loop is one explicit
// Tick(). Nodes are registered through the public API with signed
// advertisements and connected with OpenSession; their commands are read from
// the session, their reports go through ReportAttempt, as an agent's would.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "advert/node_key.h"
#include "common/clock.h"
#include "common/status.h"
#include "common/version.h"
#include "coordinator/coordinator.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::coordinator::testing {

// What a well-behaved agent with 4 cores and 8 GiB advertises (unsigned);
// with cpu_ask > 0, a price per core-hour.
v1::Advertisement AdOf(uint64_t sequence, double cpu_ask = 0);

inline constexpr char kJoinSecret[] = "igj_test";
inline constexpr char kPeer[] = "test";
// A registered image every job of these tests runs (never pulled: no agent).
inline constexpr char kImage[] = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// What the agent of AdOf's node reports: 4 cores, 8 GiB, runc, cgroup limits.
v1::NodeInfo InfoOf(const std::string& name);

// Node table hooks for a table tested alone: reports and re-sends succeed and
// do nothing, readiness has no reason to refuse, `changed` runs `on_change`.
NodeTable::Hooks InertNodeHooks(std::function<void()> on_change = [] {});

// A one-task CPU job: 1 core, 64 MiB, run timeout 60 s.
v1::JobSpec CpuJob(const std::string& name);

class PipelineHarness {
 public:
  // Options as given, with the defaults the tests count with (heartbeat
  // interval 5 s, margin 3, ack timeout 10 s, dispatch period 1 s).
  explicit PipelineHarness(Options options = Options());
  // Everything the constructor could not report: the temp dir, the stores,
  // the image. Call (ASSERT_TRUE(...ok())) before anything else.
  Status Init();

  Coordinator& coordinator() { return *coordinator_; }
  ManualClock& clock() { return clock_; }

  // Registers a node (4 cores, 8 GiB, runc, cgroup limits) that passed its
  // readiness benchmark and asks `cpu_ask` per core-hour, connects it and
  // sends its first heartbeat. Returns its id. `policy` is merged over the
  // advertised owner policy (which accepts jobs).
  Result<std::string> AddNode(const std::string& name, double cpu_ask = 0, const std::string& join_secret = kJoinSecret,
                              const v1::LocalPolicy& policy = v1::LocalPolicy());

  Result<std::string> Submit(const v1::JobSpec& spec, const std::string& account = "operator");
  Result<v1::Task> Task(const std::string& job_id, uint32_t index = 0);

  // Commands pushed to the node's session since the last call (none blocks).
  std::vector<v1::Command> TakeCommands(const std::string& node_id);
  // Whether the coordinator closed the node's session (true for an unknown node).
  bool SessionClosed(const std::string& node_id);

  // An agent's report, carrying the attempt's lease epoch: ACCEPTED, then
  // STARTED (the node then lists the attempt in its heartbeats); EXITED with
  // `exit_code`.
  Status Accept(const std::string& node_id, const std::string& attempt_id);
  Status Start(const std::string& node_id, const std::string& attempt_id);
  Status Exit(const std::string& node_id, const std::string& attempt_id, int exit_code);

  // A heartbeat listing what the node runs (as Start/Exit left it).
  Status Heartbeat(const std::string& node_id);
  // Advances the clock by `ms`, heartbeats each of `heartbeating`, then runs
  // one loop pass (Tick).
  Status Pass(int64_t ms, const std::vector<std::string>& heartbeating);
  // The node's state in ListNodes ("online", "late", "suspect", "offline"),
  // "" when it is not listed.
  std::string NodeState(const std::string& node_id);

  // What the node runs as far as the harness's agent knows.
  std::set<std::string>& running(const std::string& node_id) { return running_[node_id]; }
  // The key the node registered with (its agent signs with it).
  const advert::NodeKey& KeyOf(const std::string& node_id) const { return keys_.at(node_id); }

 private:
  Status Report(const std::string& node_id, const std::string& attempt_id, v1::AttemptEvent event, int exit_code = 0);

  TempDir dir_;  // declared first: outlives the coordinator's open files
  ManualClock clock_;
  Options options_;
  std::unique_ptr<Coordinator> coordinator_;
  std::map<std::string, std::shared_ptr<AgentSession>> sessions_;
  std::map<std::string, v1::NodeInfo> infos_;
  std::map<std::string, std::set<std::string>> running_;
  std::map<std::string, advert::NodeKey> keys_;
};

}  // namespace idlegrid::coordinator::testing
