#pragma once
// Images in OCI registries (docs/registries.md): resolving a reference to what
// the registry serves for it (at submit, on the coordinator) and copying an
// image pinned by digest into an OCI archive (on the agent, which then verifies
// it as any other image). NewSkopeoClient does both with skopeo, spawned
// without a shell. TLS is always verified, against the system's CAs and, for a
// registry configured with one, its own CA file; nothing here can turn
// verification off.
#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "common/status.h"
#include "manifest/image_ref.h"

namespace idlegrid::registry {

struct ResolvedImage {
  std::string manifest_digest;  // sha256 of the manifest bytes the registry served
  std::string config_digest;    // what that manifest names as its config: the image id
};

class RegistryClient {
 public:
  virtual ~RegistryClient() = default;

  // Reads the manifest of `ref` (a registry reference: by its digest, else
  // by the digest its tag names now) and checks that it is a single-platform
  // OCI image manifest (manifest_check.h). Errors name the registry and the
  // reference: NotFound when the registry has no such manifest or
  // repository; DataLoss when the bytes served do not hash to the digest
  // asked for; FailedPrecondition for an image index or a Docker manifest,
  // or a CA file that cannot be read; Unavailable when the registry cannot
  // be reached, answers past the timeout, or its certificate is not trusted
  // (the message names --registry-ca). Thread-safe.
  virtual Result<ResolvedImage> Resolve(const manifest::ImageRef& ref) = 0;

  // Copies the image `ref` pins by digest into a new OCI archive at
  // `archive_path` (a path without ":"), keeping its manifest's bytes and so
  // its digest. Errors as Resolve's; nothing is left at `archive_path` after
  // a failure. Verifying the archive is the caller's. Thread-safe.
  virtual Status Pull(const manifest::ImageRef& ref, const std::string& archive_path) = 0;
};

struct SkopeoOptions {
  std::string skopeo = "skopeo";                // the binary, searched on PATH
  std::map<std::string, std::string> ca_files;  // "HOST[:PORT]" -> CA certificate (PEM) to trust for it
  // Per-registry certificate directories and skopeo's temporary files (a
  // pull stages layers there); created 0700 when first needed.
  std::string work_dir;
  std::chrono::milliseconds resolve_timeout{20000};  // under a client's 30 s deadline for submit
  std::chrono::milliseconds pull_timeout{3600000};
};

std::unique_ptr<RegistryClient> NewSkopeoClient(SkopeoOptions options);

}  // namespace idlegrid::registry
