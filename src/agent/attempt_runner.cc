#include "agent/attempt_runner.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include "agent/gpu_sampler.h"
#include "agent/local_policy.h"
#include "agent/log_shipper.h"
#include "agent/output_watch.h"
#include "capacity/disk_floor.h"
#include "common/failpoint.h"
#include "common/fs.h"
#include "discovery/host.h"
#include "image/dir_archive.h"
#include "receipt/receipt.h"
#include "runtime/job_files.h"
#include "runtime/admission.h"
#include "runtime/enforcement_probe.h"

namespace idlegrid::agent {
namespace {

// capacity/disk_floor.h's reason when the filesystem holding `dir` is full,
// counting `own_bytes` (the attempt's own files, about to go) as free.
std::optional<std::string> DiskFull(const std::string& dir, uint64_t own_bytes = 0) {
  auto disk = discovery::ReadDisk(dir);
  if (!disk.ok()) return std::nullopt;  // unreadable: the run's own error says what went wrong
  std::string why = capacity::DiskFullReason(disk->free_bytes() + own_bytes, disk->total_bytes(), dir);
  if (why.empty()) return std::nullopt;
  return why;
}

}  // namespace

void AttemptRunner::Run(const v1::Assignment& a) {
  const std::string& id = a.attempt_id();
  if (auto refusal = Admit(a)) return ReportOrLog(*refusal);
  CapacityHold hold(env_.host, id);
  // Failpoints (docs/reliability.md) name the step a crash interrupts.
  (void)IG_FAILPOINT("agent.attempt.before_accept");
  if (Status st = env_.reporter->Report(AttemptEvent(id, v1::ACCEPTED)); !st.ok()) {
    spdlog::info("attempt {} dropped: {}", id, st.message());
    return;
  }

  auto image_id = env_.images->Ensure(a);
  if (!image_id.ok()) return Fail(id, v1::PLATFORM_FAILURE, image_id.status(), hold);
  // Pinned while the attempt runs: the cache evicts only images nobody uses.
  struct ImagePin {
    ImageSource* images;
    const v1::Assignment& a;
    ~ImagePin() { images->Release(a); }
  } pin{env_.images, a};
  // The node's cached inputs it reads stay until it is over.
  struct InputPin {
    InputSource* inputs;
    const std::string& id;
    ~InputPin() {
      if (inputs != nullptr) inputs->Release(id);
    }
  } input_pin{env_.inputs, id};
  // Declared after the hold: on a failure the scratch goes before the hold does.
  ScratchDir scratch(env_.attempts_dir + "/" + id);
  auto prepared = Prepare(a, *image_id, scratch);
  if (!prepared.ok()) return Fail(id, v1::PLATFORM_FAILURE, prepared.status(), hold, &scratch);
  if (env_.host->IsCancelled(id)) return ReportOrLog(AttemptEvent(id, v1::STOPPED));

  (void)IG_FAILPOINT("agent.attempt.before_start");
  RunFacts facts = RunContainer(a, *prepared);
  const std::vector<std::string> files = CollectAfterRun(id, *prepared, facts);
  const Outcome outcome = DecideOutcome(facts);
  if (outcome.event == v1::ERRORED) {
    return Fail(id, outcome.reason, Status::Internal(outcome.message), hold, &scratch);
  }
  v1::ReportAttemptRequest done = OutcomeReport(id, outcome);
  if (done.event() == v1::EXITED) *done.mutable_provenance() = prepared->provenance;
  (void)IG_FAILPOINT("agent.attempt.before_upload");
  if (outcome.collect_outputs) {
    if (Status st = CollectOutputs(prepared->out_dir, files, done); !st.ok()) {
      return Fail(id, v1::PLATFORM_FAILURE, st, hold, &scratch);
    }
  }
  if (done.event() == v1::EXITED) AttachReceiptStatement(a, *prepared, facts, done);
  // The container is gone: free its disk and capacity before the
  // coordinator, which frees them on this report, sends the next task here.
  scratch.Remove();
  hold.Release();
  (void)IG_FAILPOINT("agent.attempt.before_report");
  Status st = env_.reporter->Report(done);
  spdlog::info("attempt {} {} (exit {}){}", id, v1::AttemptEvent_Name(done.event()), done.exit_code(),
               st.ok() ? "" : "; report refused: " + st.message());
}

std::optional<v1::ReportAttemptRequest> AttemptRunner::Admit(const v1::Assignment& a) {
  const std::string& id = a.attempt_id();
  const v1::JobSpec& spec = a.spec();
  Status admit = env_.host->CheckLocalPolicy(a);
  if (admit.ok()) admit = env_.host->CheckImageSignatures(a);
  if (admit.ok()) {
    admit = runtime::CheckAdmission(spec.resources(), spec.runtime(), env_.runtime->Enforcement(),
                                    env_.runtime->Runtimes());
  }
  if (!admit.ok()) {
    spdlog::warn("attempt {} rejected: {}", id, admit.message());
    auto r = AttemptEvent(id, v1::REJECTED);
    r.set_message(admit.message());
    return r;
  }
  // A full disk takes no work: the coordinator learns it from the next
  // advertisement; until then, what reaches the node goes elsewhere.
  if (auto full = DiskFull(env_.attempts_dir)) {
    spdlog::warn("attempt {} refused: {}", id, *full);
    auto r = AttemptEvent(id, v1::REJECTED);
    r.set_failure_reason(v1::NODE_BUSY);
    r.set_message("the node's " + *full);
    return r;
  }
  // Never more than this node advertises: the hold is taken before the
  // acknowledgement, so the coordinator learns at once if there is no room.
  if (Status room = env_.host->ReserveCapacity(a); !room.ok()) {
    spdlog::warn("attempt {} refused, node busy: {}", id, room.message());
    auto r = AttemptEvent(id, v1::REJECTED);
    r.set_failure_reason(v1::NODE_BUSY);
    r.set_message(room.message());
    return r;
  }
  return std::nullopt;
}

Result<AttemptRunner::PreparedRun> AttemptRunner::Prepare(const v1::Assignment& a, const std::string& image_id,
                                                          const ScratchDir& scratch) {
  PreparedRun prepared;
  auto layout = PrepareFiles(a, scratch, prepared.checkpoint);
  if (!layout.ok()) return layout.status();
  auto gpus = PrepareGpus(a);
  if (!gpus.ok()) return gpus.status();
  layout->container_name = env_.host->ContainerName(a.attempt_id());
  layout->image_id = image_id;
  layout->gpu_uuids = std::move(*gpus);
  layout->host_user_processes = runtime::CountUserProcesses(::getuid());
  prepared.spec = BuildRunSpec(a, *layout);
  const runtime::RuntimeChoice choice =
      runtime::ChooseRuntime(a.spec().runtime(), a.untrusted_tenant(), env_.gvisor_for_tenants,
                             !prepared.spec.gpu_uuids.empty(), env_.runtime->Enforcement());
  if (choice.refused) return Status::FailedPrecondition(choice.why);
  if (!choice.why.empty()) spdlog::info("attempt {}: {}", a.attempt_id(), choice.why);
  prepared.spec.runtime = choice.runtime;
  prepared.spec.nvproxy = choice.nvproxy;
  prepared.out_dir = layout->out_dir;
  prepared.writable_dirs = {layout->out_dir};
  if (!layout->checkpoint_dir.empty()) prepared.writable_dirs.push_back(layout->checkpoint_dir);
  // HOME counts in the disk total like the outputs (and is taken back from
  // the job user with them, so the scratch can be removed).
  prepared.writable_dirs.push_back(layout->home_dir);
  prepared.output_cap = ResolveOutputCap(a.spec().resources(), env_.default_output_bytes);
  prepared.provenance = BuildProvenance(a, prepared.spec, env_.runtime->Facts(prepared.spec), env_.host->Facts());
  prepared.provenance.set_gpu_isolation(choice.gpu_isolation);
  return prepared;
}

Result<RunLayout> AttemptRunner::PrepareFiles(const v1::Assignment& a, const ScratchDir& scratch,
                                              std::unique_ptr<CheckpointSync>& checkpoint) {
  const std::string& id = a.attempt_id();
  const v1::JobSpec& spec = a.spec();
  RunLayout layout;
  layout.out_dir = scratch.path() + "/out";
  IG_RETURN_IF_ERROR(MakeDirs(layout.out_dir, 0700));
  // The job runs as a user of its own (runtime/job_sandbox.h); only the
  // agent can enter the scratch directory above these.
  IG_RETURN_IF_ERROR(runtime::OpenForJob({layout.out_dir}));
  // The job's HOME, with its cache directory made: some tools create their
  // cache directory with a plain mkdir, which fails without its parent.
  layout.home_dir = scratch.path() + "/home";
  const std::string cache_dir = layout.home_dir + "/" + kCacheDirName;
  IG_RETURN_IF_ERROR(MakeDirs(cache_dir, 0700));
  IG_RETURN_IF_ERROR(runtime::OpenForJob({layout.home_dir, cache_dir}));
  if (!spec.checkpoint_path().empty()) {
    layout.checkpoint_dir = scratch.path() + "/checkpoint";
    IG_RETURN_IF_ERROR(MakeDirs(layout.checkpoint_dir, 0700));
    IG_RETURN_IF_ERROR(runtime::OpenForJob({layout.checkpoint_dir}));
    ArtifactTransfer* artifacts = env_.artifacts;
    AttemptReporter* reporter = env_.reporter;
    checkpoint = std::make_unique<CheckpointSync>(
        layout.checkpoint_dir,
        [artifacts](const std::string& path, const std::string& rel) { return artifacts->Upload(path, rel); },
        [reporter, id](const std::vector<v1::OutputFile>& files) {
          auto r = AttemptEvent(id, v1::CHECKPOINTED);
          for (const auto& f : files) *r.add_checkpoint() = f;
          return reporter->Report(r);
        });
    if (a.has_restore() && a.restore().files_size() > 0) {
      Status st = checkpoint->Restore(a.restore(), [artifacts](const std::string& digest, const std::string& path) {
        return artifacts->Download(digest, path);
      });
      IG_RETURN_IF_ERROR(st.WithContext("restoring checkpoint of attempt " + a.restore().attempt_id()));
      IG_RETURN_IF_ERROR(runtime::OpenTreeForJob(layout.checkpoint_dir));
      spdlog::info("attempt {} resumes from the checkpoint of attempt {} ({} files)", id, a.restore().attempt_id(),
                   a.restore().files_size());
    }
  }
  for (int i = 0; i < spec.inputs_size(); ++i) {
    const auto& in = spec.inputs(i);
    std::string local = scratch.path() + "/input-" + std::to_string(i);
    IG_RETURN_IF_ERROR(ProvideInput(id, spec, in, local).WithContext("input " + in.path()));
    layout.input_paths.push_back(std::move(local));
  }
  return layout;
}

Status AttemptRunner::ProvideInput(const std::string& attempt_id, const v1::JobSpec& spec, const v1::InputSpec& in,
                                   const std::string& local) {
  // Only public data outlives its attempt on a provider's disk.
  const bool cacheable = spec.data_class().empty() || spec.data_class() == "public";
  if (env_.inputs != nullptr && cacheable) return env_.inputs->Provide(attempt_id, in, local);
  // No node cache: this attempt's own copy, read-only.
  if (!in.unpack()) {
    IG_RETURN_IF_ERROR(env_.artifacts->Download(in.artifact(), local));
    ::chmod(local.c_str(), 0444);
    return Status::Ok();
  }
  const std::string archive = local + ".tar";
  IG_RETURN_IF_ERROR(env_.artifacts->Download(in.artifact(), archive));
  Status st = image::UnpackDirectoryTar(archive, local);
  ::unlink(archive.c_str());
  return st;
}

Result<std::vector<std::string>> AttemptRunner::PrepareGpus(const v1::Assignment& a) {
  if (a.device_uuids_size() == 0) return std::vector<std::string>{};
  auto host_gpus = env_.host->Gpus();
  if (!host_gpus.ok()) return host_gpus.status().WithContext("discovering the assigned GPUs");
  auto real = SelectGpus(a, *host_gpus);
  if (!real.ok()) return real.status();
  const bool has_cdi = std::any_of(env_.cdi_spec_paths.begin(), env_.cdi_spec_paths.end(),
                                   [](const std::string& p) { return PathExists(p); });
  if (!real->empty() && !has_cdi) {
    return Status::FailedPrecondition(
        "no CDI spec for NVIDIA GPUs on this host; run `nvidia-ctk cdi generate "
        "--output=/etc/cdi/nvidia.yaml`");
  }
  return real;
}

RunFacts AttemptRunner::RunContainer(const v1::Assignment& a, PreparedRun& run) {
  const std::string& id = a.attempt_id();
  const v1::JobSpec& spec = a.spec();
  auto sink = [&](const std::string& stream, std::string_view data) { env_.logs->Add(id, stream, data); };
  GpuSampler gpus({run.spec.gpu_uuids, env_.read_gpu_load, env_.gpu_sample_interval});
  auto on_started = [&] {
    run.started_ms = env_.clock->NowMs();
    gpus.Start();
    auto r = AttemptEvent(id, v1::STARTED);
    r.set_runtime(run.spec.runtime);
    *r.mutable_provenance() = run.provenance;
    ReportOrLog(r);
    (void)IG_FAILPOINT("agent.attempt.after_start");  // the container runs on
    if (run.checkpoint) {
      run.checkpoint->Start(std::chrono::seconds(std::max<uint32_t>(1, spec.checkpoint_interval_seconds())));
    }
  };
  runtime::ContainerRuntime* runtime = env_.runtime;
  const std::string& container = run.spec.container_name;
  OutputWatch watch({run.writable_dirs, [runtime, container] { return runtime->LiveWritableDirs(container); },
                     run.output_cap, env_.output_watch_interval,
                     [runtime, container, id](const std::string& why) {
                       spdlog::warn("attempt {} {}", id, why);
                       if (Status st = runtime->Kill(container); !st.ok()) {
                         spdlog::warn("attempt {}: stopping it at its disk cap: {}", id, st.message());
                       }
                     }});
  RunFacts facts;
  facts.exit = env_.runtime->Run(run.spec, sink, std::chrono::seconds(spec.run_timeout_seconds()), on_started);
  run.finished_ms = env_.clock->NowMs();
  gpus.Stop();
  run.gpu_usage = gpus.Usage();
  watch.Stop();
  facts.output_breach = watch.Breach();
  // Every line the job wrote reaches the coordinator before its end does.
  env_.logs->Flush();
  facts.cancelled = env_.host->IsCancelled(id);
  facts.run_timeout_seconds = spec.run_timeout_seconds();
  facts.memory_bytes = spec.resources().memory_bytes();
  return facts;
}

std::vector<std::string> AttemptRunner::CollectAfterRun(const std::string& attempt_id, PreparedRun& run,
                                                        RunFacts& facts) {
  if (run.checkpoint) run.checkpoint->Stop();
  // No process of the job is left: what it wrote becomes the agent's again,
  // so that it can be measured, uploaded and removed whatever modes it has.
  if (Status st = runtime::ReclaimJobFiles(run.writable_dirs); !st.ok()) {
    spdlog::warn("attempt {}: {}", attempt_id, st.message());
  }
  // Judged before anything more leaves the node (the last checkpoint, the
  // outputs), on what is there now, whatever the watcher saw.
  const Result<uint64_t> written = MeasureWritableDirs(run.writable_dirs);
  if (!facts.output_breach) facts.output_breach = OutputCapBreach(written, run.output_cap, OutputCheck::kBeforeUpload);
  // A run that exited non-zero (or whose runtime failed) on a full disk: the
  // node's failure, unless the job's own files are what filled it (it was
  // given that room) or it ended for a reason of its own (timeout, memory).
  const bool own_end = facts.exit.ok() && (facts.exit->timed_out || facts.exit->oom);
  const bool succeeded = facts.exit.ok() && facts.exit->error.empty() && facts.exit->exit_code == 0;
  if (!succeeded && !own_end && !facts.cancelled) {
    facts.disk_full = DiskFull(env_.attempts_dir, written.ok() ? written.value() : 0);
  }
  if (run.checkpoint) {
    if (NeedsFinalCheckpoint(facts)) {
      if (Status st = run.checkpoint->SyncOnce(); !st.ok()) {
        spdlog::warn("final checkpoint of {}: {}", attempt_id, st.message());
      }
    }
  }
  std::vector<std::string> files = RegularFilesUnder(run.out_dir);
  facts.output_files = files.size();
  return files;
}

Status AttemptRunner::CollectOutputs(const std::string& out_dir, const std::vector<std::string>& files,
                                     v1::ReportAttemptRequest& report) {
  for (const auto& rel : files) {
    auto file = env_.artifacts->Upload(out_dir + "/" + rel, rel);
    if (!file.ok()) return file.status();
    *report.add_outputs() = *file;
  }
  return Status::Ok();
}

void AttemptRunner::Fail(const std::string& attempt_id, v1::FailureReason reason, const Status& st, CapacityHold& hold,
                         ScratchDir* scratch) {
  spdlog::warn("attempt {} failed: {}", attempt_id, st.message());
  // No container of the attempt runs any more (none started, or it ended):
  // free its disk and capacity before the coordinator, which frees them on
  // this report, sends the next task here.
  if (scratch != nullptr) scratch->Remove();
  hold.Release();
  auto r = AttemptEvent(attempt_id, v1::ERRORED);
  r.set_failure_reason(reason);
  r.set_message(st.message());
  ReportOrLog(r);
}

void AttemptRunner::AttachReceiptStatement(const v1::Assignment& a, const PreparedRun& run, const RunFacts& facts,
                                           v1::ReportAttemptRequest& done) {
  if (env_.node_key == nullptr) return;
  MeterInputs in;
  in.started_ms = run.started_ms;
  in.finished_ms = run.finished_ms;
  in.gpus = static_cast<uint32_t>(a.device_uuids_size());
  in.gpu_milli = a.spec().resources().gpu_milli();
  if (facts.exit.ok()) {
    in.cpu_usec = facts.exit->cpu_usec;
    in.paused_ms = facts.exit->paused_ms;
    in.cpu_source = facts.exit->cpu_source;
  }
  in.bytes_in = counted_.bytes_in();
  in.bytes_out = counted_.bytes_out();
  in.gpu_usage = run.gpu_usage;
  v1::ReceiptStatement statement = BuildStatement(a, done, MeterAttempt(in), run.started_ms, run.finished_ms);
  auto signature = receipt::SignStatement(*env_.node_key, statement);
  if (!signature.ok()) {
    // The report still goes: the coordinator records the attempt without a receipt.
    spdlog::warn("attempt {}: cannot sign its receipt: {}", a.attempt_id(), signature.status().message());
    return;
  }
  *done.mutable_receipt_statement() = std::move(statement);
  done.set_receipt_signature(*signature);
}

void AttemptRunner::ReportOrLog(const v1::ReportAttemptRequest& report) {
  // An undelivered report leaves the attempt to the coordinator's own rules
  // (heartbeats stop listing it, the lease ends).
  if (Status st = env_.reporter->Report(report); !st.ok()) {
    spdlog::warn("report {} of attempt {} not delivered: {}", v1::AttemptEvent_Name(report.event()),
                 report.attempt_id(), st.message());
  }
}

}  // namespace idlegrid::agent
