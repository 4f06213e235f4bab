// The jobs side of workflows (workflow_service.h): a step's job gets exactly
// the checks and the submit a requester's own job gets.
#include "coordinator/coordinator.h"
#include "manifest/image_ref.h"

namespace idlegrid::coordinator {

Status Coordinator::CheckJob(const v1::JobSpec& spec, const std::string& account) {
  return PrepareJob(spec, account).status();
}

Status Coordinator::SubmitJobAs(const v1::JobSpec& spec, const std::string& job_id, const std::string& account) {
  IG_ASSIGN_OR_RETURN(PreparedJob prepared, PrepareJob(spec, account));
  return StoreJob(prepared, job_id, account).status();
}

Status Coordinator::CancelStepJob(const std::string& job_id) { return CancelJob(job_id).status(); }

v1::JobSpec Coordinator::PinStepImage(v1::JobSpec spec) {
  // A registry image named by tag is keyed by the digest the tag names now,
  // so that a moved tag reruns the step, and the step's job runs that
  // digest. When it cannot be resolved, the tag goes on to the submit, which
  // refuses it (or tries again later) with the reason.
  Result<manifest::ImageRef> ref = manifest::ParseImageRef(spec.image());
  if (!ref.ok() || !ref->from_registry() || !ref->digest.empty()) return spec;
  v1::JobSpec pinned = spec;
  if (Status st = PinRegistryImage(*ref, &pinned); !st.ok()) return spec;
  // The submit pins it again, by digest; the tag's record is not kept.
  pinned.clear_registry_image();
  return pinned;
}

}  // namespace idlegrid::coordinator
