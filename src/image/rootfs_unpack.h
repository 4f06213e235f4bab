#pragma once
// Unpacks a verified OCI image archive into a directory tree that an OCI
// runtime (runc) can use as a container's root filesystem. Layers are
// hostile input; image/layer_applier.h says how each is applied.
#include <string>
#include <vector>

#include "common/status.h"
#include "image/image_config.h"

namespace idlegrid::image {

// What an unpacked image directory holds, besides the tree.
inline constexpr char kRootfsDirName[] = "rootfs";
// The verified config blob, verbatim; its presence marks a complete unpack.
inline constexpr char kImageConfigFileName[] = "image-config.json";
// The manifest's layer digests in order, one per line: what a later image
// sharing these first layers may start from (UnpackBase).
inline constexpr char kLayerChainFileName[] = "layer-chain";

// An unpacked image directory whose first `layers` layers are the first
// layers of the image being unpacked: its tree is cloned by hard links
// (files are never written in place by the applier, which replaces an entry
// by unlinking it, and containers see the tree read-only) and only the
// remaining layers are applied. A python3-torch base is then unpacked once
// per node, not once per version of the script on top of it.
struct UnpackBase {
  std::string image_dir;
  size_t layers = 0;  // 0: unpack from nothing
};

// The layer chain an unpacked image directory recorded (empty if none).
std::vector<std::string> ReadLayerChain(const std::string& image_dir);
// The manifest's layer digests of a verified archive, in order.
Result<std::vector<std::string>> ArchiveLayerChain(const std::string& archive_path);

struct UnpackedImage {
  std::string manifest_digest;  // "sha256:<hex>"
  std::string config_digest;    // "sha256:<hex>"; podman's image id is its hex
  ImageConfig config;           // parsed from the verified config blob
};

// Verifies the archive at `archive_path` (InspectOciArchive), then builds
// `dest_dir`/rootfs (all layers applied in order) and
// `dest_dir`/image-config.json in a temporary sibling of `dest_dir` that is
// renamed into place only when complete, so `dest_dir` either does not exist
// or is whole. `expected_config_digest` ("" = any) guards against unpacking
// an archive of a different image.
//
// Errors: InspectOciArchive's (NotFound, InvalidArgument, DataLoss);
// DataLoss if the config digest is not the expected one, or a gzip layer
// does not inflate to its diff_id; InvalidArgument for a hostile or malformed
// layer (naming the layer and entry), a zstd layer (uncompressed and gzip
// layers, which `podman save --format oci-archive` writes, are supported), or
// a gzip layer inflating beyond 32 GiB; AlreadyExists if `dest_dir` appeared
// meanwhile (another unpack won the race: its result is complete); Internal
// for filesystem errors. Nothing is left behind on failure. Safe to run
// concurrently for the same `dest_dir`.
Result<UnpackedImage> UnpackOciImage(const std::string& archive_path, const std::string& dest_dir,
                                     const std::string& expected_config_digest = "", const UnpackBase& base = {});

// Applies uncompressed layer tars (each a whole file), in order, onto the
// existing directory `root_dir` (LayerApplier). What one layer leaves
// may be partly written when an error stops it. For tests and tools; the
// runtime goes through UnpackOciImage.
Status ApplyLayerFiles(const std::vector<std::string>& tar_paths, const std::string& root_dir);

// Removes `path` and everything below it without following symlinks, even
// where an image made directories read-only (which std::filesystem cannot).
// Ok when `path` does not exist.
Status RemoveUnpackedTree(const std::string& path);

}  // namespace idlegrid::image
