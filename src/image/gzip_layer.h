#pragma once
// Decompresses a gzip-compressed image layer (what `podman save --format
// oci-archive` writes: application/vnd.oci.image.layer.v1.tar+gzip) from a
// region of a file into a plain file, so that LayerTarReader can read it by
// offset. Streams in bounded memory; hashes the output on the way, since the
// image config names each layer by its uncompressed digest (diff_id).
#include <cstdint>
#include <string>

#include "common/status.h"

namespace idlegrid::image {

// True when the 4 bytes at `offset` of `fd` start a gzip stream.
bool IsGzip(int fd, uint64_t offset, uint64_t size);

// Inflates the gzip data at [offset, offset + size) of `fd` (one or more
// concatenated members) into a new file `out_path` (created 0600, must not
// exist) and returns the "sha256:<hex>" digest of what it wrote.
// InvalidArgument (naming `what`) when the data is not valid gzip, is
// truncated, or inflates to more than `max_bytes` (a decompression bomb
// would otherwise fill the disk); Internal for I/O errors.
Result<std::string> GunzipToFile(int fd, uint64_t offset, uint64_t size, const std::string& out_path,
                                 uint64_t max_bytes, const std::string& what);

}  // namespace idlegrid::image
