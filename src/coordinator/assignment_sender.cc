// AssignmentSender (assignment_sender.h).
#include "coordinator/assignment_sender.h"

#include "manifest/items.h"
#include "manifest/manifest.h"

namespace idlegrid::coordinator {
namespace {

// Task `index` of the job, or null when the job has no such task.
const v1::Task* TaskOf(const v1::Job& job, uint32_t index) {
  return index < static_cast<uint32_t>(job.tasks_size()) ? &job.tasks(static_cast<int>(index)) : nullptr;
}

}  // namespace

Status AssignmentSender::Send(const store::NewAttempt& attempt, const v1::Job* loaded) {
  v1::Job fetched;
  if (loaded == nullptr) {
    IG_ASSIGN_OR_RETURN(fetched, store_->GetJob(attempt.job_id));
    loaded = &fetched;
  }
  const v1::Job& job = *loaded;
  const v1::Task* task = TaskOf(job, attempt.index);
  v1::Command cmd;
  if (task != nullptr && task->state() == v1::CANCELLED) {
    // Cancelled while the agent was away: tell it to stop instead.
    cmd.mutable_cancel()->set_attempt_id(attempt.attempt_id);
    cmd.mutable_cancel()->set_reason("cancelled by user");
    if (!sessions_->Push(attempt.node_id, std::move(cmd))) return Status::Unavailable("node not connected");
    return Status::Ok();
  }
  // A registry image is pulled by the agent, by the digest in its spec; a
  // pushed one is downloaded from here.
  std::string archive_digest, config_digest = job.spec().registry_image().config_digest();
  std::vector<v1::ArtifactRef> image_blobs;  // a layered image's, fetched blob by blob
  if (!job.spec().has_registry_image()) {
    IG_ASSIGN_OR_RETURN(auto image, store_->GetImage(manifest::ImageDigestOf(job.spec().image())));
    if (!image) return Status::NotFound("image of job " + attempt.job_id + " vanished");
    IG_ASSIGN_OR_RETURN(image_blobs, images_->BlobsOf(*image));
    if (image_blobs.empty()) archive_digest = image->archive_digest;
    config_digest = image->config_digest;
  }
  v1::Assignment* a = cmd.mutable_assign();
  a->set_attempt_id(attempt.attempt_id);
  a->set_job_id(attempt.job_id);
  a->set_task_index(attempt.index);
  // An item array's task gets its own item's values, and no one else's.
  *a->mutable_spec() = manifest::SpecForTask(job.spec(), attempt.index);
  a->set_image_archive_digest(archive_digest);
  a->set_image_config_digest(config_digest);
  for (v1::ArtifactRef& b : image_blobs) *a->add_image_blobs() = std::move(b);
  a->set_untrusted_tenant(!job.account().empty() && job.account() != store::kOperatorAccount);
  for (v1::ImageSignature& s : images_->SignaturesOf(manifest::ImageDigestOf(job.spec().image()))) {
    *a->add_image_signatures() = std::move(s);
  }
  for (const auto& d : attempt.device_uuids) a->add_device_uuids(d);
  if (task != nullptr) {
    for (const auto& prior : task->attempts()) {
      if (prior.id() != attempt.attempt_id) continue;
      // The commit returned the epoch; a re-send (NewAttempt without one) takes the stored one.
      const uint64_t epoch = attempt.lease_epoch != 0 ? attempt.lease_epoch : prior.lease_epoch();
      a->set_lease_epoch(epoch);
      a->set_artifact_token(rights_->TokenFor(attempt.attempt_id, attempt.node_id, epoch));
      // Resume from the checkpoint this attempt was committed with.
      if (!prior.restored_from_attempt().empty() && task->checkpoint().attempt_id() == prior.restored_from_attempt()) {
        *a->mutable_restore() = task->checkpoint();
      }
    }
  }
  if (!sessions_->Push(attempt.node_id, std::move(cmd))) {
    return Status::Unavailable("node " + attempt.node_id + " is not connected");
  }
  return Status::Ok();
}

}  // namespace idlegrid::coordinator
