// Artifact download and upload for the agent: digests are checked while the
// bytes move, and nothing unverified is ever handed to podman or a job.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <vector>

#include "agent/agent.h"
#include "common/digest.h"

namespace idlegrid::agent {

Status Agent::Download(const std::string& digest, const std::string& path) {
  v1::DownloadArtifactRequest req;
  req.set_digest(digest);
  auto ctx = Context(600000);
  auto reader = stub_->DownloadArtifact(ctx.get(), req);
  std::string tmp = path + ".part";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return Status::Internal("cannot create " + tmp);
  Sha256 hash;
  v1::ArtifactChunk chunk;
  while (reader->Read(&chunk)) {
    hash.Update(chunk.data());
    if (std::fwrite(chunk.data().data(), 1, chunk.data().size(), f) != chunk.data().size()) {
      std::fclose(f);
      std::remove(tmp.c_str());
      return Status::Internal("cannot write " + tmp);
    }
  }
  std::fclose(f);
  grpc::Status s = reader->Finish();
  if (!s.ok()) {
    std::remove(tmp.c_str());
    return Status::Unavailable("download of " + digest + " failed: " + s.error_message());
  }
  std::string got = hash.Finish();
  if (got != digest) {
    std::remove(tmp.c_str());
    return Status::DataLoss("artifact " + digest + " arrived as " + got + "; discarded");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return Status::Internal("cannot rename " + tmp);
  return Status::Ok();
}

Result<v1::OutputFile> Agent::Upload(const std::string& path, const std::string& rel) {
  IG_ASSIGN_OR_RETURN(std::string digest, Sha256File(path));
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return Status::Internal("cannot open output " + path);
  std::fseek(f, 0, SEEK_END);
  uint64_t size = static_cast<uint64_t>(std::ftell(f));
  std::fseek(f, 0, SEEK_SET);
  v1::ArtifactRef ref;
  auto ctx = Context(600000);
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
      chunk.set_kind("output");
      first = false;
    }
    chunk.set_data(buf.data(), n);
    if (!writer->Write(chunk)) break;
    if (n == 0) break;
  }
  std::fclose(f);
  writer->WritesDone();
  grpc::Status s = writer->Finish();
  if (!s.ok()) return Status::Unavailable("upload of " + rel + " failed: " + s.error_message());
  v1::OutputFile out;
  out.set_path(rel);
  out.set_digest(ref.digest());
  out.set_size(ref.size());
  return out;
}

}  // namespace idlegrid::agent
