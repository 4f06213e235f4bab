// Fuzzes the verification of uploaded OCI image archives (image/oci_archive.h):
// image::InspectOciArchive, then image::LocateOciArchiveBlobs and
// image::ArchiveLayerChain (image/rootfs_unpack.h) on an archive it accepts,
// the reads the coordinator (POST /v1/images, `image push`) and the agent's
// image cache make of an archive a stranger pushed. The bytes live in a memfd
// read through /proc/self/fd/N. Invariants: errors are NotFound,
// InvalidArgument or DataLoss (never Internal for a readable file); an
// accepted archive's digests are valid; LocateOciArchiveBlobs agrees with it
// (blobs[0] is the manifest, [1] the config, every blob inside the file, no
// digest twice, each hashing to its digest) and so does the layer chain the
// unpacker reads (every layer it names is one of those blobs).
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/digest.h"
#include "fuzz_support.h"
#include "image/oci_archive.h"
#include "image/rootfs_unpack.h"

namespace {

using idlegrid::Code;
namespace image = idlegrid::image;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes = idlegrid::fuzz::AsString(data, size);
  idlegrid::fuzz::MemFile& file = idlegrid::fuzz::MemFile::Get();
  file.Fill(bytes);
  auto info = image::InspectOciArchive(file.path());
  if (!info.ok()) {
    const Code code = info.status().code();
    FUZZ_CHECK(code == Code::kNotFound || code == Code::kInvalidArgument || code == Code::kDataLoss);
    return 0;
  }
  FUZZ_CHECK(idlegrid::IsValidDigest(info->manifest_digest) && idlegrid::IsValidDigest(info->config_digest));

  auto located = image::LocateOciArchiveBlobs(file.path(), info->manifest_digest);
  FUZZ_CHECK(located.ok());
  FUZZ_CHECK(located->info.manifest_digest == info->manifest_digest);
  FUZZ_CHECK(located->info.config_digest == info->config_digest);
  const std::vector<image::LocatedBlob>& blobs = located->blobs;
  FUZZ_CHECK(blobs.size() >= 2);
  FUZZ_CHECK(blobs[0].ref.digest == info->manifest_digest && blobs[1].ref.digest == info->config_digest);
  std::set<std::string> digests;
  for (const image::LocatedBlob& blob : blobs) {
    FUZZ_CHECK(digests.insert(blob.ref.digest).second);
    FUZZ_CHECK(blob.offset <= bytes.size() && blob.ref.size <= bytes.size() - blob.offset);
    FUZZ_CHECK(idlegrid::Sha256Digest(bytes.substr(blob.offset, blob.ref.size)) == blob.ref.digest);
  }

  auto chain = image::ArchiveLayerChain(file.path());
  FUZZ_CHECK(chain.ok());
  for (const std::string& layer : chain.value()) FUZZ_CHECK(digests.count(layer) == 1);
  return 0;
}
