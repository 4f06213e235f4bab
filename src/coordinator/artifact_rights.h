#pragma once
// Who may move which artifact (docs/tenancy.md, "Agents act only as
// themselves"), as a service of its own: the per-attempt artifact tokens
// nodes are sent with their assignments and present with each transfer, what
// such a token lets a node read (its attempt's image, own task's inputs and
// checkpoint) or write, and the hold a requester's fresh upload gets. No lock
// of its own (the store and the catalog lock themselves; the key is
// constant).
#include <cstdint>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "coordinator/image_catalog.h"
#include "store/store.h"

namespace idlegrid::coordinator {

class ArtifactRights {
 public:
  // How long a fresh upload is held for its uploader before a job must hold it.
  static constexpr int64_t kUploadGraceMs = 24 * 3600 * 1000;

  // `join_secret`: the tokens' key derives from it, so coordinators sharing a
  // database (and the secret) accept each other's tokens.
  ArtifactRights(store::Store* store, ImageCatalog* images, const Clock* clock, const std::string& join_secret);

  // The artifact token of `attempt_id` on `node_id` under lease `epoch`.
  std::string TokenFor(const std::string& attempt_id, const std::string& node_id, uint64_t epoch) const;
  // May the node read this artifact for this attempt? Only with the
  // attempt's artifact token, while the node holds the attempt under a live
  // lease, and only its image archive (or a layered image's blobs), its own
  // task's inputs and checkpoint; NotFound otherwise, logged.
  Status NodeMayRead(const std::string& node_id, const std::string& attempt_id, const std::string& token,
                     const std::string& digest);
  // May it upload for this attempt (outputs, checkpoints)? The same token
  // and lease rules.
  Status NodeMayWrite(const std::string& node_id, const std::string& attempt_id, const std::string& token);
  // Records a stored artifact of `kind` (image, input, output, ...).
  Status Record(const std::string& digest, uint64_t size, const std::string& kind);
  // The uploading account holds a fresh upload for kUploadGraceMs (a job
  // that uses it then holds it for good); `make_public` lets anyone read it.
  Status HoldUpload(const std::string& digest, const std::string& account, bool make_public);

 private:
  // The node's live attempt that `token` is the artifact token of; NotFound
  // (logged) otherwise.
  Result<store::ActiveAttempt> LiveAttemptFor(const std::string& node_id, const std::string& attempt_id,
                                              const std::string& token);

  store::Store* const store_;
  ImageCatalog* const images_;
  const Clock* const clock_;
  const std::string key_;
};

}  // namespace idlegrid::coordinator
