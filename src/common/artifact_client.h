#pragma once
// Client side of artifact transfer, shared by the agent (AgentService) and the
// requester CLI (RequesterService): both stubs have the same UploadArtifact /
// DownloadArtifact methods. The digest is computed before an upload and
// checked while a download is written; a file that does not hash to what was
// asked for is never left in place.
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/digest.h"
#include "common/grpc_status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid {

// Who an upload or download is for: an agent names the attempt and its
// artifact token (Assignment.artifact_token); a requester leaves it empty and
// may mark an upload public.
struct TransferScope {
  std::string attempt_id;
  std::string attempt_token;
  bool make_public = false;
};

// Called with the bytes sent (or received) so far, after each chunk: what a
// progress display shows. May be empty.
using TransferProgress = std::function<void(uint64_t bytes_so_far)>;

template <typename Stub>
Result<v1::ArtifactRef> UploadArtifactFile(Stub* stub, grpc::ClientContext* ctx, const std::string& path,
                                           const std::string& kind, const TransferScope& scope = {},
                                           const TransferProgress& progress = {}) {
  IG_ASSIGN_OR_RETURN(std::string digest, Sha256File(path));
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return Status::InvalidArgument("cannot open " + path);
  std::fseek(f.get(), 0, SEEK_END);
  auto size = static_cast<uint64_t>(std::ftell(f.get()));
  std::fseek(f.get(), 0, SEEK_SET);
  v1::ArtifactRef ref;
  auto writer = stub->UploadArtifact(ctx, &ref);
  std::vector<char> buf(1 << 20);
  bool first = true;
  uint64_t sent = 0;
  while (true) {
    size_t n = std::fread(buf.data(), 1, buf.size(), f.get());
    if (n == 0 && !first) break;
    v1::ArtifactChunk chunk;
    if (first) {  // the first chunk announces what is coming, so the receiver can verify it
      chunk.set_digest(digest);
      chunk.set_size(size);
      chunk.set_kind(kind);
      chunk.set_attempt_id(scope.attempt_id);
      chunk.set_attempt_token(scope.attempt_token);
      chunk.set_public_(scope.make_public);
      first = false;
    }
    chunk.set_data(buf.data(), n);
    if (!writer->Write(chunk) || n == 0) break;
    sent += n;
    if (progress) progress(sent);
  }
  writer->WritesDone();
  IG_RETURN_IF_ERROR(FromGrpc(writer->Finish()).WithContext("upload of " + path));
  if (ref.digest() != digest) return Status::DataLoss("coordinator stored " + ref.digest() + ", expected " + digest);
  return ref;
}

template <typename Stub>
Status DownloadArtifactFile(Stub* stub, grpc::ClientContext* ctx, const std::string& digest, const std::string& path,
                            const TransferScope& scope = {}, const TransferProgress& progress = {}) {
  v1::DownloadArtifactRequest req;
  req.set_digest(digest);
  req.set_attempt_id(scope.attempt_id);
  req.set_attempt_token(scope.attempt_token);
  auto reader = stub->DownloadArtifact(ctx, req);
  std::string tmp = path + ".part";
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(tmp.c_str(), "wb"), &std::fclose);
  if (!f) return Status::Internal("cannot create " + tmp);
  Sha256 hash;
  bool write_ok = true;
  uint64_t received = 0;
  v1::ArtifactChunk chunk;
  while (reader->Read(&chunk)) {
    hash.Update(chunk.data());
    write_ok = write_ok && std::fwrite(chunk.data().data(), 1, chunk.data().size(), f.get()) == chunk.data().size();
    received += chunk.data().size();
    if (progress) progress(received);
  }
  write_ok = std::fflush(f.get()) == 0 && write_ok;
  f.reset();
  Status st = FromGrpc(reader->Finish()).WithContext("download of " + digest);
  std::string got = hash.Finish();
  if (st.ok() && !write_ok) st = Status::Internal("cannot write " + tmp);
  if (st.ok() && got != digest) st = Status::DataLoss(digest + " arrived as " + got + "; discarded");
  if (!st.ok()) {
    std::remove(tmp.c_str());
    return st;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return Status::Internal("cannot rename " + tmp);
  return Status::Ok();
}

}  // namespace idlegrid
