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
  std::string address;  // host:port of the gRPC API
  std::string ca_file;  // PEM of the coordinator's CA
  std::string token;    // API token
};

// Resolution order: explicit values, then IDLEGRID_ADDR / IDLEGRID_CA_FILE /
// IDLEGRID_TOKEN, then the YAML file named by IDLEGRID_CONFIG (or
// ~/.config/idlegrid/config.yaml) with keys address, ca_file, token.
// InvalidArgument naming what is missing and where it was looked for.
Result<ClientConfig> ResolveConfig(const ClientConfig& explicit_values, const std::string& config_file);
// The config file ResolveConfig reads when none is named: IDLEGRID_CONFIG,
// else ~/.config/idlegrid/config.yaml; "" without either.
std::string DefaultConfigFile();

class Client {
 public:
  static Result<std::unique_ptr<Client>> Connect(const ClientConfig& config);
  v1::RequesterService::Stub* stub() { return stub_.get(); }
  // A context carrying the token, with a deadline (0 = none).
  std::unique_ptr<grpc::ClientContext> Context(int deadline_ms = 30000) const;
  // Uploads a file as an artifact, verifying the digest on both ends, and
  // resuming (common/artifact_client.h): a blob the coordinator already
  // holds for this account is not sent, an interrupted upload goes on from
  // the bytes it left there, within this call (a few tries while the
  // coordinator is unavailable) and in a later one.
  // `make_public`: any account may read it (else only this token's account).
  // `progress` (may be empty) is told the bytes the coordinator holds after
  // each chunk; `stats` (may be null) what this call moved, every try summed.
  Result<v1::ArtifactRef> UploadFile(const std::string& path, const std::string& kind, bool make_public = false,
                                     const TransferProgress& progress = {}, TransferStats* stats = nullptr);
  // Downloads an artifact to `path` via `path.part`, verifying its digest and
  // resuming after what a part left by an interrupted download holds;
  // `progress` (may be empty) is told the bytes held after each chunk;
  // `stats` as for UploadFile.
  Status DownloadTo(const std::string& digest, const std::string& path, const TransferProgress& progress = {},
                    TransferStats* stats = nullptr);

 private:
  std::string token_;
  std::unique_ptr<v1::RequesterService::Stub> stub_;
};

}  // namespace idlegrid::cli
