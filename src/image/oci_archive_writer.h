#pragma once
// Writes an OCI image archive (the form `podman load -i` and
// InspectOciArchive read) from blobs already on disk: an agent that fetched
// an image layer by layer assembles the archive its runtime loads from its
// layer cache, without holding any blob in memory.
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "image/oci_archive.h"

namespace idlegrid::image {

struct BlobFile {
  std::string digest;  // "sha256:<hex>"
  uint64_t size = 0;
  std::string path;  // where its bytes are
};

// Writes oci-layout, an index.json naming `manifest` (annotated with
// `ref_name` when not empty) and blobs/sha256/<hex> for each of `blobs`
// (which must include the manifest's own blob) to `out_path`, atomically (a
// temporary sibling renamed into place; not fsynced: it is a temporary the
// runtime loads at once). The blobs are copied as they are: the reader
// verifies them. InvalidArgument for a malformed digest or a
// duplicate; NotFound if a blob's file is missing or not of its stated size;
// Internal for write errors (nothing is left at `out_path` then).
Status WriteOciArchiveFromBlobs(const OciBlobRef& manifest, const std::vector<BlobFile>& blobs,
                                const std::string& ref_name, const std::string& out_path);

}  // namespace idlegrid::image
