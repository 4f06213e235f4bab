#include "cli/client.h"

#include <grpcpp/grpcpp.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/artifact_client.h"
#include "common/grpc_status.h"
#include "common/digest.h"
#include "common/fs.h"

namespace idlegrid::cli {

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

Result<ClientConfig> ResolveConfig(const ClientConfig& explicit_values, const std::string& config_file) {
  ClientConfig c = explicit_values;
  if (c.address.empty()) c.address = Env("IDLEGRID_ADDR");
  if (c.ca_file.empty()) c.ca_file = Env("IDLEGRID_CA_FILE");
  if (c.token.empty()) c.token = Env("IDLEGRID_TOKEN");
  std::string file = config_file.empty() ? Env("IDLEGRID_CONFIG") : config_file;
  if (file.empty() && !Env("HOME").empty()) file = Env("HOME") + "/.config/idlegrid/config.yaml";
  if ((c.address.empty() || c.ca_file.empty() || c.token.empty()) && PathExists(file)) {
    try {
      YAML::Node y = YAML::LoadFile(file);
      if (c.address.empty() && y["address"]) c.address = y["address"].as<std::string>();
      if (c.ca_file.empty() && y["ca_file"]) c.ca_file = y["ca_file"].as<std::string>();
      if (c.token.empty() && y["token"]) c.token = y["token"].as<std::string>();
    } catch (const YAML::Exception& e) {
      return Status::InvalidArgument(file + ": " + e.what());
    }
  }
  std::string missing;
  if (c.address.empty()) missing += " address (--addr, IDLEGRID_ADDR)";
  if (c.ca_file.empty()) missing += " CA file (--ca-file, IDLEGRID_CA_FILE)";
  if (c.token.empty()) missing += " token (--token, IDLEGRID_TOKEN)";
  if (!missing.empty()) {
    return Status::InvalidArgument("no coordinator configured; missing" + missing + " and no config file at " +
                                   (file.empty() ? "~/.config/idlegrid/config.yaml" : file) +
                                   " (the coordinator writes one to DATA_DIR/client.yaml)");
  }
  return c;
}

Result<std::unique_ptr<Client>> Client::Connect(const ClientConfig& config) {
  IG_ASSIGN_OR_RETURN(std::string ca, ReadFile(config.ca_file));
  grpc::SslCredentialsOptions tls;
  tls.pem_root_certs = ca;
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride("idlegrid-coordinator");
  args.SetMaxReceiveMessageSize(64 << 20);
  auto client = std::make_unique<Client>();
  client->token_ = config.token;
  client->stub_ = v1::RequesterService::NewStub(
      grpc::CreateCustomChannel(config.address, grpc::SslCredentials(tls), args));
  return client;
}

std::unique_ptr<grpc::ClientContext> Client::Context(int deadline_ms) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->AddMetadata("authorization", "Bearer " + token_);
  if (deadline_ms > 0) ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms));
  return ctx;
}

Result<v1::ArtifactRef> Client::UploadFile(const std::string& path, const std::string& kind, bool make_public,
                                           const TransferProgress& progress) {
  auto ctx = Context(0);
  TransferScope scope;
  scope.make_public = make_public;
  return UploadArtifactFile(stub_.get(), ctx.get(), path, kind, scope, progress);
}

Status Client::DownloadTo(const std::string& digest, const std::string& path, const TransferProgress& progress) {
  auto ctx = Context(0);
  return DownloadArtifactFile(stub_.get(), ctx.get(), digest, path, {}, progress);
}

}  // namespace idlegrid::cli
