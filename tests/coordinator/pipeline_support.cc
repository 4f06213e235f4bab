#include "coordinator/pipeline_support.h"

#include <stdlib.h>

#include "advert/advertisement.h"
#include "artifacts/artifact_store.h"
#include "common/fs.h"
#include "sched/pipeline.h"
#include "store/store.h"

namespace idlegrid::coordinator::testing {

TempDir::TempDir() {
  char tmpl[] = "/tmp/coordinator_pipeline_test.XXXXXX";
  if (const char* made = ::mkdtemp(tmpl)) path_ = made;
}

TempDir::~TempDir() {
  if (!path_.empty()) (void)RemoveTree(path_);
}

v1::JobSpec CpuJob(const std::string& name) {
  v1::JobSpec spec;
  spec.set_api_version("idlegrid/v1");
  spec.set_name(name);
  spec.set_image(kImage);
  spec.add_command("/bin/true");
  spec.mutable_resources()->set_cpu(1);
  spec.mutable_resources()->set_memory_bytes(64ull << 20);
  spec.set_run_timeout_seconds(60);
  spec.set_array_count(1);
  return spec;
}

namespace {}  // namespace

v1::Advertisement AdOf(uint64_t sequence, double cpu_ask) {
  v1::Advertisement ad;
  ad.set_sequence(sequence);
  ad.set_created_at_ms(1'000'000);
  ad.set_region("lab");
  ad.set_agent_version(AgentVersionString());
  ad.set_protocol_version("idlegrid.v1");
  ad.set_allocatable_cpu(4);
  ad.set_allocatable_memory_bytes(8ull << 30);
  ad.mutable_capacity()->set_cpu_cores(4);
  ad.mutable_capacity()->set_memory_bytes(8ull << 30);
  ad.mutable_capacity()->add_runtimes("runc");
  ad.mutable_policy()->set_accept_jobs(true);
  if (cpu_ask > 0) {
    v1::PriceAsk* ask = ad.add_asks();
    ask->set_device_class("cpu-core");
    ask->set_per_hour(cpu_ask);
  }
  return ad;
}

v1::NodeInfo InfoOf(const std::string& name) {
  v1::NodeInfo info;
  info.set_hostname(name);
  info.set_cpu_cores(4);
  info.set_memory_bytes(8ull << 30);
  info.add_runtimes("runc");
  info.mutable_enforcement()->set_memory("cgroup");
  info.mutable_enforcement()->set_pids("cgroup");
  info.mutable_enforcement()->set_cpu("cgroup");
  info.set_agent_version(AgentVersionString());
  return info;
}

NodeTable::Hooks InertNodeHooks(std::function<void()> on_change) {
  NodeTable::Hooks hooks;
  hooks.report_attempt = [](const std::string&, const v1::ReportAttemptRequest&) { return Status::Ok(); };
  hooks.resend = [](const store::NewAttempt&) { return Status::Ok(); };
  hooks.judge_readiness = [](const std::string&) {};
  hooks.forget_readiness = [](const std::string&) {};
  hooks.cpu_bench_error = [] { return std::string(); };
  hooks.gpu_bench_error = [] { return std::string(); };
  hooks.readiness_key_untrusted = [](const v1::Advertisement&) { return std::string(); };
  hooks.changed = std::move(on_change);
  return hooks;
}

namespace {

v1::RegisterRequest RegisterRequestOf(const std::string& name, const v1::SignedAdvertisement& ad,
                                      const std::string& join_secret = kJoinSecret) {
  v1::RegisterRequest request;
  request.set_join_secret(join_secret);
  request.set_name(name);
  *request.mutable_info() = InfoOf(name);
  *request.mutable_advertisement() = ad;
  return request;
}

}  // namespace

PipelineHarness::PipelineHarness(Options options) : options_(std::move(options)) {}

Status PipelineHarness::Init() {
  if (dir_.path().empty()) return Status::Internal("mkdtemp failed");
  IG_ASSIGN_OR_RETURN(auto store, store::OpenSqliteStore(dir_.path() + "/state.db"));
  auto artifacts = std::make_unique<artifacts::ArtifactStore>(dir_.path() + "/artifacts");
  IG_RETURN_IF_ERROR(artifacts->Init());
  IG_RETURN_IF_ERROR(store->RegisterImage({kImage, "sha256:config", "sha256:archive"}, clock_.NowMs()));
  coordinator_ = std::make_unique<Coordinator>(std::move(store), std::move(artifacts), sched::NewPipelineScheduler(),
                                               kJoinSecret, options_, &clock_);
  return Status::Ok();
}

Result<std::string> PipelineHarness::AddNode(const std::string& name, double cpu_ask, const std::string& join_secret,
                                             const v1::LocalPolicy& policy) {
  advert::NodeKey key = advert::NodeKey::Generate();
  auto ad = [&](uint64_t sequence) {
    v1::Advertisement out = AdOf(sequence, cpu_ask);
    out.mutable_policy()->MergeFrom(policy);
    return advert::SignAdvertisement(out, key);
  };
  IG_ASSIGN_OR_RETURN(auto first, coordinator_->nodes().Register(RegisterRequestOf(name, ad(1), join_secret), kPeer));
  const std::string id = first.node_id();
  // A node that passed the readiness benchmark for this agent: a restarted
  // agent re-registers, and the coordinator takes its stored measurement.
  v1::Measurement m;
  m.set_passed(true);
  m.set_cpu_score(1e8);
  m.set_measured_at_ms(clock_.NowMs());
  m.set_agent_version(AgentVersionString());
  IG_RETURN_IF_ERROR(coordinator_->store()->RecordMeasurement(id, m));
  IG_ASSIGN_OR_RETURN(auto second, coordinator_->nodes().Register(RegisterRequestOf(name, ad(2), join_secret), kPeer));
  if (second.node_id() != id) return Status::Internal("node id changed on re-registration");
  infos_[id] = InfoOf(name);
  keys_.insert_or_assign(id, key);
  sessions_[id] = coordinator_->nodes().OpenSession(id, infos_[id], kPeer);
  IG_RETURN_IF_ERROR(Heartbeat(id));
  return id;
}

Result<std::string> PipelineHarness::Submit(const v1::JobSpec& spec, const std::string& account) {
  v1::SubmitJobRequest request;
  *request.mutable_spec() = spec;
  IG_ASSIGN_OR_RETURN(v1::Job job, coordinator_->jobs().Submit(request, account));
  return job.id();
}

Result<v1::Task> PipelineHarness::Task(const std::string& job_id, uint32_t index) {
  IG_ASSIGN_OR_RETURN(v1::Job job, coordinator_->jobs().Get(job_id));
  if (index >= static_cast<uint32_t>(job.tasks_size())) return Status::NotFound("no such task");
  return job.tasks(static_cast<int>(index));
}

std::vector<v1::Command> PipelineHarness::TakeCommands(const std::string& node_id) {
  std::vector<v1::Command> out;
  auto it = sessions_.find(node_id);
  if (it == sessions_.end()) return out;
  while (auto command = it->second->Next(0)) out.push_back(std::move(*command));
  return out;
}

bool PipelineHarness::SessionClosed(const std::string& node_id) {
  auto it = sessions_.find(node_id);
  return it == sessions_.end() || it->second->closed();
}

Status PipelineHarness::Report(const std::string& node_id, const std::string& attempt_id, v1::AttemptEvent event,
                               int exit_code) {
  IG_ASSIGN_OR_RETURN(auto owner, coordinator_->store()->GetAttemptOwner(attempt_id));
  IG_ASSIGN_OR_RETURN(v1::Task task, Task(owner.job_id, owner.index));
  v1::ReportAttemptRequest report;
  report.set_attempt_id(attempt_id);
  report.set_event(event);
  report.set_exit_code(exit_code);
  for (const auto& a : task.attempts()) {
    if (a.id() == attempt_id) report.set_lease_epoch(a.lease_epoch());
  }
  return coordinator_->attempts().Report(node_id, report);
}

Status PipelineHarness::Accept(const std::string& node_id, const std::string& attempt_id) {
  return Report(node_id, attempt_id, v1::ACCEPTED);
}

Status PipelineHarness::Start(const std::string& node_id, const std::string& attempt_id) {
  IG_RETURN_IF_ERROR(Report(node_id, attempt_id, v1::STARTED));
  running_[node_id].insert(attempt_id);
  return Status::Ok();
}

Status PipelineHarness::Exit(const std::string& node_id, const std::string& attempt_id, int exit_code) {
  running_[node_id].erase(attempt_id);
  return Report(node_id, attempt_id, v1::EXITED, exit_code);
}

Status PipelineHarness::Heartbeat(const std::string& node_id) {
  v1::HeartbeatRequest request;
  *request.mutable_info() = infos_[node_id];
  for (const auto& id : running_[node_id]) request.add_running_attempts(id);
  return coordinator_->nodes().Heartbeat(node_id, request).status();
}

Status PipelineHarness::Pass(int64_t ms, const std::vector<std::string>& heartbeating) {
  clock_.AdvanceMs(ms);
  for (const auto& id : heartbeating) IG_RETURN_IF_ERROR(Heartbeat(id));
  coordinator_->Tick();
  return Status::Ok();
}

std::string PipelineHarness::NodeState(const std::string& node_id) {
  auto nodes = coordinator_->nodes().List();
  if (!nodes.ok()) return "";
  for (const auto& n : nodes->nodes()) {
    if (n.id() == node_id) return n.state();
  }
  return "";
}

}  // namespace idlegrid::coordinator::testing
