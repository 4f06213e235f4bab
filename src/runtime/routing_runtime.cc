#include "runtime/routing_runtime.h"

#include <algorithm>
#include <map>
#include <mutex>

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
  RoutingRuntime(std::unique_ptr<ContainerRuntime> reference, std::unique_ptr<ContainerRuntime> fast)
      : reference_(std::move(reference)), fast_(std::move(fast)) {
    if (fast_ && fast_->Runtimes().empty()) fast_.reset();  // it said why when it was made
  }

  v1::Enforcement Enforcement() const override { return reference_->Enforcement(); }

  std::vector<std::string> Runtimes() const override {
    std::vector<std::string> out = reference_->Runtimes();
    if (fast_) {
      for (const auto& r : fast_->Runtimes()) {
        if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
      }
    }
    return out;
  }

  Status LoadImage(const std::string& archive_path, const std::string& image_id) override {
    if (fast_) IG_RETURN_IF_ERROR(fast_->LoadImage(archive_path, image_id).WithContext("unpacking for runc"));
    return reference_->LoadImage(archive_path, image_id);
  }

  bool HasImage(const std::string& image_id) override {
    return reference_->HasImage(image_id) && (!fast_ || fast_->HasImage(image_id));
  }

  Result<ExitInfo> Run(const RunSpec& spec, const OutputSink& sink, std::chrono::milliseconds timeout,
                       const std::function<void()>& on_started) override {
    ContainerRuntime* driver = reference_.get();
    if (fast_ && UseFastDriver(spec, fast_->Enforcement(), fast_->Runtimes())) driver = fast_.get();
    {
      std::lock_guard<std::mutex> lock(mu_);
      owner_[spec.container_name] = driver;
    }
    auto result = driver->Run(spec, sink, timeout, on_started);
    std::lock_guard<std::mutex> lock(mu_);
    owner_.erase(spec.container_name);
    return result;
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
  std::mutex mu_;
  std::map<std::string, ContainerRuntime*> owner_;  // container name -> driver running it; guarded by mu_
};

}  // namespace

std::unique_ptr<ContainerRuntime> NewRoutingRuntime(std::unique_ptr<ContainerRuntime> reference,
                                                    std::unique_ptr<ContainerRuntime> fast) {
  return std::make_unique<RoutingRuntime>(std::move(reference), std::move(fast));
}

}  // namespace idlegrid::runtime
