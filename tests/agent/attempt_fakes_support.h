#pragma once
// Fakes for the world of one attempt (agent/attempt_env.h), so that
// AttemptRunner runs whole attempts without a coordinator or podman. Each
// records what it was asked and answers what the test chose.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/attempt_env.h"
#include "agent/local_policy.h"
#include "runtime/container_runtime.h"

namespace idlegrid::agent::testing {

// What a container that exited with `code` by itself returns.
inline runtime::ExitInfo Exit(int code) {
  runtime::ExitInfo e;
  e.exit_code = code;
  return e;
}

// A container runtime whose Run does what the test says: by default it calls
// on_started, writes "hello\n" to stdout, calls `while_running`, leaves
// `outputs` in the output mount and returns `exit`.
class FakeRuntime : public runtime::ContainerRuntime {
 public:
  v1::Enforcement Enforcement() const override;
  std::vector<std::string> Runtimes() const override { return {"runc"}; }
  Status LoadImage(const std::string& archive_path, const std::string& image_id) override;
  bool HasImage(const std::string& image_id) override;
  Status RemoveImage(const std::string& image_id) override {
    removed_images.push_back(image_id);
    return Status::Ok();
  }
  std::vector<std::string> removed_images;  // RemoveImage's ids, in order
  Result<runtime::ExitInfo> Run(const runtime::RunSpec& spec, const runtime::OutputSink& sink,
                                std::chrono::milliseconds timeout, const std::function<void()>& on_started) override;
  Status Kill(const std::string& container_name) override;
  Result<std::vector<std::string>> ListContainers() override { return std::vector<std::string>{}; }
  // `sandbox`, whatever the spec; the specs asked about are in facts_asked.
  runtime::SandboxFacts Facts(const runtime::RunSpec& spec) const override;

  // What Facts answers (set before the attempt).
  runtime::SandboxFacts sandbox;

  // What Run does (set before the attempt).
  Result<runtime::ExitInfo> exit = Exit(0);
  std::map<std::string, std::string> outputs;                  // relative path -> contents, in the output mount
  std::map<std::string, std::string> checkpoint_files;         // the same, in the checkpoint mount
  size_t extra_output_files = 0;                               // this many more empty files, "f<i>"
  bool start = true;                                           // false: fails before on_started
  std::function<void(const runtime::RunSpec&)> while_running;  // after on_started, before the files
  bool has_image = true;

  // Waits until Kill was called (from any thread) or `timeout` passed; whether it was.
  bool WaitForKill(std::chrono::milliseconds timeout);
  std::vector<std::string> Killed();  // the names Kill was called with

  // What it was asked.
  std::vector<runtime::RunSpec> runs;
  std::vector<std::chrono::milliseconds> timeouts;
  int has_image_calls = 0;
  int load_image_calls = 0;
  mutable std::vector<runtime::RunSpec> facts_asked;

 private:
  std::mutex mu_;
  std::condition_variable killed_cv_;
  std::vector<std::string> killed_;  // guarded by mu_
};

// The node side: refusals, cancellations and GPUs the test chose; holds counted.
class FakeHost : public AttemptHost {
 public:
  // `policy` as the test set it; with `owner` set, the owner's real rules
  // (agent/local_policy.h) on that policy instead.
  Status CheckLocalPolicy(const v1::Assignment& a) override { return owner ? CheckOwnerPolicy(a, *owner) : policy; }
  // The agent's own rule (local_policy.h) over `trusted_image_keys`.
  Status CheckImageSignatures(const v1::Assignment& a) override { return CheckImageTrust(a, trusted_image_keys); }
  Status ReserveCapacity(const v1::Assignment& a) override;
  void ReleaseCapacity(const std::string& attempt_id) override;
  bool IsCancelled(const std::string& attempt_id) override;
  Result<std::vector<v1::GpuDevice>> Gpus() override { return gpus; }
  std::string ContainerName(const std::string& attempt_id) const override { return "idlegrid-n1-" + attempt_id; }
  NodeFacts Facts() override { return facts; }

  void Cancel(const std::string& attempt_id);
  bool Holds(const std::string& attempt_id);

  Status policy;
  std::vector<image::ImagePublicKey> trusted_image_keys;  // the owner's trustedImageKeys
  std::optional<v1::LocalPolicy> owner;
  Status capacity;
  std::vector<v1::GpuDevice> gpus;
  NodeFacts facts;   // what Facts answers
  int releases = 0;  // ReleaseCapacity calls for a held attempt

 private:
  std::mutex mu_;
  std::set<std::string> held_;       // guarded by mu_
  std::set<std::string> cancelled_;  // guarded by mu_
};

// Records every report; refuses the events in `refuse`.
class RecordingReporter : public AttemptReporter {
 public:
  Status Report(const v1::ReportAttemptRequest& report) override;
  std::vector<v1::ReportAttemptRequest> Reports();
  // The events reported, in order.
  std::vector<v1::AttemptEvent> Events();

  std::set<v1::AttemptEvent> refuse;
  // Called with each report before it is recorded (e.g. to look at the disk).
  std::function<void(const v1::ReportAttemptRequest&)> on_report;

 private:
  std::mutex mu_;
  std::vector<v1::ReportAttemptRequest> reports_;  // guarded by mu_
};

// Artifacts in memory: downloads from `store`, uploads recorded with a digest
// of their contents.
class FakeArtifacts : public ArtifactTransfer {
 public:
  Status Download(const std::string& digest, const std::string& path) override;
  Result<v1::OutputFile> Upload(const std::string& path, const std::string& rel) override;
  std::map<std::string, std::string> Uploaded();  // rel -> contents

  std::map<std::string, std::string> store;  // digest -> contents
  bool fail_uploads = false;
  std::vector<std::string> downloaded;  // digests Download served, in order

 private:
  std::mutex mu_;
  std::map<std::string, std::string> uploaded_;  // guarded by mu_
};

class FakeImages : public ImageSource {
 public:
  Result<std::string> Ensure(const v1::Assignment& a) override {
    ++ensure_calls;
    return image;
  }
  Result<std::string> image = std::string(64, 'a');
  int ensure_calls = 0;  // the runner's thread only
};

}  // namespace idlegrid::agent::testing
