#pragma once
// Client side of artifact transfer, shared by the agent (AgentService) and the
// requester CLI (RequesterService): both stubs have the same UploadArtifact /
// DownloadArtifact / StatArtifacts methods. The digest is computed before an
// upload and checked while a download is written; a file that does not hash
// to what was asked for is never left in place.
//
// Transfers resume. An upload first asks StatArtifacts what the coordinator
// holds: a blob the caller may already read is not sent again, and the bytes
// an interrupted upload by this caller left there are not sent twice (the
// coordinator re-hashes them and verifies the whole blob at the end). A
// download keeps `path.part` when it is cut off and asks for the rest from
// the part's size next time, after hashing what the part holds.
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
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

// Called after each chunk with the bytes the far end (upload) or the local
// part file (download) holds so far, a resumed prefix included: what a
// progress display shows. May be empty.
using TransferProgress = std::function<void(uint64_t bytes_so_far)>;

// What one call moved, for progress lines, tests and benchmarks. Reset at the
// start of each call.
struct TransferStats {
  uint64_t bytes_moved = 0;      // artifact bytes that crossed the wire, every try of this call
  uint64_t resumed_at = 0;       // bytes already held (coordinator's partial, or path.part) when it began
  bool already_present = false;  // upload: the coordinator held the blob for this caller; nothing was sent
  int restarts = 0;              // tries begun again from 0 after a resumed one failed verification
};

// Bytes per uploaded ArtifactChunk (the coordinator accepts messages up to
// 8 MiB and sends 1 MiB ones, under the 4 MiB gRPC clients accept by
// default). Measured on loopback (docs/PERFORMANCE.md, Transfers): 256 KiB
// and 4 MiB chunks both cost the coordinator more CPU per byte than 1 MiB.
inline constexpr size_t kTransferChunkBytes = 1 << 20;

// Whether a call that failed with `code` was cut off (a cancel, a deadline,
// a lost connection) rather than refused: what it moved is worth keeping.
inline bool IsTransferInterruption(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::CANCELLED ||
         code == grpc::StatusCode::DEADLINE_EXCEEDED;
}

namespace transfer_internal {

using File = std::unique_ptr<FILE, int (*)(FILE*)>;

inline Result<uint64_t> FileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Status::NotFound("cannot stat " + path);
  return static_cast<uint64_t>(st.st_size);
}

// Hashes the first `bytes` of `path` into `hash`.
inline Status HashPrefix(const std::string& path, uint64_t bytes, Sha256* hash) {
  File f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return Status::Internal("cannot open " + path);
  std::vector<char> buf(kTransferChunkBytes);
  while (bytes > 0) {
    size_t n = std::fread(buf.data(), 1, std::min<uint64_t>(buf.size(), bytes), f.get());
    if (n == 0) return Status::Internal("cannot read back " + path);
    hash->Update(buf.data(), n);
    bytes -= n;
  }
  return Status::Ok();
}

// One upload stream: the file from `offset` on (the coordinator holds the
// bytes before it), announced as `digest` of `size` bytes.
template <typename Stub>
Result<v1::ArtifactRef> SendFrom(Stub* stub, grpc::ClientContext* ctx, const std::string& path,
                                 const std::string& digest, uint64_t size, uint64_t offset, const std::string& kind,
                                 const TransferScope& scope, const TransferProgress& progress, TransferStats* stats) {
  File f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return Status::InvalidArgument("cannot open " + path);
  if (::fseeko(f.get(), static_cast<off_t>(offset), SEEK_SET) != 0) {
    return Status::Internal("cannot seek to " + std::to_string(offset) + " in " + path);
  }
  v1::ArtifactRef ref;
  auto writer = stub->UploadArtifact(ctx, &ref);
  v1::ArtifactChunk chunk;
  // The first chunk announces what is coming, so the receiver can verify it.
  chunk.set_digest(digest);
  chunk.set_size(size);
  chunk.set_kind(kind);
  chunk.set_attempt_id(scope.attempt_id);
  chunk.set_attempt_token(scope.attempt_token);
  chunk.set_public_(scope.make_public);
  chunk.set_offset(offset);
  uint64_t sent = offset;
  bool first = true;
  while (true) {
    // Read straight into the message: no copy of the payload on this side.
    std::string* data = chunk.mutable_data();
    data->resize(kTransferChunkBytes);
    size_t n = std::fread(data->data(), 1, data->size(), f.get());
    data->resize(n);
    if (n == 0 && !first) break;
    if (!writer->Write(chunk) || n == 0) break;
    if (first) {
      chunk.Clear();
      first = false;
    }
    sent += n;
    stats->bytes_moved += n;
    if (progress) progress(sent);
  }
  writer->WritesDone();
  IG_RETURN_IF_ERROR(FromGrpc(writer->Finish()).WithContext("upload of " + path));
  if (ref.digest() != digest) return Status::DataLoss("coordinator stored " + ref.digest() + ", expected " + digest);
  return ref;
}

// One download stream into `part`, whose first `offset` bytes are kept (and
// are hashed again here first). The part survives an interruption; it is
// removed on any other failure. `mismatch`: every byte arrived but the whole
// does not hash to `digest`.
template <typename Stub>
Status ReceiveInto(Stub* stub, grpc::ClientContext* ctx, const std::string& digest, const std::string& part,
                   uint64_t offset, const TransferScope& scope, const TransferProgress& progress, TransferStats* stats,
                   bool* mismatch) {
  *mismatch = false;
  Sha256 hash;
  if (offset > 0) IG_RETURN_IF_ERROR(HashPrefix(part, offset, &hash));
  File f(std::fopen(part.c_str(), offset > 0 ? "ab" : "wb"), &std::fclose);
  if (!f) return Status::Internal("cannot create " + part);
  v1::DownloadArtifactRequest req;
  req.set_digest(digest);
  req.set_attempt_id(scope.attempt_id);
  req.set_attempt_token(scope.attempt_token);
  req.set_offset(offset);
  auto reader = stub->DownloadArtifact(ctx, req);
  bool write_ok = true;
  uint64_t held = offset;
  v1::ArtifactChunk chunk;
  while (reader->Read(&chunk)) {
    const std::string& data = chunk.data();
    hash.Update(data);
    write_ok = write_ok && std::fwrite(data.data(), 1, data.size(), f.get()) == data.size();
    held += data.size();
    stats->bytes_moved += data.size();
    if (progress) progress(held);
  }
  write_ok = std::fflush(f.get()) == 0 && write_ok;
  f.reset();
  const grpc::Status finished = reader->Finish();
  if (!write_ok) {
    std::remove(part.c_str());
    return Status::Internal("cannot write " + part);
  }
  if (!finished.ok()) {
    if (!IsTransferInterruption(finished.error_code())) std::remove(part.c_str());
    return FromGrpc(finished).WithContext("download of " + digest);
  }
  std::string got = hash.Finish();
  if (got != digest) {
    std::remove(part.c_str());
    *mismatch = true;
    return Status::DataLoss(digest + " arrived as " + got + "; discarded");
  }
  return Status::Ok();
}

}  // namespace transfer_internal

// Uploads `path` as an artifact of `kind`. `new_context` makes the context
// of each call (a StatArtifacts, then one upload stream, and a second stream
// if a resumed one fails verification); it returns a pointer-like owner of a
// grpc::ClientContext carrying the caller's credentials. Sends only what the
// coordinator lacks: nothing when it already holds the blob for this caller
// (unless scope.make_public, which an upload must assert), the rest after
// the bytes of an interrupted upload by this caller. An interrupted upload
// (an UNAVAILABLE, CANCELLED or DEADLINE_EXCEEDED status) leaves its bytes
// with the coordinator for the next call. A coordinator without
// StatArtifacts, or a token that may upload but not read, gets a whole
// upload. `stats` (may be null) is filled in.
template <typename Stub, typename NewContext>
requires std::is_invocable_v<NewContext&> Result<v1::ArtifactRef> UploadArtifactFile(
    Stub* stub, NewContext&& new_context, const std::string& path, const std::string& kind,
    const TransferScope& scope = {}, const TransferProgress& progress = {}, TransferStats* stats = nullptr) {
  TransferStats own;
  if (stats == nullptr) stats = &own;
  *stats = {};
  IG_ASSIGN_OR_RETURN(std::string digest, Sha256File(path));
  IG_ASSIGN_OR_RETURN(uint64_t size, transfer_internal::FileSize(path));
  uint64_t offset = 0;
  {
    v1::StatArtifactsRequest req;
    req.add_digests(digest);
    req.set_attempt_id(scope.attempt_id);
    req.set_attempt_token(scope.attempt_token);
    v1::StatArtifactsResponse resp;
    auto ctx = new_context();
    grpc::Status asked = stub->StatArtifacts(&*ctx, req, &resp);
    if (asked.ok() && resp.stats_size() == 1 && resp.stats(0).digest() == digest) {
      const v1::ArtifactStat& held = resp.stats(0);
      if (held.present() && held.size() == size && !scope.make_public) {
        stats->already_present = true;
        v1::ArtifactRef ref;
        ref.set_digest(digest);
        ref.set_size(size);
        return ref;
      }
      if (held.partial_bytes() <= size) offset = held.partial_bytes();
    } else if (!asked.ok() && asked.error_code() != grpc::StatusCode::UNIMPLEMENTED &&
               asked.error_code() != grpc::StatusCode::PERMISSION_DENIED) {
      return FromGrpc(asked).WithContext("upload of " + path + ": asking what the coordinator holds");
    }
  }
  stats->resumed_at = offset;
  Result<v1::ArtifactRef> ref = [&] {
    auto ctx = new_context();
    return transfer_internal::SendFrom(stub, &*ctx, path, digest, size, offset, kind, scope, progress, stats);
  }();
  // The kept bytes did not verify (the coordinator dropped them), or went
  // between the question and the resume: once more, from the start.
  const Code failed = ref.ok() ? Code::kOk : ref.status().code();
  if (offset > 0 && (failed == Code::kDataLoss || failed == Code::kFailedPrecondition)) {
    ++stats->restarts;
    auto ctx = new_context();
    ref = transfer_internal::SendFrom(stub, &*ctx, path, digest, size, 0, kind, scope, progress, stats);
  }
  return ref;
}

// Downloads artifact `digest` to `path` through `path.part`, resuming after
// the bytes a part left by an interrupted download holds (hashed again
// first). The part is kept when this call is interrupted too, and removed on
// any other failure. Bytes that all arrive but do not hash to `digest` are
// discarded and the download runs once more from 0. `new_context` and
// `stats` as for UploadArtifactFile.
template <typename Stub, typename NewContext>
requires std::is_invocable_v<NewContext&> Status DownloadArtifactFile(
    Stub* stub, NewContext&& new_context, const std::string& digest, const std::string& path,
    const TransferScope& scope = {}, const TransferProgress& progress = {}, TransferStats* stats = nullptr) {
  TransferStats own;
  if (stats == nullptr) stats = &own;
  *stats = {};
  const std::string part = path + ".part";
  auto kept = transfer_internal::FileSize(part);
  stats->resumed_at = kept.ok() ? *kept : 0;
  bool mismatch = false;
  Status st = [&] {
    auto ctx = new_context();
    return transfer_internal::ReceiveInto(stub, &*ctx, digest, part, stats->resumed_at, scope, progress, stats,
                                          &mismatch);
  }();
  if (mismatch) {
    ++stats->restarts;
    auto ctx = new_context();
    st = transfer_internal::ReceiveInto(stub, &*ctx, digest, part, 0, scope, progress, stats, &mismatch);
  }
  IG_RETURN_IF_ERROR(st);
  if (std::rename(part.c_str(), path.c_str()) != 0) return Status::Internal("cannot rename " + part);
  return Status::Ok();
}

// One-context forms, for a caller that makes its own single call: the upload
// sends the whole file (it cannot ask StatArtifacts first), the download
// resumes a kept part but does not run again after a mismatch.
template <typename Stub>
Result<v1::ArtifactRef> UploadArtifactFile(Stub* stub, grpc::ClientContext* ctx, const std::string& path,
                                           const std::string& kind, const TransferScope& scope = {},
                                           const TransferProgress& progress = {}, TransferStats* stats = nullptr) {
  TransferStats own;
  if (stats == nullptr) stats = &own;
  *stats = {};
  IG_ASSIGN_OR_RETURN(std::string digest, Sha256File(path));
  IG_ASSIGN_OR_RETURN(uint64_t size, transfer_internal::FileSize(path));
  return transfer_internal::SendFrom(stub, ctx, path, digest, size, 0, kind, scope, progress, stats);
}

template <typename Stub>
Status DownloadArtifactFile(Stub* stub, grpc::ClientContext* ctx, const std::string& digest, const std::string& path,
                            const TransferScope& scope = {}, const TransferProgress& progress = {},
                            TransferStats* stats = nullptr) {
  TransferStats own;
  if (stats == nullptr) stats = &own;
  *stats = {};
  const std::string part = path + ".part";
  auto kept = transfer_internal::FileSize(part);
  stats->resumed_at = kept.ok() ? *kept : 0;
  bool mismatch = false;
  IG_RETURN_IF_ERROR(
      transfer_internal::ReceiveInto(stub, ctx, digest, part, stats->resumed_at, scope, progress, stats, &mismatch));
  if (std::rename(part.c_str(), path.c_str()) != 0) return Status::Internal("cannot rename " + part);
  return Status::Ok();
}

}  // namespace idlegrid
