#pragma once
// Streaming artifact upload and download, shared by the requester and agent
// services. Both directions verify sha256 as the bytes pass, and log one line
// of metadata per completed transfer (digest, size, kind, who) -- never bytes
// of the artifact. `who` names the caller in that line ("account <name>",
// "node <id>") and keys its interrupted uploads: an upload that announces its
// digest and size and stops early keeps its bytes for that caller alone to
// resume (ArtifactChunk.offset; artifacts/artifact_store.h).
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/sync_stream.h>

#include <functional>
#include <optional>
#include <string_view>

#include "coordinator/coordinator.h"
#include "idlegrid/v1/idlegrid.grpc.pb.h"

namespace idlegrid::api {

// One piece of an upload over HTTPS (PUT /v1/artifacts/DIGEST with
// Content-Range): bytes [offset, offset + size) of the blob `digest`, of
// `total` bytes. Pieces go in order; what arrived is kept between them for
// this uploader alone (StatArtifact's partial_bytes says where to go on).
struct UploadPiece {
  std::string digest;
  uint64_t offset = 0;
  uint64_t total = 0;
  std::string kind;  // "" : input
  bool make_public = false;
};
// The blob's ArtifactRef once this piece completes it (its digest checked:
// DataLoss otherwise, and nothing is kept), empty while pieces remain.
// FailedPrecondition when `offset` is not where the kept bytes end.
Result<std::optional<v1::ArtifactRef>> ReceivePiece(coordinator::Coordinator* c, const UploadPiece& piece,
                                                    std::string_view data, const std::string& account,
                                                    const std::string& who);

// `account`: the requester account uploading (its store quota applies, its
// interrupted uploads counted in, and it holds the blob); "" for an agent's
// upload (the job holds its outputs). A first chunk with offset N resumes:
// FailedPrecondition if fewer than N bytes are kept, DataLoss (the kept bytes
// discarded) if the whole does not hash to the announced digest. An upload
// that stops early answers UNAVAILABLE and keeps what arrived.
// `admit` checks the first chunk (an agent's attempt and token) before a
// byte is stored.
grpc::Status ReceiveArtifact(coordinator::Coordinator* c, grpc::ServerReader<v1::ArtifactChunk>* reader,
                             v1::ArtifactRef* out, const std::string& account, const std::string& who,
                             const std::function<Status(const v1::ArtifactChunk&)>& admit = nullptr);
// Sends the blob from req.offset (the whole blob is still hashed, so one that
// rotted on disk ends in DataLoss).
grpc::Status SendArtifact(coordinator::Coordinator* c, const v1::DownloadArtifactRequest& req,
                          grpc::ServerWriter<v1::ArtifactChunk>* writer, const std::string& who);
// What the store holds of `digest` for `who` (its partial_bytes), and
// whether it is present: `may_read` says if the caller may read a stored
// blob (else it is reported absent); its error is the answer. InvalidArgument
// for a malformed digest.
Result<v1::ArtifactStat> StatArtifact(coordinator::Coordinator* c, const std::string& digest, const std::string& who,
                                      const std::function<Result<bool>(const std::string& digest)>& may_read);

}  // namespace idlegrid::api
