#pragma once
// The coordinator's image signatures (docs/containment.md, Signatures), kept as files
// beside the artifacts rather than in the store's schema:
//   <dir>/<manifest digest hex>/<key id>.sig   (a serialized v1::ImageSignature)
// Coordinators sharing a --shared-dir share them. Thread-safe.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::coordinator {

class ImageSignatureFiles {
 public:
  ImageSignatureFiles(std::string dir, const Clock* clock) : dir_(std::move(dir)), clock_(clock) {}

  // Stores `signature` (replacing one by the same key for the same image),
  // written atomically. The caller has verified it; InvalidArgument for a
  // record whose image is not a digest or whose key id is not 16 hex
  // characters (they name the file), Internal for I/O failures.
  Status Put(const v1::ImageSignature& signature);

  // The image's signatures that verify, ordered by key id. A file that does
  // not parse or verify (edited or corrupted on disk) is skipped and logged.
  // Cached per image: re-read when another coordinator may have added one
  // (at most every kRecheckMs) and at once after this one's Put. No
  // signatures (no directory) is an empty list, not an error.
  std::vector<v1::ImageSignature> Of(const std::string& image) const;
  // Ids of the keys with a valid signature over the image.
  std::set<std::string> SignersOf(const std::string& image) const;

  static constexpr int64_t kRecheckMs = 1000;

 private:
  struct Cached {
    int64_t checked_ms = 0;
    int64_t dir_mtime_ns = -1;  // -1: no directory
    std::vector<v1::ImageSignature> signatures;
  };
  std::string DirOf(const std::string& image) const;
  std::vector<v1::ImageSignature> ReadDir(const std::string& image, const std::string& dir) const;

  // Constant after construction.
  const std::string dir_;
  const Clock* const clock_;

  mutable Mutex mu_;
  mutable std::map<std::string, Cached> cache_ IG_GUARDED_BY(mu_);
};

}  // namespace idlegrid::coordinator
