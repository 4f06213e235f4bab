#include "api/artifact_transfer.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <vector>

#include "common/grpc_status.h"
#include "common/digest.h"

namespace idlegrid::api {

namespace {
constexpr size_t kChunk = 1 << 20;
}

grpc::Status ReceiveArtifact(coordinator::Coordinator* c, grpc::ServerReader<v1::ArtifactChunk>* reader,
                             v1::ArtifactRef* out, const std::string& account, const std::string& who,
                             const std::function<Status(const v1::ArtifactChunk&)>& admit) {
  v1::ArtifactChunk chunk;
  if (!reader->Read(&chunk)) return ToGrpc(Status::InvalidArgument("empty upload"));
  if (admit) {
    Status allowed = admit(chunk);
    if (!allowed.ok()) return ToGrpc(allowed);
  }
  std::string kind = chunk.kind().empty() ? "input" : chunk.kind();
  const bool make_public = chunk.public_();
  if (!account.empty()) {
    // Refused before a byte is written: the declared size counts.
    Status quota = c->tenancy().CheckStoreQuota(account, chunk.size());
    if (!quota.ok()) return ToGrpc(quota);
  }
  auto writer = c->artifact_store()->NewWriter(chunk.digest(), chunk.size());
  if (!writer.ok()) return ToGrpc(writer.status());
  do {
    Status st = (*writer)->Append(chunk.data().data(), chunk.data().size());
    if (!st.ok()) return ToGrpc(st);
  } while (reader->Read(&chunk));
  auto digest = (*writer)->Commit();
  if (!digest.ok()) return ToGrpc(digest.status());
  Status st = c->RecordArtifact(*digest, (*writer)->size(), kind);
  if (!st.ok()) return ToGrpc(st);
  if (!account.empty()) {
    st = c->HoldUpload(*digest, account, make_public);
    if (!st.ok()) return ToGrpc(st);
  }
  out->set_digest(*digest);
  out->set_size((*writer)->size());
  spdlog::info("transfer: received {} ({} bytes, {}) from {}", *digest, (*writer)->size(), kind, who);
  c->CountArtifactBytes(true, (*writer)->size());
  return grpc::Status::OK;
}

grpc::Status SendArtifact(coordinator::Coordinator* c, const v1::DownloadArtifactRequest& req,
                          grpc::ServerWriter<v1::ArtifactChunk>* writer, const std::string& who) {
  if (!IsValidDigest(req.digest())) {
    return ToGrpc(Status::InvalidArgument("digest must be sha256:<64 hex>, got '" + req.digest() + "'"));
  }
  auto size = c->artifact_store()->SizeOf(req.digest());
  if (!size.ok()) return ToGrpc(size.status());
  FILE* f = std::fopen(c->artifact_store()->PathOf(req.digest()).c_str(), "rb");
  if (!f) return ToGrpc(Status::NotFound("artifact " + req.digest() + " cannot be opened"));
  // Hash while sending: a blob that rotted on disk is caught here, not by the reader.
  Sha256 hash;
  std::vector<char> buf(kChunk);
  uint64_t offset = 0;
  bool first = true;
  while (true) {
    size_t n = std::fread(buf.data(), 1, buf.size(), f);
    if (n == 0) break;
    hash.Update(buf.data(), n);
    uint64_t end = offset + n;
    if (end > req.offset()) {
      size_t skip = req.offset() > offset ? static_cast<size_t>(req.offset() - offset) : 0;
      v1::ArtifactChunk chunk;
      if (first) {
        chunk.set_digest(req.digest());
        chunk.set_size(*size);
        first = false;
      }
      chunk.set_data(buf.data() + skip, n - skip);
      if (!writer->Write(chunk)) {
        std::fclose(f);
        return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
      }
    }
    offset = end;
  }
  std::fclose(f);
  if (hash.Finish() != req.digest()) {
    return ToGrpc(Status::DataLoss("stored artifact " + req.digest() + " is corrupt"));
  }
  if (first) {  // empty blob or offset at the end: still say what it is
    v1::ArtifactChunk chunk;
    chunk.set_digest(req.digest());
    chunk.set_size(*size);
    writer->Write(chunk);
  }
  spdlog::info("transfer: sent {} ({} bytes from offset {}) to {}", req.digest(), *size, req.offset(), who);
  c->CountArtifactBytes(false, *size > req.offset() ? *size - req.offset() : 0);
  return grpc::Status::OK;
}

}  // namespace idlegrid::api
