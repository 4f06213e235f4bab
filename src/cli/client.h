#pragma once
// The requester's side: where to find the coordinator, and a thin client over
// the gRPC RequesterService.
#include <memory>
#include <string>

#include "common/artifact_client.h"
#include "common/status.h"
#include "idlegrid/v1/idlegrid.grpc.pb.h"

namespace idlegrid::cli {

struct ClientConfig {
  std::string address;   // host:port of the gRPC API
  std::string ca_file;   // PEM of the coordinator's CA
  std::string token;     // API token
};

// Resolution order: explicit values, then IDLEGRID_ADDR / IDLEGRID_CA_FILE /
// IDLEGRID_TOKEN, then the YAML file named by IDLEGRID_CONFIG (or
// ~/.config/idlegrid/config.yaml) with keys address, ca_file, token.
// InvalidArgument naming what is missing and where it was looked for.
Result<ClientConfig> ResolveConfig(const ClientConfig& explicit_values, const std::string& config_file);

class Client {
 public:
  static Result<std::unique_ptr<Client>> Connect(const ClientConfig& config);
  v1::RequesterService::Stub* stub() { return stub_.get(); }
  // A context carrying the token, with a deadline (0 = none).
  std::unique_ptr<grpc::ClientContext> Context(int deadline_ms = 30000) const;
  // Uploads a file as an artifact, verifying the digest on both ends.
  // `make_public`: any account may read it (else only this token's account).
  // `progress` (may be empty) is told the bytes sent after each chunk.
  Result<v1::ArtifactRef> UploadFile(const std::string& path, const std::string& kind, bool make_public = false,
                                     const TransferProgress& progress = {});
  // Downloads an artifact to `path` (via a temp file), verifying its digest;
  // `progress` (may be empty) is told the bytes received after each chunk.
  Status DownloadTo(const std::string& digest, const std::string& path, const TransferProgress& progress = {});

 private:
  std::string token_;
  std::unique_ptr<v1::RequesterService::Stub> stub_;
};

}  // namespace idlegrid::cli
