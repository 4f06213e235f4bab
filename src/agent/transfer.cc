// Artifact download and upload for the agent: digests are checked while the
// bytes move, and nothing unverified is ever handed to podman or a job. A
// coordinator that is restarting (or a network cut) must not fail the job:
// calls wait for the channel to come back and are retried, each retry going on
// from where the last one stopped (common/artifact_client.h: an upload's
// bytes the coordinator kept, a download's .part file).
#include <spdlog/spdlog.h>

#include <thread>

#include "agent/agent.h"
#include "common/artifact_client.h"

namespace idlegrid::agent {

namespace {

constexpr int kTransferTries = 8;

template <typename Fn>
auto WithRetries(const std::string& what, Fn fn) -> decltype(fn()) {
  int backoff_ms = 250;
  for (int i = 1;; ++i) {
    auto result = fn();
    Status st = [&] {
      if constexpr (std::is_same_v<decltype(result), Status>) {
        return result;
      } else {
        return result.status();
      }
    }();
    if (st.code() != Code::kUnavailable || i == kTransferTries) return result;
    spdlog::warn("{}: {}; retrying in {} ms", what, st.message(), backoff_ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));  // backoff before a new try, not a sync
    backoff_ms = std::min(backoff_ms * 2, 10000);
  }
}

}  // namespace

Status Agent::Download(const std::string& digest, const std::string& path) {
  std::optional<AttemptGrant> grant = grants_.ForDownload(digest);
  if (!grant) return Status::FailedPrecondition("no attempt of this agent needs " + digest);
  const TransferScope scope{grant->attempt_id, grant->token};
  // Ten minutes a call: a retry resumes, so a deadline costs no bytes twice.
  auto new_context = [this] {
    auto ctx = Context(600000);
    ctx->set_wait_for_ready(true);
    return ctx;
  };
  return WithRetries("download of " + digest,
                     [&] { return DownloadArtifactFile(stub_.get(), new_context, digest, path, scope); });
}

Result<v1::OutputFile> Agent::Upload(const std::string& path, const std::string& rel) {
  std::optional<AttemptGrant> grant = grants_.ForUpload(path, config_.data_dir + "/attempts");
  if (!grant) return Status::FailedPrecondition(path + " is not in a running attempt's directory");
  const TransferScope scope{grant->attempt_id, grant->token};
  // Ten minutes a call: a retry resumes, so a deadline costs no bytes twice.
  auto new_context = [this] {
    auto ctx = Context(600000);
    ctx->set_wait_for_ready(true);
    return ctx;
  };
  auto ref = WithRetries("upload of " + rel,
                         [&] { return UploadArtifactFile(stub_.get(), new_context, path, "output", scope); });
  if (!ref.ok()) return ref.status();
  v1::OutputFile out;
  out.set_path(rel);
  out.set_digest(ref->digest());
  out.set_size(ref->size());
  return out;
}

}  // namespace idlegrid::agent
