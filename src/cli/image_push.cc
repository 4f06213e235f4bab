// `image push` and `image build`: an image moves to the coordinator blob by
// blob (manifest, config, layers), and only the blobs it does not hold for
// this account are uploaded, so a one-line change to a script re-sends one
// small layer, not the whole image (docs/python.md, "Images").
#include <fcntl.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include "cli/progress.h"
#include "cli/support.h"
#include "common/digest.h"
#include "common/grpc_status.h"
#include "common/unique_fd.h"
#include "image/oci_archive.h"

namespace idlegrid::cli {
namespace {

// Copies bytes [offset, offset + size) of `from` into a new file `to`.
Status ExtractRange(int from, uint64_t offset, uint64_t size, const std::string& to) {
  UniqueFd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (out.get() < 0) return Status::Internal("cannot create " + to + ": " + std::strerror(errno));
  off_t pos = static_cast<off_t>(offset);
  uint64_t left = size;
  while (left > 0) {
    ssize_t n = ::sendfile(out.get(), from, &pos, left > (1u << 30) ? (1u << 30) : left);
    if (n <= 0) return Status::Internal("copying a blob out of the archive: " + std::string(std::strerror(errno)));
    left -= static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

// Digest -> whether the coordinator already holds it for this caller; nullopt
// from a coordinator that predates layered pushes.
Result<std::optional<std::map<std::string, bool>>> HeldBlobs(Client& client,
                                                             const std::vector<image::LocatedBlob>& blobs) {
  v1::StatArtifactsRequest req;
  for (const auto& b : blobs) req.add_digests(b.ref.digest);
  v1::StatArtifactsResponse resp;
  auto ctx = client.Context();
  grpc::Status answer = client.stub()->StatArtifacts(ctx.get(), req, &resp);
  if (answer.error_code() == grpc::StatusCode::UNIMPLEMENTED) return std::optional<std::map<std::string, bool>>();
  IG_RETURN_IF_ERROR(FromGrpc(answer));
  std::map<std::string, bool> held;
  for (const auto& b : blobs) held[b.ref.digest] = false;
  for (const auto& st : resp.stats()) held[st.digest()] = st.present();
  return std::optional<std::map<std::string, bool>>(std::move(held));
}

Result<v1::PushImageResponse> Register(Client& client, const v1::RegisterImageRequest& req) {
  v1::PushImageResponse resp;
  auto ctx = client.Context();
  IG_RETURN_IF_ERROR(FromGrpc(client.stub()->RegisterImage(ctx.get(), req, &resp)));
  return resp;
}

// The whole archive as one artifact: for a coordinator from before layered
// pushes (it answers StatArtifacts with UNIMPLEMENTED).
Result<v1::PushImageResponse> PushWhole(Client& client, const std::string& archive, bool make_public, bool json) {
  std::error_code size_error;
  const uint64_t size = std::filesystem::file_size(archive, size_error);
  ProgressDisplay progress(std::cerr, StderrProgressStyle(json), ProgressDisplay::LineEvery::kTenth);
  const std::string what = "pushing " + std::filesystem::path(archive).filename().string();
  auto uploaded = client.UploadFile(archive, "image", make_public, [&](uint64_t sent) {
    progress.Update(sent, size_error ? sent : size, TransferText(what, sent, size_error ? sent : size));
  });
  progress.Finish();
  IG_ASSIGN_OR_RETURN(v1::ArtifactRef ref, std::move(uploaded));
  v1::RegisterImageRequest req;
  req.set_archive_digest(ref.digest());
  return Register(client, req);
}

}  // namespace

Result<v1::PushImageResponse> PushImageArchive(Client& client, const std::string& archive, bool make_public,
                                               bool json) {
  // Verified here first: a broken archive fails before a byte moves.
  IG_ASSIGN_OR_RETURN(image::OciArchiveBlobs located, image::LocateOciArchiveBlobs(archive));
  IG_ASSIGN_OR_RETURN(auto held, HeldBlobs(client, located.blobs));
  if (!held) return PushWhole(client, archive, make_public, json);
  uint64_t total = 0, missing_bytes = 0;
  std::vector<const image::LocatedBlob*> missing;
  for (const auto& b : located.blobs) {
    total += b.ref.size;
    if (!(*held)[b.ref.digest]) {
      missing.push_back(&b);
      missing_bytes += b.ref.size;
    }
  }
  UniqueFd in(::open(archive.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.get() < 0) return Status::NotFound("cannot open " + archive);
  std::string tmpl = (std::filesystem::temp_directory_path() / "idlegrid-push.XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return Status::Internal("cannot make a temporary directory");
  const std::string dir = tmpl;
  ProgressDisplay progress(std::cerr, StderrProgressStyle(json), ProgressDisplay::LineEvery::kTenth);
  const std::string what = "pushing " + std::filesystem::path(archive).filename().string();
  uint64_t done = 0;
  Status st;
  for (const image::LocatedBlob* b : missing) {
    const std::string path = dir + "/" + DigestHex(b->ref.digest);
    st = ExtractRange(in.get(), b->offset, b->ref.size, path);
    if (st.ok()) {
      // Layers are as public as the image: the manifest names them.
      auto ref = client.UploadFile(path, "image", make_public, [&](uint64_t sent) {
        progress.Update(done + sent, missing_bytes, TransferText(what, done + sent, missing_bytes));
      });
      st = ref.status();
      if (st.ok() && ref->digest() != b->ref.digest) st = Status::DataLoss("coordinator stored " + ref->digest());
    }
    std::remove(path.c_str());
    if (!st.ok()) break;
    done += b->ref.size;
  }
  progress.Finish();
  std::filesystem::remove_all(dir);
  IG_RETURN_IF_ERROR(st.WithContext("pushing " + archive));
  if (!json) {
    std::cerr << "uploaded " << missing.size() << " of " << located.blobs.size() << " blobs (" << FormatBytes(done)
              << " of " << FormatBytes(total) << "); the coordinator held the rest\n";
  }
  v1::RegisterImageRequest req;
  req.set_manifest_digest(located.info.manifest_digest);
  return Register(client, req);
}

}  // namespace idlegrid::cli
