// Who may move which artifact (artifact_rights.h).
#include "coordinator/artifact_rights.h"

#include <spdlog/spdlog.h>

#include "auth/credentials.h"
#include "common/digest.h"
#include "jobs/lease.h"
#include "manifest/items.h"
#include "manifest/manifest.h"

namespace idlegrid::coordinator {

ArtifactRights::ArtifactRights(store::Store* store, ImageCatalog* images, const Clock* clock,
                               const std::string& join_secret)
    : store_(store), images_(images), clock_(clock), key_(Sha256Digest("idlegrid artifact tokens\n" + join_secret)) {}

std::string ArtifactRights::TokenFor(const std::string& attempt_id, const std::string& node_id, uint64_t epoch) const {
  return auth::AttemptToken(key_, attempt_id, node_id, epoch);
}

Result<store::ActiveAttempt> ArtifactRights::LiveAttemptFor(const std::string& node_id, const std::string& attempt_id,
                                                            const std::string& token) {
  IG_ASSIGN_OR_RETURN(auto active, store_->ActiveAttempts());
  for (const store::ActiveAttempt& a : active) {
    if (a.attempt_id != attempt_id || a.node_id != node_id) continue;
    if (!auth::SameHash(token, auth::AttemptToken(key_, attempt_id, node_id, a.lease_epoch))) break;
    return a;
  }
  spdlog::warn("node {} refused an artifact transfer for attempt {}: not its live attempt, or a wrong token", node_id,
               attempt_id.substr(0, 64));
  return Status::NotFound("no live attempt " + attempt_id.substr(0, 64) + " with this artifact token for this node");
}

Status ArtifactRights::NodeMayRead(const std::string& node_id, const std::string& attempt_id, const std::string& token,
                                   const std::string& digest) {
  IG_ASSIGN_OR_RETURN(store::ActiveAttempt a, LiveAttemptFor(node_id, attempt_id, token));
  IG_ASSIGN_OR_RETURN(v1::Job job, store_->GetJob(a.job_id));
  // Only this task's inputs: another task's shard is not this attempt's to read.
  for (const v1::InputSpec& input : manifest::InputsForTask(job.spec(), a.index)) {
    if (input.artifact() == digest) return Status::Ok();
  }
  IG_ASSIGN_OR_RETURN(auto image, store_->GetImage(manifest::ImageDigestOf(job.spec().image())));
  if (image && image->archive_digest == digest) return Status::Ok();
  if (image) {
    IG_ASSIGN_OR_RETURN(std::vector<v1::ArtifactRef> blobs, images_->BlobsOf(*image));
    for (const v1::ArtifactRef& b : blobs) {
      if (b.digest() == digest) return Status::Ok();
    }
  }
  for (const auto& task : job.tasks()) {
    if (task.index() != a.index) continue;
    for (const auto& f : task.checkpoint().files()) {
      for (const std::string& blob : jobs::CheckpointBlobs(f)) {
        if (blob == digest) return Status::Ok();
      }
    }
  }
  spdlog::warn("node {} refused artifact {}: attempt {} does not use it", node_id, digest.substr(0, 80), attempt_id);
  return Status::NotFound("no artifact " + digest.substr(0, 80) + " for attempt " + attempt_id);
}

Status ArtifactRights::NodeMayWrite(const std::string& node_id, const std::string& attempt_id,
                                    const std::string& token) {
  return LiveAttemptFor(node_id, attempt_id, token).status();
}

Status ArtifactRights::Record(const std::string& digest, uint64_t size, const std::string& kind) {
  return store_->RecordArtifact(digest, size, kind, clock_->NowMs());
}

Status ArtifactRights::HoldUpload(const std::string& digest, const std::string& account, bool make_public) {
  IG_RETURN_IF_ERROR(
      store_->AddArtifactRefs({{digest, "upload:" + account, account, clock_->NowMs() + kUploadGraceMs}}));
  if (make_public) IG_RETURN_IF_ERROR(store_->SetArtifactPublic(digest));
  return Status::Ok();
}

}  // namespace idlegrid::coordinator
