#include "cli/commands.h"
#include "cli/agent_status.h"
#include "cli/support.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <unistd.h>

#include "cli/agent_status.h"
#include "cli/dir_inputs.h"
#include "cli/image_signing.h"
#include "cli/job_view.h"
#include "cli/log_lines.h"
#include "cli/table.h"
#include "cli/progress.h"
#include "common/clock.h"
#include "common/exit_code.h"
#include "common/grpc_status.h"
#include "common/units.h"
#include "common/fs.h"
#include "image/signature_files.h"
#include "jobs/task_page.h"
#include "jobs/task_ranges.h"
#include "jobs/task_state.h"
#include "manifest/manifest.h"

namespace idlegrid::cli {

int Fail(const Status& st) {
  std::cerr << "error: " << st.message() << "\n";
  return ExitCodeFor(st);
}

void PrintJson(const google::protobuf::Message& m, bool one_line) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = !one_line;
  // Fails only for a message our own code cannot build (invalid UTF-8);
  // the output is then empty.
  (void)google::protobuf::util::MessageToJsonString(m, &out, opts);
  std::cout << out << (one_line || out.empty() || out.back() != '\n' ? "\n" : "");
}

ProgressStyle StderrProgressStyle(bool json) { return ChooseProgressStyle(json, isatty(STDERR_FILENO) == 1); }

Result<std::unique_ptr<Client>> Open(const CommonFlags& f) {
  IG_ASSIGN_OR_RETURN(ClientConfig cfg, ResolveConfig(f.config, f.config_file));
  return Client::Connect(cfg);
}

namespace {

std::string Counts(const v1::Job& job) {
  std::ostringstream s;
  int total = 0;
  for (const auto& [state, n] : job.task_counts()) total += static_cast<int>(n);
  s << jobs::StateName(job.state()) << " (";
  const char* sep = "";
  for (const char* st : {"succeeded", "running", "assigned", "queued", "lost", "failed", "cancelled"}) {
    auto it = job.task_counts().find(st);
    if (it == job.task_counts().end() || it->second == 0) continue;
    s << sep << it->second << "/" << total << " " << st;
    sep = ", ";
  }
  s << ")";
  return s.str();
}

const v1::Attempt* LastAttempt(const v1::Task& t) {
  return t.attempts_size() ? &t.attempts(t.attempts_size() - 1) : nullptr;
}

// The first 12 hex digits of a "sha256:<hex>" digest (what people compare).
std::string ShortDigest(const std::string& digest) {
  const size_t colon = digest.find(':');
  return colon == std::string::npos ? digest : digest.substr(colon + 1, 12);
}

// One line of an attempt's provenance; the whole record is in `--json`.
std::string ProvenanceLine(const v1::Provenance& p) {
  std::ostringstream s;
  s << "image " << ShortDigest(p.image_config_digest()) << ", spec " << ShortDigest(p.job_spec_digest()) << ", "
    << (p.runtime().empty() ? "?" : p.runtime());
  if (!p.runtime_version().empty()) s << " (" << p.runtime_version() << ")";
  if (!p.driver().empty()) s << " via " << p.driver();
  s << ", kernel " << (p.kernel_release().empty() ? "?" : p.kernel_release()) << ", node key "
    << ShortDigest(p.node_key_fingerprint());
  if (!p.gpu_driver_version().empty()) s << ", gpu driver " << p.gpu_driver_version() << " cuda " << p.cuda_version();
  s << ", env";
  if (p.env_names().empty()) s << " none";
  for (const auto& name : p.env_names()) s << " " << name;
  return s.str();
}

// An array job's progress under its first line: a bar on a terminal, the
// same figures as text otherwise (--json prints the job alone).
void PrintArrayProgress(const v1::Job& job) {
  if (job.tasks_size() < 2) return;
  const JobTally t = TallyOf(job);
  if (isatty(STDOUT_FILENO) == 1)
    std::cout << "  " << Bar(t.ended, t.total, 30) << " ";
  else
    std::cout << "  progress: ";
  std::cout << JobProgressText(job) << "\n";
}

void PrintTask(const v1::Task& t) {
  const v1::Attempt* a = LastAttempt(t);
  std::cout << "  task " << t.index() << ": " << jobs::StateName(t.state());
  if (a) {
    std::cout << " on " << a->node_id();
    if (jobs::IsTerminal(a->state()) && a->state() != v1::CANCELLED) std::cout << " exit " << a->exit_code();
    if (t.attempts_size() > 1) std::cout << " (attempt " << t.attempts_size() << ")";
  }
  if (t.failure_reason() != v1::FAILURE_REASON_UNSPECIFIED) {
    std::cout << " [" << jobs::ReasonName(t.failure_reason()) << "]";
  }
  if (!t.message().empty()) std::cout << ": " << t.message();
  std::cout << "\n";
  if (a && t.state() == v1::QUEUED && jobs::IsTerminal(a->state()) && !a->message().empty()) {
    // Back in the queue after a node refused or lost it: why, in the node's words.
    std::cout << "    last attempt on " << a->node_id() << ": " << a->message() << "\n";
  }
  if (!t.verification().empty()) {
    // Each run's part in the verdict (docs/verification.md).
    for (const auto& run : t.attempts()) {
      if (run.vote().empty()) continue;
      std::cout << "    run " << run.id() << " on " << run.node_id() << ": " << run.vote()
                << (run.vote_reason().empty() ? "" : " (" + run.vote_reason() + ")") << "\n";
    }
  }
  if (a && a->has_provenance()) std::cout << "    ran with " << ProvenanceLine(a->provenance()) << "\n";
  if (a && a->placement().price_per_hour() > 0) {
    std::printf("    %s at %.4f/h (%s; ask %.4f/GPU-h, bid %.4f); cost so far %.4f\n", a->placement().policy().c_str(),
                a->placement().price_per_hour(), a->placement().pricing_rule().c_str(),
                a->placement().ask_per_gpu_hour(), a->placement().bid_per_gpu_hour(), t.cost());
  }
  if (t.has_checkpoint() && t.checkpoint().files_size() > 0) {
    std::printf("    checkpoint: %d file(s) from attempt %s (epoch %llu); work redone %.1f s\n",
                t.checkpoint().files_size(), t.checkpoint().attempt_id().c_str(),
                static_cast<unsigned long long>(t.checkpoint().lease_epoch()), t.work_redone_ms() / 1000.0);
  }
  if (t.logs_dropped_bytes() > 0) {
    std::printf("    log: %llu byte(s) of output dropped past the coordinator's log cap (first and last part kept)\n",
                static_cast<unsigned long long>(t.logs_dropped_bytes()));
  }
  std::fflush(stdout);
}

// The job's first line, progress, summary (job_view.h), then the tasks the
// coordinator selected for `filter` (ReadJob); a large job lists none unless asked.
void PrintJob(const v1::Job& job, const TaskFilter& filter) {
  std::cout << "job " << job.id() << " " << job.spec().name() << ": " << Counts(job) << "\n";
  PrintArrayProgress(job);
  const v1::RegistryImage& pulled = job.spec().registry_image();
  if (!pulled.requested().empty() && pulled.requested() != job.spec().image()) {
    std::cout << "  image " << pulled.requested() << " resolved at submit to " << job.spec().image() << "\n";
  }
  const uint32_t total = job.summary().tasks();
  if (total > 1)
    for (const std::string& line : SummaryLines(job.summary())) std::cout << "  " << line << "\n";
  if (total > static_cast<uint32_t>(kListAllTasksUpTo) && !filter.asked) {
    std::cout << "  (" << total
              << " tasks: list some with --tasks 3,7-9, --state failed, --limit N, or all with --all)\n";
    return;
  }
  for (const v1::Task& t : job.tasks()) PrintTask(t);
  const uint32_t listed = static_cast<uint32_t>(job.tasks_size());
  if (job.tasks_matched() > listed) {
    std::cout << "  ... " << job.tasks_matched() - listed << " more task(s) match (--limit N or --all to list them)\n";
  }
}

// The job with the tasks `filter` lists, read from the coordinator a page at
// a time; a filter nobody asked for reads the first kListAllTasksUpTo (all
// of a small job). With `json` and no filter, the whole job, every task, as
// scripts reading `status --json` always had it.
Result<v1::Job> ReadJob(Client* client, const std::string& job_id, const TaskFilter& filter, bool json) {
  v1::Job job;
  if (json && !filter.asked) {
    v1::GetJobRequest req;
    req.set_job_id(job_id);
    auto ctx = client->Context();
    IG_RETURN_IF_ERROR(FromGrpc(client->stub()->GetJob(ctx.get(), req, &job)));
    return job;
  }
  const uint32_t want =
      !filter.asked ? kListAllTasksUpTo : (filter.limit == 0 ? UINT32_MAX : static_cast<uint32_t>(filter.limit));
  uint32_t offset = 0;
  while (true) {
    v1::Job page;
    const uint32_t size = std::min<uint32_t>(want - offset, jobs::kMaxTaskPage);
    auto ctx = client->Context();
    IG_RETURN_IF_ERROR(FromGrpc(client->stub()->GetJob(ctx.get(), PageRequest(job_id, filter, offset, size), &page)));
    const uint32_t got = static_cast<uint32_t>(page.tasks_size());
    if (offset == 0) {
      job = std::move(page);
    } else {
      for (auto& t : *page.mutable_tasks()) *job.add_tasks() = std::move(t);
      job.set_tasks_matched(page.tasks_matched());
    }
    offset += got;
    if (got == 0 || offset >= want || offset >= job.tasks_matched()) return job;
  }
}

// Streams job updates until it ends, showing its progress on stderr (a bar
// on a terminal, a line per change otherwise, nothing with --json).
Result<v1::Job> WaitJob(Client* client, const std::string& job_id, bool json) {
  v1::GetJobRequest req;  // the summary alone: a 10,000-task job's updates stay small
  req.set_job_id(job_id);
  req.set_paged(true);
  auto ctx = client->Context(0);
  auto reader = client->stub()->WatchJob(ctx.get(), req);
  ProgressDisplay progress(std::cerr, StderrProgressStyle(json), ProgressDisplay::LineEvery::kChange);
  v1::Job job;
  v1::Job last;
  while (reader->Read(&job)) {
    last = job;
    const JobTally t = TallyOf(job);
    progress.Update(t.ended, t.total, "job " + job_id + ": " + Counts(job));
  }
  progress.Finish();
  IG_RETURN_IF_ERROR(FromGrpc(reader->Finish()));
  return last;
}

int JobExit(const v1::Job& job) { return job.state() == v1::SUCCEEDED ? 0 : 1; }

// The filter `status` lists tasks by; InvalidArgument for a malformed selection.
Result<TaskFilter> FilterOf(const ShowFlags& show) {
  TaskFilter filter;
  if (!show.tasks.indices.empty()) {
    IG_ASSIGN_OR_RETURN(filter.tasks, jobs::ParseTaskRanges(show.tasks.indices));
  }
  if (!show.tasks.states.empty()) {
    IG_ASSIGN_OR_RETURN(filter.states, jobs::ParseTaskStates(show.tasks.states));
  }
  if (show.limit < 0) return Status::InvalidArgument("--limit must be 0 or more");
  filter.limit = show.all ? 0 : (show.limit > 0 ? show.limit : kDefaultTaskLimit);
  filter.asked = !show.tasks.indices.empty() || !show.tasks.states.empty() || show.limit > 0 || show.all;
  return filter;
}

}  // namespace

int Validate(const CommonFlags& f, const std::string& path) {
  if (auto workflow = IsWorkflowFile(path); workflow.ok() && *workflow) return WorkflowValidate(f, path);
  // A `dir:` input is packed to learn its digest, and not uploaded.
  auto spec = manifest::LoadManifestFile(path, DirectoryDigest);
  if (!spec.ok()) return Fail(spec.status());
  if (f.json)
    PrintJson(*spec);
  else
    std::cout << path << ": ok\n";
  return 0;
}

int Submit(const CommonFlags& f, const std::string& path, bool wait) {
  if (auto workflow = IsWorkflowFile(path); workflow.ok() && *workflow) return WorkflowSubmit(f, path, wait);
  // Connected at the first `dir:` input (uploaded while the manifest is read), else after it.
  std::optional<Result<std::unique_ptr<Client>>> opened;
  auto connect = [&]() -> Result<Client*> {
    if (!opened) opened.emplace(Open(f));
    if (!opened->ok()) return opened->status();
    return (*opened)->get();
  };
  auto spec = manifest::LoadManifestFile(path, UploadingDirResolver(connect));
  if (!spec.ok()) return Fail(spec.status());
  if (auto connected = connect(); !connected.ok()) return Fail(connected.status());
  auto& client = *opened;
  v1::SubmitJobRequest req;
  *req.mutable_spec() = *spec;
  v1::SubmitJobResponse resp;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->SubmitJob(ctx.get(), req, &resp));
  if (!st.ok()) return Fail(st);
  if (!wait) {
    if (f.json)
      PrintJson(resp.job());
    else
      std::cout << resp.job().id() << "\n";
    return 0;
  }
  if (!f.json) std::cerr << "submitted " << resp.job().id() << "\n";
  auto ended = WaitJob(client->get(), resp.job().id(), f.json);
  if (!ended.ok()) return Fail(ended.status());
  auto job = ReadJob(client->get(), resp.job().id(), TaskFilter{}, f.json);
  if (!job.ok()) return Fail(job.status());
  if (f.json)
    PrintJson(*job);
  else
    PrintJob(*job, TaskFilter{});
  return JobExit(*job);
}

int Explain(const CommonFlags& f, const std::string& job_id) {
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::GetJobRequest req;
  req.set_job_id(job_id);
  v1::ExplainJobResponse resp;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->ExplainJob(ctx.get(), req, &resp));
  if (!st.ok()) return Fail(st);
  if (f.json) {
    PrintJson(resp);
    return 0;
  }
  if (resp.tasks_size() == 0) std::cout << "job " << job_id << " has no queued tasks: nothing waits\n";
  // Tasks with the same reason are one group: 9,812 identical explanations say nothing more than one.
  for (const std::string& line : GroupedExplanation(resp)) std::cout << line << "\n";
  return 0;
}

int Market(const CommonFlags& f) {
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::MarketResponse resp;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->GetMarket(ctx.get(), v1::GetMarketRequest(), &resp));
  if (!st.ok()) return Fail(st);
  if (f.json)
    PrintJson(resp);
  else
    std::cout << "pricing rule: " << resp.pricing_rule() << "\n" << resp.text();
  return 0;
}

int Status_(const CommonFlags& f, const std::string& job_id, bool wait, const ShowFlags& show) {
  if (IsWorkflowId(job_id)) return WorkflowStatus(f, job_id, wait);
  Result<TaskFilter> filter = FilterOf(show);
  if (!filter.ok()) return Fail(filter.status());
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  if (wait) {
    auto ended = WaitJob(client->get(), job_id, f.json);
    if (!ended.ok()) return Fail(ended.status());
  }
  auto job = ReadJob(client->get(), job_id, *filter, f.json);
  if (!job.ok()) return Fail(job.status());
  if (f.json)
    PrintJson(*job);
  else
    PrintJob(*job, *filter);
  return wait ? JobExit(*job) : 0;
}

int Jobs(const CommonFlags& f) {
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::ListJobsResponse resp;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->ListJobs(ctx.get(), v1::ListJobsRequest(), &resp));
  if (!st.ok()) return Fail(st);
  if (f.json) {
    PrintJson(resp);
    return 0;
  }
  std::vector<std::vector<std::string>> rows{{"JOB", "NAME", "STATE", "TASKS"}};
  for (const auto& j : resp.jobs()) {
    std::string counts = Counts(j);  // "running (3/10 succeeded, ...)": the state, then the counts
    const size_t paren = counts.find(" (");
    rows.push_back({j.id(), j.spec().name(), jobs::StateName(j.state()),
                    paren == std::string::npos ? "" : counts.substr(paren + 2, counts.size() - paren - 3)});
  }
  std::cout << FormatTable(rows);
  return 0;
}

namespace {

std::string Age(int64_t ms) {
  if (ms <= 0) return "never";
  int64_t age = (SystemClock::Get()->NowMs() - ms) / 1000;
  return std::to_string(age) + "s ago";
}

void PrintDevice(const v1::GpuDevice& d, bool accounted) {
  const uint64_t available = accounted ? d.allocatable_memory_bytes() : d.memory_free_bytes();
  std::cout << "    gpu" << d.index() << "  " << d.name() << "  VRAM " << FormatGiB(available) << " of "
            << FormatGiB(d.memory_total_bytes()) << " " << (accounted ? "allocatable" : "free") << "  cc "
            << d.compute_capability() << "  " << (d.measured() ? "measured" : "unmeasured")
            << (d.simulated() ? "  SIMULATED" : "") << "\n";
  if (!d.unavailable_reason().empty()) std::cout << "      not offered: " << d.unavailable_reason() << "\n";
}

}  // namespace

void PrintAdvertisement(const v1::Advertisement& ad) {
  const auto& inv = ad.inventory();
  std::cout << "cpu: " << inv.cpu().model() << ", " << inv.cpu().logical_cores() << " logical cores";
  if (inv.cpu().flags_size()) {
    std::cout << " (";
    for (int i = 0; i < inv.cpu().flags_size(); ++i) std::cout << (i ? " " : "") << inv.cpu().flags(i);
    std::cout << ")";
  }
  std::cout << "\nmemory: " << FormatGiB(inv.memory_total_bytes()) << " total, "
            << FormatGiB(inv.memory_available_bytes()) << " available\n";
  for (const auto& d : inv.disks()) {
    std::cout << "disk " << d.path() << ": " << FormatGiB(d.free_bytes()) << " of " << FormatGiB(d.total_bytes())
              << " free\n";
  }
  std::cout << "runtimes:";
  for (const auto& r : ad.capacity().runtimes()) std::cout << " " << r;
  const auto& e = ad.capacity().enforcement();
  std::cout << "\nenforceable limits: memory=" << (e.memory().empty() ? "none" : e.memory())
            << " pids=" << (e.pids().empty() ? "none" : e.pids()) << " cpu=" << (e.cpu().empty() ? "none" : e.cpu())
            << " (cgroup " << e.cgroup_version() << ")\n";
  if (inv.gpus().devices_size() == 0) {
    std::cout << "no GPU: " << inv.gpus().reason() << "\n";
  } else {
    if (!inv.gpus().reason().empty()) std::cout << "real GPUs: none (" << inv.gpus().reason() << ")\n";
    for (const auto& d : inv.gpus().devices()) PrintDevice(d, true);
  }
}

namespace {

// One row of `nodes`: what a person scanning a fleet compares.
std::vector<std::string> NodeRow(const v1::Node& n) {
  char cpu[48], mem[48], rel[16];
  std::snprintf(cpu, sizeof cpu, "%g/%u", n.cpu_allocated(), n.info().cpu_cores());
  std::snprintf(mem, sizeof mem, "%llu/%llu MiB", static_cast<unsigned long long>(n.memory_allocated() >> 20),
                static_cast<unsigned long long>(n.info().memory_bytes() >> 20));
  std::snprintf(rel, sizeof rel, "%.2f", n.reliability());
  int simulated = 0;
  for (const auto& g : n.gpus()) simulated += g.simulated() ? 1 : 0;
  std::string gpus = std::to_string(n.gpus_size());
  if (simulated > 0) gpus += " (" + std::to_string(simulated) + " SIMULATED)";
  return {n.id(),
          n.name(),
          n.state(),
          n.schedulable() ? "yes" : "no: " + n.unschedulable_reason(),
          cpu,
          mem,
          gpus,
          rel,
          Age(n.last_heartbeat_ms())};
}

}  // namespace

int Nodes(const CommonFlags& f, bool details) {
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::ListNodesResponse resp;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->ListNodes(ctx.get(), v1::ListNodesRequest(), &resp));
  if (!st.ok()) return Fail(st);
  if (f.json) {
    PrintJson(resp);
    return 0;
  }
  if (!details) {
    std::vector<std::vector<std::string>> rows{
        {"NODE", "NAME", "STATE", "SCHEDULABLE", "CPU", "MEMORY", "GPUS", "RELIABILITY", "HEARTBEAT"}};
    for (const auto& n : resp.nodes()) rows.push_back(NodeRow(n));
    std::cout << FormatTable(rows);
    if (resp.nodes_size() == 0) std::cout << "(no node has joined)\n";
    return 0;
  }
  for (const auto& n : resp.nodes()) {
    const auto& ad = n.advertisement();
    std::string runtimes;
    for (const auto& r : n.info().runtimes()) runtimes += (runtimes.empty() ? "" : ",") + r;
    std::cout << n.id() << "  " << n.name() << "  region " << (ad.region().empty() ? "-" : ad.region()) << "  "
              << n.state() << "  " << (n.schedulable() ? "schedulable" : "not schedulable: " + n.unschedulable_reason())
              << "\n    heartbeat " << Age(n.last_heartbeat_ms()) << "  cpu " << n.cpu_allocated() << "/"
              << n.info().cpu_cores() << " allocated";
    if (n.measurement().passed()) std::cout << " (measured " << n.measurement().cpu_score() / 1e6 << " M rounds/s)";
    std::cout << "  mem " << (n.memory_allocated() >> 20) << "/" << (n.info().memory_bytes() >> 20) << " MiB  runtimes "
              << runtimes << "  limits memory=" << n.info().enforcement().memory()
              << " cpu=" << (n.info().enforcement().cpu().empty() ? "none" : n.info().enforcement().cpu()) << "\n";
    std::printf("    reliability %.2f (%s)  trust tier %u\n", n.reliability(), n.reliability_detail().c_str(),
                n.trust_tier());
    std::printf("    handshake: %s\n", FormatHandshake(n.reliability_components()).c_str());
    if (std::string pause = FormatNodePause(n.pause(), SystemClock::Get()->NowMs()); !pause.empty()) {
      std::printf("    owner pause: %s\n", pause.c_str());
    }
    std::fflush(stdout);
    if (ad.asks_size()) {
      std::cout << "    asks:";
      for (const auto& a : ad.asks()) std::cout << " " << a.device_class() << "=" << a.per_hour() << "/h";
      std::cout << "\n";
    }
    for (const auto& d : n.gpus()) PrintDevice(d, true);
  }
  return 0;
}

int Drain(const CommonFlags& f, const std::string& node_id, const std::string& deadline, bool undo) {
  v1::DrainNodeRequest req;
  req.set_node_id(node_id);
  req.set_undo(undo);
  if (!deadline.empty()) {
    auto secs = manifest::ParseDurationSeconds(deadline);
    if (!secs.ok()) return Fail(Status::InvalidArgument("--deadline: " + secs.status().message()));
    req.set_deadline_seconds(*secs);
  }
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::Node node;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->DrainNode(ctx.get(), req, &node));
  if (!st.ok()) return Fail(st);
  if (f.json)
    PrintJson(node);
  else
    std::cout << node.id() << "  " << node.name() << "  " << (undo ? "takes work again" : "draining") << "\n";
  return 0;
}

int Logs(const CommonFlags& f, const std::string& job_id, bool follow, const ShowFlags& show) {
  if (!show.stream.empty() && show.stream != "stdout" && show.stream != "stderr") {
    return Fail(Status::InvalidArgument("--stream must be stdout or stderr, not '" + show.stream + "'"));
  }
  std::vector<uint32_t> tasks;
  if (!show.tasks.indices.empty()) {
    auto parsed = jobs::ParseTaskRanges(show.tasks.indices);
    if (!parsed.ok()) return Fail(parsed.status());
    tasks = *parsed;
  }
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  // Lines name their task when several tasks' output is shown.
  bool several = tasks.size() > 1;
  if (tasks.empty()) {
    v1::GetJobRequest get;  // the summary alone: how many tasks the job has
    get.set_job_id(job_id);
    get.set_paged(true);
    v1::Job job;
    auto ctx = (*client)->Context();
    Status st = FromGrpc((*client)->stub()->GetJob(ctx.get(), get, &job));
    if (!st.ok()) return Fail(st);
    several = job.summary().tasks() > 1;
  }
  v1::StreamLogsRequest req;
  req.set_job_id(job_id);
  req.set_follow(follow);
  auto ctx = (*client)->Context(0);
  auto reader = (*client)->stub()->StreamLogs(ctx.get(), req);
  LogLines lines(std::set<uint32_t>(tasks.begin(), tasks.end()), show.stream, several);
  const auto print = [](const std::vector<LogLines::Out>& out) {
    for (const auto& o : out) {
      std::ostream& os = o.stream == "stderr" ? std::cerr : std::cout;
      os << o.text;
      os.flush();
    }
  };
  v1::LogChunk chunk;
  while (reader->Read(&chunk)) {
    if (f.json) {
      if (lines.Shows(chunk)) PrintJson(chunk, true);
    } else {
      print(lines.Add(chunk));
    }
  }
  print(lines.Finish());
  Status st = FromGrpc(reader->Finish());
  return st.ok() ? 0 : Fail(st);
}

namespace {

// `attempt`'s provenance as JSON at `path`; nothing for an attempt that has none.
Status WriteProvenance(const v1::Attempt& attempt, const std::string& path) {
  if (!attempt.has_provenance()) return Status::Ok();
  std::string json;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  if (!google::protobuf::util::MessageToJsonString(attempt.provenance(), &json, opts).ok()) {
    return Status::Internal("cannot encode the provenance of attempt " + attempt.id());
  }
  IG_RETURN_IF_ERROR(MakeDirs(std::filesystem::path(path).parent_path().string()));
  return WriteFileAtomic(path, json, 0644).WithContext("writing " + path);
}

}  // namespace

int Fetch(const CommonFlags& f, const std::string& job_id, const std::string& dir) {
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::GetJobRequest req;
  req.set_job_id(job_id);
  v1::Job job;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->GetJob(ctx.get(), req, &job));
  if (!st.ok()) return Fail(st);
  int files = 0;
  uint64_t total_bytes = 0, fetched_bytes = 0;
  for (const auto& t : job.tasks()) {
    for (const auto& a : t.attempts()) {
      if (a.state() != v1::SUCCEEDED) continue;
      for (const auto& o : a.outputs()) total_bytes += o.size();
    }
  }
  ProgressDisplay progress(std::cerr, StderrProgressStyle(f.json), ProgressDisplay::LineEvery::kTenth);
  const std::string what = "fetching " + job_id;
  for (const auto& t : job.tasks()) {
    for (const auto& a : t.attempts()) {
      // One accepted result per task (verified jobs may have several agreeing runs).
      if (!jobs::IsAcceptedResult(a) || t.state() != v1::SUCCEEDED) continue;
      std::string task_dir = dir + "/task-" + std::to_string(t.index());
      // The results keep where they came from: beside the task's directory,
      // so no output of the job can collide with it.
      if (Status p = WriteProvenance(a, task_dir + ".provenance.json"); !p.ok()) return Fail(p);
      if (!f.json && a.has_provenance()) {
        progress.Clear();
        std::cout << "task " << t.index() << ": attempt " << a.id() << " on " << a.node_id() << ", "
                  << ProvenanceLine(a.provenance()) << " (" << task_dir << ".provenance.json)\n";
      }
      for (const auto& o : a.outputs()) {
        std::filesystem::path rel(o.path());
        // Paths come from an untrusted agent: never write outside DIR.
        if (rel.is_absolute() || rel.empty() || o.path().find("..") != std::string::npos) {
          return Fail(Status::DataLoss("refusing output path '" + o.path() + "' of task " + std::to_string(t.index())));
        }
        std::string target = task_dir + "/" + o.path();
        if (Status m = MakeDirs(std::filesystem::path(target).parent_path().string()); !m.ok()) return Fail(m);
        const uint64_t before = fetched_bytes;
        Status d = (*client)->DownloadTo(o.digest(), target, [&](uint64_t got) {
          progress.Update(before + got, total_bytes, TransferText(what, before + got, total_bytes));
        });
        if (!d.ok()) {
          progress.Finish();
          return Fail(d);
        }
        fetched_bytes = before + o.size();
        ++files;
        progress.Clear();  // the file's line goes where the bar was; the next chunk redraws it
        if (!f.json) std::cout << target << "  " << o.digest() << "  " << o.size() << " bytes, verified" << std::endl;
      }
      break;
    }
  }
  progress.Finish();
  if (f.json) PrintJson(job);
  if (!f.json) std::cerr << files << " file(s) fetched into " << dir << "\n";
  return 0;
}

int Cancel(const CommonFlags& f, const std::string& job_id, const TaskFlags& tasks) {
  if (IsWorkflowId(job_id) && tasks.indices.empty() && tasks.states.empty()) return WorkflowCancel(f, job_id);
  v1::CancelJobRequest req;
  req.set_job_id(job_id);
  if (!tasks.indices.empty()) {
    auto indices = jobs::ParseTaskRanges(tasks.indices);
    if (!indices.ok()) return Fail(indices.status().WithContext("--tasks"));
    for (uint32_t i : *indices) req.add_task_indices(i);
  }
  if (!tasks.states.empty()) {
    auto states = jobs::ParseTaskStates(tasks.states);
    if (!states.ok()) return Fail(states.status().WithContext("--state"));
    for (v1::TaskState s : *states) req.add_states(s);
  }
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::Job job;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->CancelJob(ctx.get(), req, &job));
  if (!st.ok()) return Fail(st);
  if (f.json)
    PrintJson(job);
  else
    std::cout << "job " << job.id() << ": " << Counts(job) << "\n";
  return 0;
}

int ResolveLost(const CommonFlags& f, const std::string& job_id, bool retry) {
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::ResolveLostRequest req;
  req.set_job_id(job_id);
  req.set_retry(retry);
  v1::Job job;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->ResolveLost(ctx.get(), req, &job));
  if (!st.ok()) return Fail(st);
  if (f.json)
    PrintJson(job);
  else
    std::cout << "job " << job.id() << ": " << Counts(job) << "\n";
  return 0;
}

int Retry(const CommonFlags& f, const std::string& job_id, const TaskFlags& tasks, bool failed) {
  v1::RetryJobRequest req;
  req.set_job_id(job_id);
  req.set_failed(failed);
  if (!tasks.indices.empty()) {
    auto indices = jobs::ParseTaskRanges(tasks.indices);
    if (!indices.ok()) return Fail(indices.status().WithContext("--tasks"));
    for (uint32_t i : *indices) req.add_task_indices(i);
  }
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::Job job;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->RetryJob(ctx.get(), req, &job));
  if (!st.ok()) return Fail(st);
  if (f.json)
    PrintJson(job);
  else
    std::cout << "job " << job.id() << ": " << Counts(job) << "\n";
  return 0;
}

void PrintPushedImage(const CommonFlags& f, const v1::PushImageResponse& pushed, const std::string& reference) {
  if (f.json)
    PrintJson(pushed);
  else
    std::cout << reference << "\n";
}

int ImagePush(const CommonFlags& f, const std::string& archive, bool make_public, const std::string& sign_key) {
  std::optional<image::ImageSigningKey> key;
  if (!sign_key.empty()) {
    auto loaded = image::LoadSigningKeyFile(sign_key);
    if (!loaded.ok()) return Fail(loaded.status().WithContext("--sign-key"));
    key = std::move(*loaded);
  }
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  auto pushed = PushImageArchive(**client, archive, make_public, f.json);
  if (!pushed.ok()) return Fail(pushed.status());
  if (key) {
    auto signed_by = SignImage(**client, pushed->image(), *key);
    // The image is pushed either way; the message says how to sign it again.
    if (!signed_by.ok()) return Fail(signed_by.status().WithContext("pushed " + pushed->image() + " but not signed"));
    std::cerr << DescribeSignature(*signed_by) << "\n";
  }
  PrintPushedImage(f, *pushed, pushed->image());
  return 0;
}

int ArtifactPush(const CommonFlags& f, const std::string& file, bool make_public) {
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  // A directory travels as a tar, unpacked read-only where a job names it with `unpack: true`.
  std::error_code ec;
  auto ref = std::filesystem::is_directory(file, ec) ? PushDirectory(**client, file, make_public)
                                                     : (*client)->UploadFile(file, "input", make_public);
  if (!ref.ok()) return Fail(ref.status());
  if (f.json)
    PrintJson(*ref);
  else
    std::cout << ref->digest() << "\n";
  return 0;
}

}  // namespace idlegrid::cli
