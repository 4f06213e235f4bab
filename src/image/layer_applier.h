#pragma once
// Applies image layers, in order, onto a directory, treating every layer as
// hostile: entries are written only below the root, relative to directory
// file descriptors, never through a symlink (a layer that plants
// "evil -> /etc" and then writes "evil/passwd" is refused); whiteouts
// (".wh.NAME" and the opaque ".wh..wh..opq") remove what lower layers put
// there; hard links may only point at files already inside the tree; device
// nodes and FIFOs are skipped; setuid/setgid bits are dropped; ownership is
// not kept (every file belongs to the applying user).
#include <memory>
#include <string>

#include "common/status.h"
#include "image/layer_tar.h"

namespace idlegrid::image {

class LayerApplier {
 public:
  // `root_fd`: the directory to fill; the caller owns it and keeps it open.
  explicit LayerApplier(int root_fd);
  ~LayerApplier();
  LayerApplier(const LayerApplier&) = delete;
  LayerApplier& operator=(const LayerApplier&) = delete;

  // Applies the next layer. InvalidArgument (naming the entry) for a hostile
  // or malformed entry, or more than 2^20 entries in all; Internal for
  // filesystem errors. The layer may be partly applied when it fails.
  Status Apply(LayerTarReader& reader);
  // Sets directory modes and times once every layer is applied.
  Status Finish();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Removes `name` in the directory `dirfd` and everything below it, never
// following symlinks and making read-only directories writable first. Ok
// when it does not exist.
Status RemoveTreeAt(int dirfd, const std::string& name);

}  // namespace idlegrid::image
