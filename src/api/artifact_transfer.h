#pragma once
// Streaming artifact upload and download, shared by the requester and agent
// services. Both directions verify sha256 as the bytes pass, and log one line
// of metadata per completed transfer (digest, size, kind, who) -- never bytes
// of the artifact. `who` names the caller in that line: "requester",
// "node <id>".
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/sync_stream.h>

#include <functional>

#include "coordinator/coordinator.h"
#include "idlegrid/v1/idlegrid.grpc.pb.h"

namespace idlegrid::api {

// `account`: the requester account uploading (its store quota applies and it
// holds the blob); "" for an agent's upload (the job holds its outputs).
// `admit` checks the first chunk (an agent's attempt and token) before a
// byte is stored.
grpc::Status ReceiveArtifact(coordinator::Coordinator* c, grpc::ServerReader<v1::ArtifactChunk>* reader,
                             v1::ArtifactRef* out, const std::string& account, const std::string& who,
                             const std::function<Status(const v1::ArtifactChunk&)>& admit = nullptr);
grpc::Status SendArtifact(coordinator::Coordinator* c, const v1::DownloadArtifactRequest& req,
                          grpc::ServerWriter<v1::ArtifactChunk>* writer, const std::string& who);

}  // namespace idlegrid::api
