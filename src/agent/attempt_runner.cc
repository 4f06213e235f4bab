// One attempt, from acknowledgement to cleanup:
//   admission -> ACCEPTED -> image -> inputs -> run (STARTED, logs) -> outputs -> EXITED -> cleanup
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "agent/agent.h"
#include "agent/checkpoint_sync.h"
#include "agent/log_shipper.h"
#include "agent/outcome.h"
#include "common/clock.h"
#include "common/digest.h"
#include "common/fs.h"
#include "image/oci_archive.h"
#include "manifest/manifest.h"
#include "runtime/admission.h"
#include "runtime/enforcement_probe.h"

namespace idlegrid::agent {

namespace {

// How long a runtime's "this image is present" is trusted without asking again.
constexpr int64_t kImageRecheckMs = 30'000;

v1::ReportAttemptRequest Event(const std::string& attempt_id, v1::AttemptEvent event) {
  v1::ReportAttemptRequest r;
  r.set_attempt_id(attempt_id);
  r.set_event(event);
  return r;
}

}  // namespace

Status Agent::ReserveCapacity(const v1::Assignment& a) {
  const v1::Resources& res = a.spec().resources();
  const v1::NodeInfo info = Describe();
  std::lock_guard<std::mutex> lock(mu_);
  double cpu_held = 0;
  uint64_t memory_held = 0;
  std::vector<advert::DeviceHold> device_holds;
  // Every hold counts until its runner has seen its container gone, killed
  // and tearing-down ones included.
  for (const auto& [other, h] : holds_) {
    cpu_held += h.cpu;
    memory_held += h.memory;
    for (const auto& d : h.devices) device_holds.push_back({d, h.gpu_memory});
  }
  advert::FitRequest request{res.cpu(), res.memory_bytes(), {a.device_uuids().begin(), a.device_uuids().end()},
                             res.gpu_memory_bytes()};
  IG_RETURN_IF_ERROR(advert::CheckFits(
      advert::AllocatableCpu(info.cpu_cores(), owner_.policy.reserved_cpu(), cpu_held),
      advert::AllocatableMemory(info.memory_bytes(), memory_held),
      advert::ComputeAllocatable(last_devices_, owner_.policy, device_holds), request));
  holds_[a.attempt_id()] = {request.device_uuids, res.gpu_memory_bytes(), res.cpu(), res.memory_bytes()};
  readvertise_ = true;  // what it holds shows in the next advertisement, sent at once
  cv_.notify_all();
  return Status::Ok();
}

Result<std::string> Agent::EnsureImage(const v1::Assignment& a) {
  const std::string manifest_digest = manifest::ImageDigestOf(a.spec().image());
  std::string image_id = DigestHex(a.image_config_digest());
  std::string cache_dir = config_.data_dir + "/images";
  std::string marker = cache_dir + "/" + DigestHex(manifest_digest);
  std::lock_guard<std::mutex> lock(image_mu_);
  // Cached only if we verified it ourselves before and the runtime still has
  // it. Asking the runtime costs a podman call: a positive answer is trusted
  // for a while (a sweep starts hundreds of tasks on one image).
  const int64_t now = SystemClock::Get()->NowMs();
  auto seen = image_checked_ms_.find(image_id);
  if (seen != image_checked_ms_.end() && now - seen->second < kImageRecheckMs && PathExists(marker)) return image_id;
  if (PathExists(marker) && runtime_->HasImage(image_id)) {
    image_checked_ms_[image_id] = now;
    return image_id;
  }
  image_checked_ms_.erase(image_id);
  IG_RETURN_IF_ERROR(MakeDirs(cache_dir, 0700));
  std::string archive = cache_dir + "/" + DigestHex(a.image_archive_digest()) + ".tar";
  IG_RETURN_IF_ERROR(Download(a.image_archive_digest(), archive).WithContext("image archive"));
  auto info = image::InspectOciArchive(archive, manifest_digest);
  if (!info.ok()) {
    std::remove(archive.c_str());
    return info.status().WithContext("image " + manifest_digest + " failed verification");
  }
  if (info->config_digest != a.image_config_digest()) {
    std::remove(archive.c_str());
    return Status::DataLoss("image " + manifest_digest + " has config " + info->config_digest + ", coordinator said " +
                            a.image_config_digest());
  }
  Status st = runtime_->LoadImage(archive, image_id);
  std::remove(archive.c_str());
  IG_RETURN_IF_ERROR(st.WithContext("podman load"));
  IG_RETURN_IF_ERROR(WriteFileAtomic(marker, info->config_digest + "\n", 0600));
  image_checked_ms_[image_id] = SystemClock::Get()->NowMs();
  spdlog::info("image {} verified and loaded as {}", manifest_digest, image_id.substr(0, 12));
  return image_id;
}

void Agent::RunAttempt(v1::Assignment a) {
  const std::string& id = a.attempt_id();
  const v1::JobSpec& spec = a.spec();
  auto fail = [&](v1::FailureReason reason, const Status& st) {
    spdlog::warn("attempt {} failed: {}", id, st.message());
    auto r = Event(id, v1::ERRORED);
    r.set_failure_reason(reason);
    r.set_message(st.message());
    ReportOrLog(r);
  };

  Status admit = draining_ ? Status::FailedPrecondition("the agent is shutting down") : Status::Ok();
  if (admit.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    admit = CheckOwnerPolicy(spec, owner_.policy);
  }
  if (admit.ok()) {
    admit = runtime::CheckAdmission(spec.resources(), spec.runtime(), runtime_->Enforcement(), runtime_->Runtimes());
  }
  if (!admit.ok()) {
    spdlog::warn("attempt {} rejected: {}", id, admit.message());
    auto r = Event(id, v1::REJECTED);
    r.set_message(admit.message());
    ReportOrLog(r);
    return;
  }
  // Never more than this node advertises: the hold is taken before the
  // acknowledgement, so the coordinator learns at once if there is no room.
  if (Status room = ReserveCapacity(a); !room.ok()) {
    spdlog::warn("attempt {} refused, node busy: {}", id, room.message());
    auto r = Event(id, v1::REJECTED);
    r.set_failure_reason(v1::NODE_BUSY);
    r.set_message(room.message());
    ReportOrLog(r);
    return;
  }
  if (Status st = Report(Event(id, v1::ACCEPTED)); !st.ok()) {
    spdlog::info("attempt {} dropped: {}", id, st.message());
    {
      std::lock_guard<std::mutex> lock(mu_);
      holds_.erase(id);
    }
    RequestReadvertise();
    return;
  }
  struct ReleaseHold {
    Agent* agent;
    std::string id;
    bool released = false;
    void Release() {
      if (released) return;
      released = true;
      {
        std::lock_guard<std::mutex> lock(agent->mu_);
        agent->holds_.erase(id);
      }
      agent->RequestReadvertise();
    }
    ~ReleaseHold() { Release(); }
  } release{this, id};

  auto image_id = EnsureImage(a);
  if (!image_id.ok()) return fail(v1::PLATFORM_FAILURE, image_id.status());

  const std::string work = config_.data_dir + "/attempts/" + id;
  const std::string out_dir = work + "/out";
  // The attempt's scratch (inputs, outputs, checkpoint) goes however it ends.
  struct Scratch {
    const std::string& path;
    ~Scratch() {
      if (Status st = RemoveTree(path); !st.ok()) spdlog::warn("removing {}: {}", path, st.message());
    }
  } scratch{work};
  if (Status st = MakeDirs(out_dir, 0700); !st.ok()) return fail(v1::PLATFORM_FAILURE, st);
  runtime::RunSpec run;
  run.container_name = ContainerName(id);
  run.image_id = *image_id;
  run.runtime = spec.runtime();
  run.command.assign(spec.command().begin(), spec.command().end());
  run.args.assign(spec.args().begin(), spec.args().end());
  for (const auto& [k, v] : spec.env()) run.env.emplace_back(k, v);
  run.env.emplace_back("IDLEGRID_TASK_INDEX", std::to_string(a.task_index()));
  run.env.emplace_back("IDLEGRID_TASK_COUNT", std::to_string(std::max<uint32_t>(1, spec.array_count())));
  run.env.emplace_back("IDLEGRID_JOB_ID", a.job_id());
  run.mounts.push_back({out_dir, spec.output_path(), false, ""});
  // Tasks of one array job may share a sandbox on this node, one after
  // another (runtime/pilot_pool.h); a checkpointing job's directory is synced
  // while it runs, so it keeps a container per attempt.
  if (spec.array_count() > 1 && spec.checkpoint_path().empty()) run.sandbox_group = a.job_id();
  std::unique_ptr<CheckpointSync> checkpoint;
  if (!spec.checkpoint_path().empty()) {
    const std::string dir = work + "/checkpoint";
    if (Status st = MakeDirs(dir, 0700); !st.ok()) return fail(v1::PLATFORM_FAILURE, st);
    checkpoint = std::make_unique<CheckpointSync>(
        dir, [this](const std::string& path, const std::string& rel) { return Upload(path, rel); },
        [this, id](const std::vector<v1::OutputFile>& files) {
          auto r = Event(id, v1::CHECKPOINTED);
          for (const auto& f : files) *r.add_checkpoint() = f;
          return Report(r);
        });
    if (a.has_restore() && a.restore().files_size() > 0) {
      Status st = checkpoint->Restore(a.restore(), [this](const std::string& digest, const std::string& path) {
        return Download(digest, path);
      });
      if (!st.ok()) {
        return fail(v1::PLATFORM_FAILURE, st.WithContext("restoring checkpoint of attempt " +
                                                         a.restore().attempt_id()));
      }
      spdlog::info("attempt {} resumes from the checkpoint of attempt {} ({} files)", id, a.restore().attempt_id(),
                   a.restore().files_size());
    }
    run.mounts.push_back({dir, spec.checkpoint_path(), false, ""});
    run.env.emplace_back("IDLEGRID_CHECKPOINT_DIR", spec.checkpoint_path());
  }
  for (int i = 0; i < spec.inputs_size(); ++i) {
    const auto& in = spec.inputs(i);
    std::string local = work + "/input-" + std::to_string(i);
    if (Status st = Download(in.artifact(), local); !st.ok()) {
      return fail(v1::PLATFORM_FAILURE, st.WithContext("input " + in.path()));
    }
    ::chmod(local.c_str(), 0444);
    run.mounts.push_back({local, in.path(), true, in.artifact()});
  }
  run.resources = spec.resources();
  // Real GPUs go in through CDI; simulated ones exist only in the
  // advertisement. A device this host cannot account for fails the attempt:
  // never run a job without the GPU it was placed (and priced) for.
  if (a.device_uuids_size() > 0) {
    auto ad = CurrentAdvertisement();
    if (!ad.ok()) {
      return fail(v1::PLATFORM_FAILURE, ad.status().WithContext("discovering the assigned GPUs"));
    }
    for (const auto& uuid : a.device_uuids()) {
      const v1::GpuDevice* device = nullptr;
      for (const auto& d : ad->inventory().gpus().devices()) {
        if (d.uuid() == uuid) device = &d;
      }
      if (device == nullptr) {
        return fail(v1::PLATFORM_FAILURE,
                    Status::FailedPrecondition("assigned GPU " + uuid + " is not on this host (any more); "
                                               "check `idlegrid agent --discover`"));
      }
      if (!device->simulated()) run.gpu_uuids.push_back(uuid);
    }
  }
  if (!run.gpu_uuids.empty() && !PathExists("/etc/cdi/nvidia.yaml") && !PathExists("/var/run/cdi/nvidia.yaml")) {
    return fail(v1::PLATFORM_FAILURE,
                Status::FailedPrecondition("no CDI spec for NVIDIA GPUs on this host; run `nvidia-ctk cdi generate "
                                           "--output=/etc/cdi/nvidia.yaml`"));
  }
  run.host_user_processes = runtime::CountUserProcesses(::getuid());

  if (IsCancelled(id)) {
    ReportOrLog(Event(id, v1::STOPPED));
    return;
  }
  auto sink = [&](const std::string& stream, std::string_view data) { logs_->Add(id, stream, data); };
  auto on_started = [&] {
    auto r = Event(id, v1::STARTED);
    r.set_runtime(spec.runtime());
    ReportOrLog(r);
    if (checkpoint) {
      checkpoint->Start(std::chrono::seconds(std::max<uint32_t>(1, spec.checkpoint_interval_seconds())));
    }
  };
  RunFacts facts;
  facts.exit = runtime_->Run(run, sink, std::chrono::seconds(spec.run_timeout_seconds()), on_started);
  logs_->Flush();
  facts.cancelled = IsCancelled(id);
  facts.run_timeout_seconds = spec.run_timeout_seconds();
  facts.memory_bytes = spec.resources().memory_bytes();
  if (checkpoint) {
    checkpoint->Stop();
    if (NeedsFinalCheckpoint(facts)) {
      if (Status st = checkpoint->SyncOnce(); !st.ok()) spdlog::warn("final checkpoint of {}: {}", id, st.message());
    }
  }
  const std::vector<std::string> files = RegularFilesUnder(out_dir);
  facts.output_files = files.size();
  const Outcome outcome = DecideOutcome(facts);
  if (outcome.event == v1::ERRORED) return fail(outcome.reason, Status::Internal(outcome.message));

  v1::ReportAttemptRequest done = Event(id, outcome.event);
  if (outcome.event == v1::EXITED) {
    done.set_exit_code(outcome.exit_code);
    if (outcome.reason != v1::FAILURE_REASON_UNSPECIFIED) done.set_failure_reason(outcome.reason);
    if (!outcome.message.empty()) done.set_message(outcome.message);
  }
  for (const auto& rel : outcome.collect_outputs ? files : std::vector<std::string>{}) {
    auto file = Upload(out_dir + "/" + rel, rel);
    if (!file.ok()) return fail(v1::PLATFORM_FAILURE, file.status());
    *done.add_outputs() = *file;
  }
  // The container is gone: free its capacity before the coordinator, which
  // frees it on this report, sends the next task here.
  release.Release();
  Status st = Report(done);
  spdlog::info("attempt {} {} (exit {}){}", id, v1::AttemptEvent_Name(done.event()), done.exit_code(),
               st.ok() ? "" : "; report refused: " + st.message());
}

}  // namespace idlegrid::agent
