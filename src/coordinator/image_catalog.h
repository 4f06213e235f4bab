#pragma once
// The images jobs may name, as a service of its own: images registered from
// a pushed archive or blob by blob (docs/python.md, "Images"), the blobs a
// layered image consists of, images from OCI registries pinned at submit
// (docs/registries.md), and signatures over images (docs/containment.md,
// Signatures): added after verifying them, the operator's rule at submit,
// and the readiness images the coordinator signs itself.
//
// Its pieces lock themselves (ImageSignatureFiles, ManifestBlobCache: leaves);
// it holds no lock of its own. Store, artifacts, registry client and clock
// are injected.
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "artifacts/artifact_store.h"
#include "common/clock.h"
#include "common/status.h"
#include "coordinator/image_signatures.h"
#include "coordinator/manifest_blob_cache.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "image/signature.h"
#include "manifest/image_ref.h"
#include "registry/allow_list.h"
#include "registry/registry_client.h"
#include "sched/scheduler.h"
#include "store/store.h"

namespace idlegrid::coordinator {

// Whether `account` may name the artifact in a job: its own upload or job's,
// a public one, or anything for the operator (who owns what was stored
// before accounts).
Result<bool> MayUse(store::Store& store, const std::string& account, const std::string& digest);

class ImageCatalog {
 public:
  struct Options {
    // With require_signed_images, a job is refused at submit unless its
    // image carries a valid signature by one of trusted_image_keys.
    bool require_signed_images = false;
    std::vector<image::ImagePublicKey> trusted_image_keys;
    // Signs the readiness benchmark images the coordinator builds.
    std::optional<image::ImageSigningKey> readiness_image_key;
    // The registries jobs may name images from (none by default).
    registry::OperatorRegistries registries;
  };

  // `registry` may be null (registry images are refused); `changed` is
  // called when a signature was added (tasks waiting for a node that trusts
  // its key may be placed now).
  ImageCatalog(store::Store* store, artifacts::ArtifactStore* artifacts, registry::RegistryClient* registry,
               const Clock* clock, Options options, std::function<void()> changed);

  // Registers the image in an uploaded OCI archive, as the archive says it
  // is (the pusher's claim is never trusted). NotFound when not uploaded.
  Result<v1::PushImageResponse> RegisterArchive(const std::string& archive_digest);
  // Registers an image pushed blob by blob: its manifest, config and every
  // layer must be stored already, each of the size the manifest states, and
  // `may_read` must allow each (a pusher cannot name another account's
  // private layer into an image of its own). The image record's
  // archive_digest is then the manifest's own digest.
  Result<v1::PushImageResponse> RegisterLayered(const std::string& manifest_digest,
                                                const std::function<Status(const std::string&)>& may_read);
  // Stores the archive file at `path` and registers its image (the
  // coordinator's own readiness images); its manifest digest.
  Result<std::string> ImportArchive(const std::string& path);
  // The blobs of a layered image (manifest, config, layers), or none for an
  // image pushed as one archive.
  Result<std::vector<v1::ArtifactRef>> BlobsOf(const store::ImageRecord& image);
  // The layers of the stored image with this manifest digest, for layer
  // locality (sched/layer_locality.h): null for an image pushed as one
  // archive, an unknown one, or one whose manifest cannot be read now.
  std::shared_ptr<const std::vector<sched::ImageLayer>> LayersOf(const std::string& manifest_digest);
  // The stored image `account` may use; nullopt when it is missing or
  // another tenant's private one (the same answer: no existence leak).
  Result<std::optional<store::ImageRecord>> UsableImage(const std::string& manifest_digest, const std::string& account);
  // Checks `ref` (a registry reference, the spec's image) against the
  // operator's registries, resolves it through the registry client (a tag to
  // the digest it names now) and rewrites `spec` pinned: JobSpec.image by
  // digest, JobSpec.registry_image with what was asked for and the config
  // digest. Errors carry "spec.image" context.
  Status PinRegistryImage(const manifest::ImageRef& ref, v1::JobSpec* spec);

  // Stores a signature over an image `account` may use, after verifying it:
  // NotFound for an image that is missing or not the account's to use,
  // InvalidArgument for a malformed request or a signature that does not
  // verify. Returns the stored record.
  Result<v1::ImageSignature> AddSignature(const v1::AddImageSignatureRequest& request, const std::string& account);
  // The image's signatures that verify (any key), ordered by key id.
  std::vector<v1::ImageSignature> SignaturesOf(const std::string& image) const;
  // The key ids of those signatures (placement matches them against each
  // node's trusted keys).
  std::set<std::string> SignersOf(const std::string& image) const { return signatures_.SignersOf(image); }
  // The operator's rule at submit (Options::require_signed_images).
  Status CheckTrusted(const std::string& image) const;
  // Signs an image the coordinator built itself with the readiness key, if any.
  void SignOwn(const std::string& image);
  // Why a node whose owner requires signed images cannot run the readiness
  // benchmark, or "".
  std::string ReadinessKeyUntrusted(const v1::Advertisement& ad) const;

 private:
  store::Store* const store_;
  artifacts::ArtifactStore* const artifacts_;
  registry::RegistryClient* const registry_;
  const Clock* const clock_;
  const Options options_;
  const std::function<void()> changed_;
  ImageSignatureFiles signatures_;    // its own lock (a leaf)
  ManifestBlobCache manifest_blobs_;  // its own lock (a leaf)
};

}  // namespace idlegrid::coordinator
