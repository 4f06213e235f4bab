#include "cli/client.h"

#include <grpcpp/grpcpp.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <type_traits>
#include <vector>

#include "common/artifact_client.h"
#include "common/coordinator_target.h"
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

std::string DefaultConfigFile() {
  if (!Env("IDLEGRID_CONFIG").empty()) return Env("IDLEGRID_CONFIG");
  return Env("HOME").empty() ? "" : Env("HOME") + "/.config/idlegrid/config.yaml";
}

Result<ClientConfig> ResolveConfig(const ClientConfig& explicit_values, const std::string& config_file) {
  ClientConfig c = explicit_values;
  if (c.address.empty()) c.address = Env("IDLEGRID_ADDR");
  if (c.ca_file.empty()) c.ca_file = Env("IDLEGRID_CA_FILE");
  if (c.token.empty()) c.token = Env("IDLEGRID_TOKEN");
  const std::string file = config_file.empty() ? DefaultConfigFile() : config_file;
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
  // Several coordinators (a,b): one channel that fails over between them.
  IG_ASSIGN_OR_RETURN(const std::string target, ChannelTarget(config.address, ResolveWithSystem));
  client->stub_ = v1::RequesterService::NewStub(grpc::CreateCustomChannel(target, grpc::SslCredentials(tls), args));
  return client;
}

std::unique_ptr<grpc::ClientContext> Client::Context(int deadline_ms) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->AddMetadata("authorization", "Bearer " + token_);
  if (deadline_ms > 0) ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms));
  return ctx;
}

namespace {

// Tries of one transfer while the coordinator is unavailable (restarting, or
// the network cut); each try resumes where the last one stopped.
constexpr int kTransferTries = 4;

// Runs `one_try` until it succeeds, fails for a reason other than the
// coordinator being unavailable, or runs out of tries; sums what each moved.
template <typename Try>
auto WithResumes(TransferStats* stats, Try one_try) -> decltype(one_try(stats)) {
  TransferStats total, last;
  int backoff_ms = 500;
  for (int i = 1;; ++i) {
    auto result = one_try(&last);
    total.bytes_moved += last.bytes_moved;
    total.restarts += last.restarts;
    if (i == 1) total.resumed_at = last.resumed_at;
    total.already_present = last.already_present;
    Status st = [&] {
      if constexpr (std::is_same_v<decltype(result), Status>) {
        return result;
      } else {
        return result.status();
      }
    }();
    if (st.code() != Code::kUnavailable || i == kTransferTries) {
      if (stats) *stats = total;
      return result;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));  // backoff before a new try, not a sync
    backoff_ms *= 2;
  }
}

}  // namespace

Result<v1::ArtifactRef> Client::UploadFile(const std::string& path, const std::string& kind, bool make_public,
                                           const TransferProgress& progress, TransferStats* stats) {
  TransferScope scope;
  scope.make_public = make_public;
  return WithResumes(stats, [&](TransferStats* one) {
    return UploadArtifactFile(
        stub_.get(), [this] { return Context(0); }, path, kind, scope, progress, one);
  });
}

Status Client::DownloadTo(const std::string& digest, const std::string& path, const TransferProgress& progress,
                          TransferStats* stats) {
  return WithResumes(stats, [&](TransferStats* one) {
    return DownloadArtifactFile(
        stub_.get(), [this] { return Context(0); }, digest, path, {}, progress, one);
  });
}

}  // namespace idlegrid::cli
