#include "agent/attempt_fakes_support.h"

#include <filesystem>
#include <fstream>

#include "common/digest.h"
#include "common/fs.h"

namespace idlegrid::agent::testing {

namespace {

// The host side of the writable mount whose host path ends in `/suffix`.
std::string MountEndingIn(const runtime::RunSpec& spec, const std::string& suffix) {
  for (const auto& m : spec.mounts) {
    if (!m.read_only && m.host_path.size() >= suffix.size() &&
        m.host_path.compare(m.host_path.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return m.host_path;
    }
  }
  return "";
}

void WriteFiles(const std::string& dir, const std::map<std::string, std::string>& files) {
  for (const auto& [rel, contents] : files) {
    std::filesystem::path path = std::filesystem::path(dir) / rel;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << contents;
  }
}

}  // namespace

v1::Enforcement FakeRuntime::Enforcement() const {
  v1::Enforcement e;
  e.set_memory("cgroup");
  e.set_pids("cgroup");
  e.set_cpu("cgroup");
  e.set_disk("rlimit");
  e.set_cgroup_version("2");
  return e;
}

Status FakeRuntime::LoadImage(const std::string& archive_path, const std::string& image_id) {
  ++load_image_calls;
  return Status::Ok();
}

bool FakeRuntime::HasImage(const std::string& image_id) {
  ++has_image_calls;
  return has_image;
}

Result<runtime::ExitInfo> FakeRuntime::Run(const runtime::RunSpec& spec, const runtime::OutputSink& sink,
                                           std::chrono::milliseconds timeout, const std::function<void()>& on_started) {
  runs.push_back(spec);
  timeouts.push_back(timeout);
  if (!start) return exit;
  if (on_started) on_started();
  sink("stdout", "hello\n");
  if (while_running) while_running(spec);
  const std::string out = MountEndingIn(spec, "/out");
  WriteFiles(out, outputs);
  for (size_t i = 0; i < extra_output_files; ++i) std::ofstream(out + "/f" + std::to_string(i));
  if (!checkpoint_files.empty()) WriteFiles(MountEndingIn(spec, "/checkpoint"), checkpoint_files);
  return exit;
}

runtime::SandboxFacts FakeRuntime::Facts(const runtime::RunSpec& spec) const {
  facts_asked.push_back(spec);
  return sandbox;
}

Status FakeRuntime::Kill(const std::string& container_name) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    killed_.push_back(container_name);
  }
  killed_cv_.notify_all();
  return Status::Ok();
}

bool FakeRuntime::WaitForKill(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return killed_cv_.wait_for(lock, timeout, [this] { return !killed_.empty(); });
}

std::vector<std::string> FakeRuntime::Killed() {
  std::lock_guard<std::mutex> lock(mu_);
  return killed_;
}

Status FakeHost::ReserveCapacity(const v1::Assignment& a) {
  if (!capacity.ok()) return capacity;
  std::lock_guard<std::mutex> lock(mu_);
  held_.insert(a.attempt_id());
  return Status::Ok();
}

void FakeHost::ReleaseCapacity(const std::string& attempt_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (held_.erase(attempt_id) > 0) ++releases;
}

bool FakeHost::IsCancelled(const std::string& attempt_id) {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_.count(attempt_id) > 0;
}

void FakeHost::Cancel(const std::string& attempt_id) {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_.insert(attempt_id);
}

bool FakeHost::Holds(const std::string& attempt_id) {
  std::lock_guard<std::mutex> lock(mu_);
  return held_.count(attempt_id) > 0;
}

Status RecordingReporter::Report(const v1::ReportAttemptRequest& report) {
  if (on_report) on_report(report);
  std::lock_guard<std::mutex> lock(mu_);
  reports_.push_back(report);
  if (refuse.count(report.event())) return Status::FailedPrecondition("refused by the test");
  return Status::Ok();
}

std::vector<v1::ReportAttemptRequest> RecordingReporter::Reports() {
  std::lock_guard<std::mutex> lock(mu_);
  return reports_;
}

std::vector<v1::AttemptEvent> RecordingReporter::Events() {
  std::vector<v1::AttemptEvent> events;
  for (const auto& r : Reports()) events.push_back(r.event());
  return events;
}

Status FakeArtifacts::Download(const std::string& digest, const std::string& path) {
  auto it = store.find(digest);
  if (it == store.end()) return Status::NotFound("no artifact " + digest);
  {
    std::lock_guard<std::mutex> lock(mu_);
    downloaded.push_back(digest);
  }
  return WriteFileAtomic(path, it->second, 0600);
}

Result<v1::OutputFile> FakeArtifacts::Upload(const std::string& path, const std::string& rel) {
  if (fail_uploads) return Status::Unavailable("upload refused by the test");
  auto contents = ReadFile(path);
  if (!contents.ok()) return contents.status();
  std::lock_guard<std::mutex> lock(mu_);
  uploaded_[rel] = *contents;
  v1::OutputFile f;
  f.set_path(rel);
  f.set_digest(Sha256Digest(*contents));
  f.set_size(contents->size());
  return f;
}

std::map<std::string, std::string> FakeArtifacts::Uploaded() {
  std::lock_guard<std::mutex> lock(mu_);
  return uploaded_;
}

}  // namespace idlegrid::agent::testing
