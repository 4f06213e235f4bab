#include "api/artifact_transfer.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <optional>
#include <string_view>
#include <vector>

#include "artifacts/artifact_store.h"
#include "common/digest.h"
#include "common/grpc_status.h"

namespace idlegrid::api {

namespace {
constexpr size_t kChunk = 1 << 20;

// The last step of every upload: the blob committed (its digest checked),
// recorded, held by the uploading account.
Status FinishUpload(coordinator::Coordinator* c, artifacts::BlobWriter& writer, const std::string& kind,
                    const std::string& account, bool make_public, uint64_t resumed_at, const std::string& who,
                    v1::ArtifactRef* out) {
  IG_ASSIGN_OR_RETURN(std::string digest, writer.Commit());
  IG_RETURN_IF_ERROR(c->artifact_rights().Record(digest, writer.size(), kind));
  if (!account.empty()) IG_RETURN_IF_ERROR(c->artifact_rights().HoldUpload(digest, account, make_public));
  out->set_digest(digest);
  out->set_size(writer.size());
  spdlog::info("transfer: received {} ({} bytes, {}{}) from {}", digest, writer.size(), kind,
               resumed_at > 0 ? ", resumed at " + std::to_string(resumed_at) : std::string(), who);
  return Status::Ok();
}

// The store quota an upload of `size` bytes of `digest` needs, counting the
// caller's other interrupted uploads.
Status CheckUploadQuota(coordinator::Coordinator* c, const std::string& account, const std::string& who,
                        const std::string& digest, uint64_t size) {
  const uint64_t partials = c->artifact_store()->PartialBytesOf(who, digest);
  Status quota = c->tenancy().CheckStoreQuota(account, size + partials);
  if (!quota.ok() && partials > 0) {
    quota = quota.WithContext("counting " + std::to_string(partials) +
                              " bytes of interrupted uploads (resume them, or they expire after 24 h)");
  }
  return quota;
}

}  // namespace

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
  const std::string announced = chunk.digest();
  const uint64_t announced_size = chunk.size();
  const uint64_t offset = chunk.offset();
  // Only an upload that says what it is can be resumed: the partial is
  // keyed by its digest, and "complete" needs its size.
  const bool resumable = IsValidDigest(announced) && announced_size > 0;
  if (offset > 0 && !resumable) {
    return ToGrpc(Status::InvalidArgument("a resumed upload (offset " + std::to_string(offset) +
                                          ") must announce its digest and size"));
  }
  artifacts::ArtifactStore* store = c->artifact_store();
  if (!account.empty()) {
    // Refused before a byte is written: the declared size counts, and so do
    // the caller's other interrupted uploads (this one's kept bytes are part
    // of the declared size).
    Status quota = resumable ? CheckUploadQuota(c, account, who, announced, announced_size)
                             : c->tenancy().CheckStoreQuota(account, announced_size);
    if (!quota.ok()) return ToGrpc(quota);
  }
  auto writer = resumable ? store->NewResumableWriter(announced, announced_size, who, offset)
                          : store->NewWriter(announced, announced_size);
  if (!writer.ok()) return ToGrpc(writer.status());
  do {
    Status st = (*writer)->Append(chunk.data().data(), chunk.data().size());
    if (!st.ok()) return ToGrpc(st);
  } while (reader->Read(&chunk));
  const uint64_t moved = (*writer)->size() - offset;
  c->CountArtifactBytes(true, moved);
  if ((*writer)->size() < announced_size && resumable) {
    // The stream ended early (a cancel, a cut): keep what arrived.
    const uint64_t kept = (*writer)->size();
    writer->reset();
    spdlog::info("transfer: upload of {} from {} stopped at {} of {} bytes; kept for a resume", announced, who, kept,
                 announced_size);
    return ToGrpc(Status(Code::kUnavailable, "upload of " + announced + " stopped after " + std::to_string(kept) +
                                                 " of " + std::to_string(announced_size) +
                                                 " bytes; they are kept: resume at offset " + std::to_string(kept)));
  }
  return ToGrpc(FinishUpload(c, **writer, kind, account, make_public, offset, who, out));
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
  v1::ArtifactChunk chunk;
  uint64_t offset = 0;
  bool first = true;
  while (true) {
    // Read straight into the message: no copy of the payload on this side.
    std::string* data = chunk.mutable_data();
    data->resize(kChunk);
    size_t n = std::fread(data->data(), 1, kChunk, f);
    data->resize(n);
    if (n == 0) break;
    hash.Update(data->data(), n);
    uint64_t end = offset + n;
    if (end > req.offset()) {
      if (req.offset() > offset) data->erase(0, static_cast<size_t>(req.offset() - offset));
      if (first) {
        chunk.set_digest(req.digest());
        chunk.set_size(*size);
      }
      if (!writer->Write(chunk)) {
        std::fclose(f);
        return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
      }
      if (first) {
        chunk.clear_digest();
        chunk.clear_size();
        first = false;
      }
    }
    offset = end;
  }
  std::fclose(f);
  if (hash.Finish() != req.digest()) {
    return ToGrpc(Status::DataLoss("stored artifact " + req.digest() + " is corrupt"));
  }
  if (first) {  // empty blob or offset at the end: still say what it is
    v1::ArtifactChunk header;
    header.set_digest(req.digest());
    header.set_size(*size);
    writer->Write(header);
  }
  spdlog::info("transfer: sent {} ({} bytes from offset {}) to {}", req.digest(), *size, req.offset(), who);
  c->CountArtifactBytes(false, *size > req.offset() ? *size - req.offset() : 0);
  return grpc::Status::OK;
}

Result<v1::ArtifactStat> StatArtifact(coordinator::Coordinator* c, const std::string& digest, const std::string& who,
                                      const std::function<Result<bool>(const std::string& digest)>& may_read) {
  if (!IsValidDigest(digest)) {
    return Status::InvalidArgument("digest must be sha256:<64 hex>, got '" + digest.substr(0, 80) + "'");
  }
  v1::ArtifactStat stat;
  stat.set_digest(digest);
  artifacts::ArtifactStore* store = c->artifact_store();
  if (auto size = store->SizeOf(digest); size.ok()) {
    IG_ASSIGN_OR_RETURN(bool readable, may_read(digest));
    if (readable) {
      stat.set_present(true);
      stat.set_size(*size);
    }
  }
  stat.set_partial_bytes(store->PartialBytes(digest, who));
  return stat;
}

Result<std::optional<v1::ArtifactRef>> ReceivePiece(coordinator::Coordinator* c, const UploadPiece& piece,
                                                    std::string_view data, const std::string& account,
                                                    const std::string& who) {
  if (!IsValidDigest(piece.digest)) {
    return Status::InvalidArgument("digest must be sha256:<64 hex>, got '" + piece.digest.substr(0, 80) + "'");
  }
  if (piece.total == 0 || piece.offset + data.size() > piece.total) {
    return Status::InvalidArgument("the piece (bytes " + std::to_string(piece.offset) + " to " +
                                   std::to_string(piece.offset + data.size()) + ") is not inside the blob's " +
                                   std::to_string(piece.total) + " bytes");
  }
  if (!account.empty()) IG_RETURN_IF_ERROR(CheckUploadQuota(c, account, who, piece.digest, piece.total));
  IG_ASSIGN_OR_RETURN(auto writer,
                      c->artifact_store()->NewResumableWriter(piece.digest, piece.total, who, piece.offset));
  IG_RETURN_IF_ERROR(writer->Append(data.data(), data.size()));
  c->CountArtifactBytes(true, data.size());
  if (writer->size() < piece.total) return std::optional<v1::ArtifactRef>();  // kept for the next piece
  v1::ArtifactRef out;
  IG_RETURN_IF_ERROR(FinishUpload(c, *writer, piece.kind.empty() ? "input" : piece.kind, account, piece.make_public,
                                  piece.offset, who, &out));
  return std::optional<v1::ArtifactRef>(std::move(out));
}

}  // namespace idlegrid::api
