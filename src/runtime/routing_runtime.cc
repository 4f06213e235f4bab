#include "runtime/routing_runtime.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>

#include <spdlog/spdlog.h>

#include "runtime/admission.h"

namespace idlegrid::runtime {

bool UseFastDriver(const RunSpec& spec, const v1::Enforcement& fast_enforcement,
                   const std::vector<std::string>& fast_runtimes) {
  if (fast_runtimes.empty() || !spec.gpu_uuids.empty()) return false;
  return CheckAdmission(spec.resources, spec.runtime, fast_enforcement, fast_runtimes).ok();
}

namespace {

class RoutingRuntime : public ContainerRuntime {
 public:
  RoutingRuntime(std::unique_ptr<ContainerRuntime> reference, std::unique_ptr<ContainerRuntime> fast,
                 std::string load_dir)
      : reference_(std::move(reference)), fast_(std::move(fast)), load_dir_(std::move(load_dir)) {
    if (fast_ && fast_->Runtimes().empty()) fast_.reset();  // it said why when it was made
    // Links a crash left behind: their loads died with the agent.
    if (!load_dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(load_dir_, ec);
      std::filesystem::create_directories(load_dir_, ec);
      if (ec) load_dir_.clear();  // loads stay synchronous
    }
  }

  v1::Enforcement Enforcement() const override { return reference_->Enforcement(); }

  // The driver Run would pick now (it may still fall back to the reference).
  SandboxFacts Facts(const RunSpec& spec) const override {
    if (FastUsable() && UseFastDriver(spec, fast_->Enforcement(), fast_->Runtimes())) return fast_->Facts(spec);
    return reference_->Facts(spec);
  }

  std::vector<std::string> Runtimes() const override {
    std::vector<std::string> out = reference_->Runtimes();
    if (fast_) {
      for (const auto& r : fast_->Runtimes()) {
        if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
      }
    }
    return out;
  }

  // The runc driver's unpack is waited for; podman's load (the reference,
  // for GPU, gVisor and fallback jobs) goes on in the background from a
  // hard link of the archive, so a job on the fast driver starts as soon as
  // its tree is ready: on a rootless host whose podman stores images with
  // vfs, loading a changed image on a PyTorch base copies the whole base
  // and takes seconds. A job routed to podman waits for that load (Run).
  Status LoadImage(const std::string& archive_path, const std::string& image_id) override {
    if (!fast_) return reference_->LoadImage(archive_path, image_id);
    const std::string own = load_dir_ + "/" + image_id + ".tar";
    std::shared_future<Status> loading;
    if (!load_dir_.empty()) ::unlink(own.c_str());  // one a failed load kept
    if (!load_dir_.empty() && ::link(archive_path.c_str(), own.c_str()) == 0) {
      loading = std::async(std::launch::async, [this, own, image_id] {
                  Status st = reference_->LoadImage(own, image_id);
                  // A failed load keeps its link: AwaitReference tries again
                  // (a disk that was full may have room now).
                  if (st.ok()) ::unlink(own.c_str());
                  if (!st.ok()) spdlog::warn("podman load of image {}: {}", image_id.substr(0, 12), st.ToString());
                  return st;
                }).share();
      std::lock_guard<std::mutex> lock(mu_);
      reference_loads_[image_id] = loading;
    }
    Status unpacked = fast_->LoadImage(archive_path, image_id).WithContext("unpacking for runc");
    if (!loading.valid()) {  // no link (another filesystem?): load it here
      Status loaded = reference_->LoadImage(archive_path, image_id);
      return unpacked.ok() ? loaded : unpacked;
    }
    if (!unpacked.ok()) {
      (void)loading.get();
      return unpacked;
    }
    return Status::Ok();
  }

  // Ok once podman has the image, or its load failed with that error.
  Status AwaitReference(const std::string& image_id) {
    std::shared_future<Status> loading;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = reference_loads_.find(image_id);
      if (it == reference_loads_.end()) return Status::Ok();
      loading = it->second;
    }
    Status st = loading.get();
    if (!st.ok()) {
      // Once more from the link it kept, now: nothing else would load it
      // (the image cache sees the runc copy and takes the image as loaded).
      const std::string own = load_dir_ + "/" + image_id + ".tar";
      if (::access(own.c_str(), F_OK) == 0) {
        st = reference_->LoadImage(own, image_id);
        if (st.ok()) ::unlink(own.c_str());
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    auto it = reference_loads_.find(image_id);
    if (st.ok() && it != reference_loads_.end() && it->second.valid() &&
        it->second.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      reference_loads_.erase(it);
    }
    return st.WithContext("podman load");
  }

  Status RemoveImage(const std::string& image_id) override {
    (void)AwaitReference(image_id);
    if (fast_) IG_RETURN_IF_ERROR(fast_->RemoveImage(image_id));
    return reference_->RemoveImage(image_id);
  }

  bool HasImage(const std::string& image_id) override {
    if (fast_ && !fast_->HasImage(image_id)) return false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = reference_loads_.find(image_id);
      if (it != reference_loads_.end()) {
        if (it->second.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return true;  // on its way
        const bool ok = it->second.get().ok();
        reference_loads_.erase(it);
        if (!ok) {
          ::unlink((load_dir_ + "/" + image_id + ".tar").c_str());  // the link a failed load kept
          return false;                                             // loaded again by the image cache
        }
      }
    }
    return reference_->HasImage(image_id);
  }

  ~RoutingRuntime() override {
    std::map<std::string, std::shared_future<Status>> pending;
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending.swap(reference_loads_);
    }
    for (auto& [id, f] : pending) (void)f.get();
  }

  Result<ExitInfo> Run(const RunSpec& spec, const OutputSink& sink, std::chrono::milliseconds timeout,
                       const std::function<void()>& on_started) override {
    // on_started (the STARTED report, checkpoint sync) reaches the caller once.
    bool announced = false;
    auto announce = [&] {
      if (announced) return;
      announced = true;
      if (on_started) on_started();
    };
    if (FastUsable() && UseFastDriver(spec, fast_->Enforcement(), fast_->Runtimes())) {
      auto result = RunOn(fast_.get(), spec, sink, timeout, announce);
      // runc itself failing (it logs an error only while it sets the
      // container up, before the job's process is executed) must not fail
      // the job: on a host where rootless runc cannot work (no cgroup mount
      // in this mount namespace, say) podman, the reference, runs it, and
      // this agent keeps using podman.
      std::string why = !result.ok() ? result.status().message() : result->error;
      bool killed = result.ok() && result->killed;
      if (why.empty() || killed) return result;
      // A full disk is the node's passing state, not a host where runc
      // cannot work: the run fails (as the node's), runc stays in use.
      std::string lower = why;
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
      if (lower.find("no space left on device") != std::string::npos) {
        spdlog::warn("runc driver failed on a full disk ({}); it stays in use", why);
        return result;
      }
      DisableFast(why);
    }
    IG_RETURN_IF_ERROR(AwaitReference(spec.image_id));
    return RunOn(reference_.get(), spec, sink, timeout, announce);
  }

  Result<ExitInfo> RunOn(ContainerRuntime* driver, const RunSpec& spec, const OutputSink& sink,
                         std::chrono::milliseconds timeout, const std::function<void()>& on_started) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      owner_[spec.container_name] = driver;
    }
    auto result = driver->Run(spec, sink, timeout, on_started);
    std::lock_guard<std::mutex> lock(mu_);
    owner_.erase(spec.container_name);
    return result;
  }

  bool FastUsable() const {
    std::lock_guard<std::mutex> lock(mu_);
    return fast_ != nullptr && fast_broken_.empty();
  }

  void DisableFast(const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!fast_broken_.empty()) return;
    fast_broken_ = why;
    spdlog::error("runc driver failed before a job started ({}); this agent starts containers with podman from now on",
                  why);
  }

  Status Kill(const std::string& container_name) override {
    ContainerRuntime* driver = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = owner_.find(container_name);
      if (it != owner_.end()) driver = it->second;
    }
    if (driver != nullptr) return driver->Kill(container_name);
    // Not running here (a leftover, or a Run not yet begun): ask both.
    Status st = fast_ ? fast_->Kill(container_name) : Status::Ok();
    Status ref = reference_->Kill(container_name);
    return st.ok() ? ref : st;
  }

  std::vector<std::string> LiveWritableDirs(const std::string& container_name) override {
    ContainerRuntime* driver = DriverOf(container_name);
    return driver != nullptr ? driver->LiveWritableDirs(container_name) : std::vector<std::string>{};
  }

  Status Freeze(const std::string& container_name) override {
    ContainerRuntime* driver = DriverOf(container_name);
    return driver != nullptr ? driver->Freeze(container_name)
                             : Status::NotFound("container " + container_name + " is not running here");
  }

  Status Thaw(const std::string& container_name) override {
    ContainerRuntime* driver = DriverOf(container_name);
    return driver != nullptr ? driver->Thaw(container_name)
                             : Status::NotFound("container " + container_name + " is not running here");
  }

  std::vector<int> HostPids(const std::string& container_name) override {
    ContainerRuntime* driver = DriverOf(container_name);
    return driver != nullptr ? driver->HostPids(container_name) : std::vector<int>{};
  }

  // The driver whose Run of the container is in progress, or null.
  ContainerRuntime* DriverOf(const std::string& container_name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = owner_.find(container_name);
    return it != owner_.end() ? it->second : nullptr;
  }

  Result<std::vector<std::string>> ListContainers() override {
    IG_ASSIGN_OR_RETURN(std::vector<std::string> out, reference_->ListContainers());
    if (fast_) {
      IG_ASSIGN_OR_RETURN(std::vector<std::string> more, fast_->ListContainers());
      out.insert(out.end(), more.begin(), more.end());
    }
    return out;
  }

 private:
  std::unique_ptr<ContainerRuntime> reference_;
  std::unique_ptr<ContainerRuntime> fast_;
  mutable std::mutex mu_;
  std::map<std::string, ContainerRuntime*> owner_;  // container name -> driver running it; guarded by mu_
  std::string fast_broken_;                         // why the fast driver is no longer used; guarded by mu_
  // image id -> podman's load of it still under way (or just finished); guarded by mu_
  std::map<std::string, std::shared_future<Status>> reference_loads_;
  std::string load_dir_;  // where background loads keep their link to the archive; "": none (loads wait)
};

}  // namespace

std::unique_ptr<ContainerRuntime> NewRoutingRuntime(std::unique_ptr<ContainerRuntime> reference,
                                                    std::unique_ptr<ContainerRuntime> fast, std::string load_dir) {
  return std::make_unique<RoutingRuntime>(std::move(reference), std::move(fast), std::move(load_dir));
}

}  // namespace idlegrid::runtime
