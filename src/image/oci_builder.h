#pragma once
// Builds OCI image archives (the form InspectOciArchive verifies and
// `podman load -i` reads) from a few files, without podman: the coordinator
// uses it to produce its own benchmark image offline. The output is
// byte-for-byte reproducible: the same inputs always give the same archive,
// and so the same manifest and config digests.
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace idlegrid::image {

struct ImageFile {
  std::string path_in_image;  // "/bench" or "usr/bin/tool"; a leading "/" is optional
  std::string content;
  uint32_t mode = 0755;  // permission bits only (at most 07777)
};

struct OciArchiveContent {
  std::string bytes;            // the whole archive
  std::string manifest_digest;  // "sha256:<hex>"
  std::string config_digest;    // "sha256:<hex>"; podman's image ID is its hex
};

struct BuiltImage {
  std::string manifest_digest;
  std::string config_digest;
  std::string archive_path;
};

// Renders, in memory, an OCI image archive: a plain ustar tar holding
// oci-layout, index.json and blobs/sha256/<hex>. The image has ONE
// uncompressed layer (application/vnd.oci.image.layer.v1.tar) with `files` in
// the given order, owned by 0:0 with mtime 0, parent directories (mode 0755)
// added before the first file that needs them; a config for linux on the
// architecture this program was compiled for ("amd64" on x86-64) with
// `entrypoint` and the layer's diff_id; a manifest; and an index.json whose
// single entry carries the org.opencontainers.image.ref.name annotation
// `ref_name` (none when `ref_name` is empty; podman names the loaded image
// "localhost/<ref_name>" when it has no registry part).
//
// InvalidArgument when: a path is empty, has an empty, "." or ".." component,
// a NUL byte, or does not fit a ustar header; two files share a path, or one
// file's path is a directory of another; a mode has bits above 07777; a file
// is 8 GiB or more; `entrypoint` is empty or not valid UTF-8; `ref_name` is
// not of the OCI form component("/"component)* where a component is
// runs of alphanumerics joined by one of "-", ".", "_", ":", "@", "+" or "--".
// Pure: no I/O, thread-safe.
Result<OciArchiveContent> RenderOciArchive(const std::vector<ImageFile>& files,
                                           const std::vector<std::string>& entrypoint, const std::string& ref_name);

// RenderOciArchive, then writes the archive to `out_path` atomically (a temp
// file renamed into place, mode 0644), replacing any file there. Errors are
// RenderOciArchive's, or Internal if the file cannot be written (e.g. the
// directory does not exist).
Result<BuiltImage> BuildOciArchive(const std::vector<ImageFile>& files, const std::vector<std::string>& entrypoint,
                                   const std::string& ref_name, const std::string& out_path);

}  // namespace idlegrid::image
