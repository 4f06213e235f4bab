#pragma once
// Streaming artifact upload and download, shared by the requester and agent
// services. Both directions verify sha256 as the bytes pass, and log one line
// of metadata per completed transfer (digest, size, kind, who) -- never bytes
// of the artifact. `who` names the caller in that line: "requester",
// "node <id>".
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/sync_stream.h>

#include "coordinator/coordinator.h"
#include "idlegrid/v1/idlegrid.grpc.pb.h"

namespace idlegrid::api {

grpc::Status ReceiveArtifact(coordinator::Coordinator* c, grpc::ServerReader<v1::ArtifactChunk>* reader,
                             v1::ArtifactRef* out, const std::string& who);
grpc::Status SendArtifact(coordinator::Coordinator* c, const v1::DownloadArtifactRequest& req,
                          grpc::ServerWriter<v1::ArtifactChunk>* writer, const std::string& who);

}  // namespace idlegrid::api
