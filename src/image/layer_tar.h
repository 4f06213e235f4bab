#pragma once
// A pull reader for one image layer: an uncompressed tar stored at some
// region of a file (a blob inside an OCI archive, or a file of its own).
// Unlike TarReader, which indexes only the regular files of an OCI layout, it
// yields every entry in order — directories, links, whiteouts, devices — since
// applying a layer depends on all of them. Headers are hostile input: every
// field is validated and paths are normalised (absolute paths and ".."
// components are rejected). Nothing is written anywhere.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace idlegrid::image {

enum class LayerEntryType { kRegular, kDirectory, kSymlink, kHardLink, kOther };

struct LayerEntry {
  std::string path;  // normalised: no "./", no empty or "." parts; "" is the layer's root
  LayerEntryType type = LayerEntryType::kOther;
  char typeflag = '0';          // the raw tar type ('3' char device, '6' FIFO, ...)
  uint32_t mode = 0;            // permission bits with setuid/setgid/sticky (07777)
  std::string link_target;      // kSymlink: the text as stored; kHardLink: a normalised path
  uint64_t size = 0;            // content bytes (kRegular only)
  uint64_t content_offset = 0;  // where the content starts in the file
  int64_t mtime = 0;
};

class LayerTarReader {
 public:
  // Reads the tar at [offset, offset + size) of the open file `fd`, which the
  // caller owns and keeps open. `what` names the layer in error messages.
  LayerTarReader(int fd, uint64_t offset, uint64_t size, std::string what)
      : fd_(fd), begin_(offset), end_(offset + size), pos_(offset), what_(std::move(what)) {}

  // The next entry, or nullopt at the end-of-archive marker. InvalidArgument
  // (naming the layer, the entry and its offset) for a malformed header, an
  // absolute or ".." path, content running past the region, a GNU sparse
  // file, or a region that ends without the end marker. Pax (path, linkpath,
  // size) and GNU long name/link records are applied to the entry they
  // precede; pax global headers are ignored.
  Result<std::optional<LayerEntry>> Next();

  // Streams the content of `entry` (from this reader) to `sink` in chunks of
  // at most 1 MiB, stopping at the first error `sink` returns.
  Status ReadContent(const LayerEntry& entry, const std::function<Status(std::string_view)>& sink) const;

 private:
  Status ReadAt(uint64_t offset, char* out, size_t size) const;
  Status Error(const std::string& message) const;

  int fd_;
  uint64_t begin_;
  uint64_t end_;
  uint64_t pos_;
  std::string what_;
};

}  // namespace idlegrid::image
