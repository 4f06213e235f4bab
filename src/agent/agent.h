#pragma once
// The agent: one per host, runs as an unprivileged user, only dials out. It
// enrolls with a join token (pinning the coordinator's CA), keeps a command
// stream open, heartbeats, and runs each assigned attempt in a container.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agent/advertiser.h"
#include "agent/attempt_env.h"
#include "agent/attempt_grants.h"
#include "agent/local_policy.h"
#include "capacity/node_capacity.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "idlegrid/v1/idlegrid.grpc.pb.h"
#include "agent/agent_metrics.h"
#include "registry/registry_client.h"
#include "runtime/container_runtime.h"

namespace idlegrid::agent {

struct AgentConfig {
  std::string coordinator;  // host:port of the coordinator's gRPC API
  std::string join_token;   // needed only the first time (enrollment)
  std::string ca_hash;      // "sha256:<hex>" of the coordinator CA, pinned at enrollment
  std::string data_dir = "./idlegrid-data/agent";
  // Run every task of an array job in a container of its own instead of
  // reusing a pilot sandbox (slower; for wrapped runtimes, e.g. tests' shims).
  bool no_pilots = false;
  std::string name;           // defaults to the hostname
  double cpus = 0;            // capacity offered; 0 = every core
  uint64_t memory_bytes = 0;  // capacity offered; 0 = all physical memory
  std::string region = "local";
  std::string podman = "podman";
  // How containers are started: "auto" (runc directly for what it can run
  // with podman's sandbox, podman for the rest), "podman" (the reference
  // driver only), "runc" (runc only; runsc and GPU jobs are refused).
  std::string driver = "auto";
  std::string runc = "runc";
  std::vector<std::string> simulate_gpus;          // "MODEL:MEMORY:CC" devices that exist only in the advertisement
  std::string policy_file;                         // owner's policy YAML; default <data_dir>/policy.yaml
  std::string nvml_library = "libnvidia-ml.so.1";  // for hosts with NVML elsewhere (and tests)
  // CDI specs whose presence lets a real GPU into a job (podman reads every
  // spec in /etc/cdi and /var/run/cdi); empty: AttemptEnv's nvidia.yaml pair.
  std::vector<std::string> cdi_specs;
  // What an attempt may write to its output, checkpoint and home
  // directories together when its job sets no resources.disk.
  uint64_t default_attempt_disk_bytes = kDefaultAttemptDiskBytes;
  // The bound on the node's input cache (<data_dir>/inputs, input_cache.h).
  uint64_t input_cache_bytes = 10ull << 30;
  // "runsc": tenants' jobs (not the operator's) that ask for runc run under
  // gVisor where this host can enforce their limits there; "runc" keeps them
  // on runc.
  std::string untrusted_runtime = "runsc";
  // Images from OCI registries (which ones, the owner's policy says):
  // CA files to trust per registry "HOST[:PORT]", and skopeo, which pulls.
  std::map<std::string, std::string> registry_ca_files;
  std::string skopeo = "skopeo";
  // How often the owner-first pause watcher looks (pauseWhen, maxGpuTemp,
  // maxGpuPower in the owner's policy; pause_policy.h).
  int pause_poll_ms = 1000;
  // The agent's clock (wall time, ms): advertisements, pause windows, owner
  // commands' expiry, attempts' start and end times. Tests inject a
  // ManualClock; gRPC deadlines and file mtimes stay on the system's.
  const Clock* clock = SystemClock::Get();
  // Serve this agent's own Prometheus metrics at http://LISTEN/metrics,
  // loopback only (agent_metrics.h); "" : none.
  std::string metrics_listen;
};

class ImageCache;
class InputCache;
class LogShipper;

// The Agent is the world its attempts run in (attempt_env.h): it reports and
// moves artifacts over its gRPC channel and holds the node-wide state; its
// AttemptRunners see it only through those interfaces (attempt_host.cc).
// What one attempt holds on this node (admission, the pause watcher).
struct HeldByAttempt {
  capacity::AttemptHold held;  // what the coordinator's ledger holds for it too
  bool checkpoint = false;     // its job has a checkpoint directory (a pause may hand it back at once)
};
struct PauseWatch;  // pause_loop.cc: what the watcher keeps from one poll to the next
struct PausePoll;   // pause_loop.cc: what one poll saw and decided

class Agent : private AttemptHost, private AttemptReporter, private ArtifactTransfer {
 public:
  explicit Agent(AgentConfig config);
  ~Agent();
  // Enrolls if needed, then serves until Shutdown(). Returns the exit code.
  int Run();
  // `agent join`: pins the coordinator's CA and registers with the join
  // token unless this data directory already holds a credential for the
  // node key; returns the node id. Serves nothing. InvalidArgument when the
  // pin or token is missing, PermissionDenied when the pin does not match,
  // the coordinator's error when it refuses the token. Call once, before Run.
  Result<std::string> EnrollOnly();
  // Stops at once: running containers are killed and their attempts handed back.
  void Shutdown();
  // SIGTERM: takes no new work (the advertisement says so), lets running
  // attempts finish for up to `grace`, then hands back what is left and stops.
  void GracefulShutdown(std::chrono::seconds grace);
  // The capacity this host offers (cores, memory, runtimes, enforcement).
  v1::NodeInfo Describe() const;
  // The full advertisement as it would be sent now, unsigned (`agent --discover`).
  // InvalidArgument for a malformed --simulate-gpu or policy file.
  Result<v1::Advertisement> CurrentAdvertisement();

 private:
  Status Enroll();
  // heartbeat_loop.cc: the sender sends a precomputed state on its own
  // channel and thread and never waits on podman, the disk or a runner; the
  // maintenance loop does the slow work (advertisement, policy, stop
  // requests, orphan sweep, reaping runners) and hands results over.
  void HeartbeatSendLoop();
  void MaintenanceLoop();
  void ReapFinishedRunners();
  void ConnectLoop();
  void HandleAssignment(const v1::Assignment& a);
  void HandleCancel(const v1::CancelAttempt& c);
  // Runs one attempt on the calling thread (attempt_runner.h), wired to this agent.
  void RunAttempt(const v1::Assignment& a);
  Status Report(const v1::ReportAttemptRequest& req) override;
  Status Download(const std::string& digest, const std::string& path) override;
  Result<v1::OutputFile> Upload(const std::string& path, const std::string& rel) override;
  // Every RPC's context is registered so that a shutdown can cancel the
  // ones in flight (a coordinator that is down must not hold the agent).
  struct ContextRelease {
    Agent* agent;
    void operator()(grpc::ClientContext* ctx) const;
  };
  using ContextPtr = std::unique_ptr<grpc::ClientContext, ContextRelease>;
  ContextPtr Context(int deadline_ms = 30000);
  // Free capacity check for a new assignment; on success its hold is
  // recorded at once (so two assignments cannot both take the last core).
  Status ReserveCapacity(const v1::Assignment& a) override;
  void ReleaseCapacity(const std::string& attempt_id) override;
  Status CheckLocalPolicy(const v1::Assignment& a) override;
  Status CheckImageSignatures(const v1::Assignment& a) override;
  bool IsCancelled(const std::string& attempt_id) override;
  Result<std::vector<v1::GpuDevice>> Gpus() override;
  // "idlegrid-<node>-<attempt>": several agents may share one podman storage.
  std::string ContainerName(const std::string& attempt_id) const override {
    return "idlegrid-" + node_id_ + "-" + attempt_id;
  }
  NodeFacts Facts() override;
  // Re-reads the owner's policy file if it changed; true if the policy did.
  bool ReloadPolicy();
  std::vector<std::string> CachedImages() const;
  void RequestReadvertise();
  void RemoveOrphans();
  // pause_loop.cc: the owner-first pause watcher's thread (pause_policy.h):
  // observes, decides, freezes, thaws and hands back; each poll's steps follow.
  void PauseLoop();
  // The steps that act on the agent (the others are pause_loop.cc's own).
  void FollowOwnerCommand(const PausePoll& p, PauseWatch* w);
  void StopTargets(const PausePoll& p, PauseWatch* w);
  void ReleaseFrozen(const PausePoll& p, PauseWatch* w);
  void ReportPause(const PausePoll& p, PauseWatch* w);
  // Attempts whose runner is still at work.
  std::vector<std::string> ActiveAttempts();
  // Stops the attempt and reports it handed back with `why`.
  void HandBack(const std::string& attempt_id, const std::string& why);

  using AttemptHold = HeldByAttempt;

  const AgentConfig config_;
  std::unique_ptr<runtime::ContainerRuntime> runtime_;
  std::unique_ptr<registry::RegistryClient> registry_;  // pulls registry images
  std::unique_ptr<ImageCache> images_;                  // uses runtime_, registry_ and this agent's Download
  std::unique_ptr<InputCache> inputs_;                  // uses this agent's Download
  AttemptGrants grants_;                                // which attempt each transfer is for
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::AgentService::Stub> stub_;
  // Heartbeats travel on a connection of their own: never queued behind an
  // upload or a burst of reports.
  std::shared_ptr<grpc::Channel> heartbeat_channel_;
  std::unique_ptr<v1::AgentService::Stub> heartbeat_stub_;
  std::string node_id_;
  std::string key_fingerprint_;  // of node.key; set by Enroll, before any attempt
  std::string token_;
  std::unique_ptr<LogShipper> logs_;

  Mutex mu_;
  CondVar cv_;
  std::map<std::string, std::thread> attempts_ IG_GUARDED_BY(mu_);  // attempt id -> runner
  std::set<std::string> finished_ IG_GUARDED_BY(mu_);               // runners done, to join
  std::set<std::string> cancelled_ IG_GUARDED_BY(mu_);
  std::map<std::string, uint64_t> epochs_ IG_GUARDED_BY(mu_);  // attempt id -> lease epoch
  std::map<std::string, AttemptHold> holds_ IG_GUARDED_BY(mu_);
  OwnerPolicy owner_ IG_GUARDED_BY(mu_) = DefaultOwnerPolicy();
  int64_t policy_mtime_ns_ IG_GUARDED_BY(mu_) = -1;
  bool readvertise_ IG_GUARDED_BY(mu_) = false;
  std::unique_ptr<Advertiser> advertiser_;  // heartbeat thread only, after Enroll
  std::atomic<bool> stopping_{false};
  // While shutting down, no RPC outlives this (ms since the epoch; 0: none).
  std::atomic<int64_t> shutdown_deadline_ms_{0};
  Mutex rpc_mu_;
  std::set<grpc::ClientContext*> in_flight_ IG_GUARDED_BY(rpc_mu_);

  // What the heartbeat sender sends; written by the maintenance loop.
  struct HeartbeatState {
    v1::NodeInfo info;
    std::optional<v1::SignedAdvertisement> pending_ad;  // until the coordinator took it
    uint64_t ad_generation = 0;                         // bumped for each new pending_ad
    std::set<std::string> running;                      // attempts with a runner
    int interval_ms = 5000;
    bool ad_refused = false;  // the coordinator refused pending_ad: sign anew
    v1::NodePause pause;      // the owner's pause, written by the pause watcher
  };
  Mutex hb_mu_;
  CondVar hb_cv_;
  HeartbeatState hb_ IG_GUARDED_BY(hb_mu_);
  std::vector<std::string> stop_requests_ IG_GUARDED_BY(mu_);   // containers to kill (cancels, stale attempts)
  std::vector<v1::GpuDevice> last_devices_ IG_GUARDED_BY(mu_);  // from the last advertisement
  // The owner's pause (pause_loop.cc): why the node takes no new work now
  // ("" when not paused), and what a STOPPED report of a handed-back attempt says.
  std::string owner_pause_reason_ IG_GUARDED_BY(mu_);
  std::optional<OwnerCommand> owner_command_ IG_GUARDED_BY(mu_);         // `agent pause` in force
  std::map<std::string, std::string> stop_messages_ IG_GUARDED_BY(mu_);  // attempt id -> message
  std::atomic<bool> draining_{false};
  grpc::ClientContext* connect_ctx_ IG_GUARDED_BY(mu_) = nullptr;
  AgentMetrics metrics_;
  MetricsServer metrics_server_;
  // What the metrics read of the agent's own state at a scrape.
  AgentGauges Gauges();
};

}  // namespace idlegrid::agent
