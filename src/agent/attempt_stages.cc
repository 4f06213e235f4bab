#include "agent/attempt_stages.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string_view>

#include "common/fs.h"
#include "runtime/job_files.h"

namespace idlegrid::agent {

namespace {

// Whether `dir` is `path` or a directory above it (both normalized).
bool IsAtOrAbove(std::string_view dir, std::string_view path) {
  return path.starts_with(dir) && (path.size() == dir.size() || path[dir.size()] == '/');
}

}  // namespace

v1::ReportAttemptRequest AttemptEvent(const std::string& attempt_id, v1::AttemptEvent event) {
  v1::ReportAttemptRequest r;
  r.set_attempt_id(attempt_id);
  r.set_event(event);
  return r;
}

v1::ReportAttemptRequest OutcomeReport(const std::string& attempt_id, const Outcome& outcome) {
  v1::ReportAttemptRequest r = AttemptEvent(attempt_id, outcome.event);
  if (outcome.event == v1::EXITED) r.set_exit_code(outcome.exit_code);
  if (outcome.event == v1::EXITED || outcome.event == v1::ERRORED) {
    if (outcome.reason != v1::FAILURE_REASON_UNSPECIFIED) r.set_failure_reason(outcome.reason);
    if (!outcome.message.empty()) r.set_message(outcome.message);
  }
  return r;
}

runtime::RunSpec BuildRunSpec(const v1::Assignment& a, const RunLayout& layout) {
  const v1::JobSpec& spec = a.spec();
  runtime::RunSpec run;
  run.container_name = layout.container_name;
  run.image_id = layout.image_id;
  run.runtime = spec.runtime();
  run.command.assign(spec.command().begin(), spec.command().end());
  run.args.assign(spec.args().begin(), spec.args().end());
  for (const auto& [k, v] : spec.env()) run.env.emplace_back(k, v);
  run.env.emplace_back("IDLEGRID_TASK_INDEX", std::to_string(a.task_index()));
  run.env.emplace_back("IDLEGRID_TASK_COUNT", std::to_string(std::max<uint32_t>(1, spec.array_count())));
  run.env.emplace_back("IDLEGRID_JOB_ID", a.job_id());
  run.mounts.push_back({layout.out_dir, spec.output_path(), false, ""});
  if (spec.array_count() > 1 && spec.checkpoint_path().empty()) run.sandbox_group = a.job_id();
  if (!spec.checkpoint_path().empty()) {
    run.mounts.push_back({layout.checkpoint_dir, spec.checkpoint_path(), false, ""});
    run.env.emplace_back("IDLEGRID_CHECKPOINT_DIR", spec.checkpoint_path());
  }
  // The digest lets attempts of one sandbox group share one copy of an input.
  for (int i = 0; i < spec.inputs_size() && i < static_cast<int>(layout.input_paths.size()); ++i) {
    run.mounts.push_back({layout.input_paths[i], spec.inputs(i).path(), true, spec.inputs(i).artifact()});
  }
  // ML code writes to HOME and its caches (pip, torch hub, Hugging Face and
  // matplotlib all go under XDG_CACHE_HOME or HOME by default, so these two
  // cover them) and fails on the read-only root. A directory of the
  // attempt's scratch: what it holds counts in the job's disk total and goes
  // with the scratch.
  if (!layout.home_dir.empty()) {
    const bool home_taken = std::any_of(run.mounts.begin(), run.mounts.end(), [](const runtime::Mount& m) {
      return IsAtOrAbove(m.container_path, runtime::kJobHomeDir);
    });
    if (!home_taken) run.mounts.push_back({layout.home_dir, runtime::kJobHomeDir, false, ""});
    const std::string home = runtime::kJobHomeDir;
    if (!spec.env().contains("HOME")) run.env.emplace_back("HOME", home);
    if (!spec.env().contains("XDG_CACHE_HOME")) run.env.emplace_back("XDG_CACHE_HOME", home + "/" + kCacheDirName);
  }
  run.resources = spec.resources();
  run.job_class = spec.job_class();
  run.gpu_uuids = layout.gpu_uuids;
  run.host_user_processes = layout.host_user_processes;
  return run;
}

Result<std::vector<std::string>> SelectGpus(const v1::Assignment& a, const std::vector<v1::GpuDevice>& host_gpus) {
  std::vector<std::string> real;
  for (const auto& uuid : a.device_uuids()) {
    auto device =
        std::find_if(host_gpus.begin(), host_gpus.end(), [&](const v1::GpuDevice& d) { return d.uuid() == uuid; });
    if (device == host_gpus.end()) {
      return Status::FailedPrecondition("assigned GPU " + uuid +
                                        " is not on this host (any more); "
                                        "check `idlegrid agent --discover`");
    }
    if (!device->simulated()) real.push_back(uuid);
  }
  return real;
}

void ScratchDir::Remove() {
  if (removed_) return;
  removed_ = true;
  Status st = RemoveTree(path_);
  if (!st.ok()) {
    // The job user's directories: only their owner may empty them.
    if (Status back = runtime::ReclaimJobFiles({path_}); back.ok()) {
      st = RemoveTree(path_);
    } else {
      st = back;
    }
  }
  if (!st.ok()) spdlog::warn("removing {}: {}", path_, st.message());
}

void CapacityHold::Release() {
  if (released_) return;
  released_ = true;
  host_->ReleaseCapacity(attempt_id_);
}

}  // namespace idlegrid::agent
