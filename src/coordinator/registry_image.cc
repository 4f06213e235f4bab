// Images from OCI registries at submit (docs/registries.md): the operator's
// allow-list, then the registry itself, then the job's spec pinned to what
// it served.
#include <spdlog/spdlog.h>

#include "coordinator/coordinator.h"

namespace idlegrid::coordinator {

Status Coordinator::PinRegistryImage(const manifest::ImageRef& ref, v1::JobSpec* spec) {
  IG_RETURN_IF_ERROR(registry::CheckOperatorAllows(ref, options_.registries).WithContext("spec.image"));
  if (registry_ == nullptr) {
    return Status::FailedPrecondition("spec.image: this coordinator was started without a registry client");
  }
  // Resolved once, here: a tag moved later changes no attempt of this job.
  Result<registry::ResolvedImage> resolved = registry_->Resolve(ref);
  if (!resolved.ok()) return resolved.status().WithContext("spec.image");
  manifest::ImageRef pinned = ref;
  pinned.digest = resolved->manifest_digest;
  v1::RegistryImage* record = spec->mutable_registry_image();
  record->set_registry(ref.registry);
  record->set_requested(spec->image());
  record->set_config_digest(resolved->config_digest);
  spec->set_image(pinned.Pinned());
  if (ref.digest.empty()) spdlog::info("image {} resolved to {}", ref.Named(), pinned.digest);
  return Status::Ok();
}

}  // namespace idlegrid::coordinator
