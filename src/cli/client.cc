#include "cli/client.h"

#include <grpcpp/grpcpp.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "api/status_map.h"
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

Result<v1::ArtifactRef> Client::UploadFile(const std::string& path, const std::string& kind) {
  IG_ASSIGN_OR_RETURN(std::string digest, Sha256File(path));
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return Status::InvalidArgument("cannot open " + path);
  std::fseek(f, 0, SEEK_END);
  auto size = static_cast<uint64_t>(std::ftell(f));
  std::fseek(f, 0, SEEK_SET);
  v1::ArtifactRef ref;
  auto ctx = Context(0);
  auto writer = stub_->UploadArtifact(ctx.get(), &ref);
  std::vector<char> buf(1 << 20);
  bool first = true;
  while (true) {
    size_t n = std::fread(buf.data(), 1, buf.size(), f);
    if (n == 0 && !first) break;
    v1::ArtifactChunk chunk;
    if (first) {
      chunk.set_digest(digest);
      chunk.set_size(size);
      chunk.set_kind(kind);
      first = false;
    }
    chunk.set_data(buf.data(), n);
    if (!writer->Write(chunk) || n == 0) break;
  }
  std::fclose(f);
  writer->WritesDone();
  IG_RETURN_IF_ERROR(api::FromGrpc(writer->Finish()).WithContext("upload " + path));
  if (ref.digest() != digest) return Status::DataLoss("coordinator stored " + ref.digest() + ", expected " + digest);
  return ref;
}

Status Client::DownloadTo(const std::string& digest, const std::string& path) {
  v1::DownloadArtifactRequest req;
  req.set_digest(digest);
  auto ctx = Context(0);
  auto reader = stub_->DownloadArtifact(ctx.get(), req);
  std::string tmp = path + ".part";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return Status::Internal("cannot create " + tmp);
  Sha256 hash;
  v1::ArtifactChunk chunk;
  while (reader->Read(&chunk)) {
    hash.Update(chunk.data());
    std::fwrite(chunk.data().data(), 1, chunk.data().size(), f);
  }
  bool write_ok = std::fflush(f) == 0;
  std::fclose(f);
  Status st = api::FromGrpc(reader->Finish());
  std::string got = hash.Finish();
  if (st.ok() && !write_ok) st = Status::Internal("cannot write " + tmp);
  if (st.ok() && got != digest) st = Status::DataLoss(path + ": received bytes hash to " + got + ", expected " + digest);
  if (!st.ok()) {
    std::remove(tmp.c_str());
    return st;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return Status::Internal("cannot rename " + tmp);
  return Status::Ok();
}

}  // namespace idlegrid::cli
