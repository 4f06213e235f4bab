#pragma once
// Verification of OCI image archives, the single-file form in which images
// are uploaded and cached (`podman save --format oci-archive`): a plain tar
// holding oci-layout, index.json and blobs/sha256/<hex>.
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace idlegrid::image {

struct OciImageInfo {
  std::string manifest_digest;  // "sha256:<hex>", from index.json, verified against the blob
  std::string config_digest;    // from the manifest, verified against the config blob
  std::string ref_name;         // org.opencontainers.image.ref.name annotation, or ""
};

// Reads the OCI image archive at `path` and verifies it end to end: the
// manifest blob hashes to the digest index.json gives it, and the config and
// every layer the manifest lists are present with the declared size and
// digest. Layer contents are hashed as a stream, so memory use does not grow
// with the archive (JSON documents are capped at 4 MiB).
//
// index.json must list exactly one manifest digest (several entries for the
// same digest, e.g. two tags, count as one) unless `expected_manifest_digest`
// is given, in which case that manifest is chosen. Only single-platform
// manifests are supported, not nested image indexes.
//
// Errors: NotFound if the archive, the expected manifest or a listed blob is
// missing; InvalidArgument if the archive is not a tar, not an OCI layout,
// or a JSON document is malformed (the message names the document);
// DataLoss if a blob's size or digest differs from its descriptor (the
// message names the blob, expected and actual). Thread-compatible; reads the
// file only.
Result<OciImageInfo> InspectOciArchive(const std::string& path, const std::string& expected_manifest_digest = "");

// The config digest a single-platform OCI image manifest names, from the
// manifest's bytes alone (as a registry serves them), checked as
// InspectOciArchive checks an archive's manifest: schemaVersion 2, the OCI
// manifest media type (or none), a valid config descriptor and layers list.
// InvalidArgument otherwise, the message naming `what`. Pure.
Result<std::string> OciManifestConfigDigest(const std::string& manifest_json, const std::string& what);

// A blob an OCI manifest names.
struct OciBlobRef {
  std::string media_type;
  std::string digest;  // "sha256:<hex>"
  uint64_t size = 0;
};

// What a single-platform OCI image manifest is made of: its config and its
// layers in order (a layer repeated in the manifest appears once, at its first
// place). Checked as OciManifestConfigDigest checks it. Pure.
struct OciManifestBlobs {
  OciBlobRef config;
  std::vector<OciBlobRef> layers;
};
Result<OciManifestBlobs> ParseOciManifestBlobs(const std::string& manifest_json, const std::string& what);

// Where an archive holds each blob of its image: the manifest first, then the
// config, then the layers (deduplicated), each with its offset in the file.
// Verifies the archive as InspectOciArchive does first.
struct LocatedBlob {
  OciBlobRef ref;
  uint64_t offset = 0;  // the blob's first byte in the archive file
};
struct OciArchiveBlobs {
  OciImageInfo info;
  std::vector<LocatedBlob> blobs;  // [0] is the manifest, [1] the config
};
Result<OciArchiveBlobs> LocateOciArchiveBlobs(const std::string& path,
                                              const std::string& expected_manifest_digest = "");

}  // namespace idlegrid::image
