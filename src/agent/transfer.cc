// Artifact download and upload for the agent: digests are checked while the
// bytes move, and nothing unverified is ever handed to podman or a job.
#include "agent/agent.h"
#include "common/artifact_client.h"

namespace idlegrid::agent {

Status Agent::Download(const std::string& digest, const std::string& path) {
  auto ctx = Context(600000);
  return DownloadArtifactFile(stub_.get(), ctx.get(), digest, path);
}

Result<v1::OutputFile> Agent::Upload(const std::string& path, const std::string& rel) {
  auto ctx = Context(600000);
  IG_ASSIGN_OR_RETURN(v1::ArtifactRef ref, UploadArtifactFile(stub_.get(), ctx.get(), path, "output"));
  v1::OutputFile out;
  out.set_path(rel);
  out.set_digest(ref.digest());
  out.set_size(ref.size());
  return out;
}

}  // namespace idlegrid::agent
