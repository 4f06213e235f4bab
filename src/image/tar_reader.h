#pragma once
// A minimal, defensive reader for tar archives (ustar, with the GNU long-name
// and pax path/size extensions that real writers emit). It indexes member
// headers without reading their contents, then reads contents by offset, so
// archives of any size are handled in bounded memory. Archives are treated as
// hostile: every header field is validated and nothing is extracted.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "common/status.h"

namespace idlegrid::image {

struct TarMember {
  std::string path;     // normalised: no "./", no empty or "." components
  uint64_t size = 0;    // bytes of content
  uint64_t offset = 0;  // where the content starts in the archive file
};

class TarReader {
 public:
  // Opens and indexes the regular files of the archive at `path`.
  // NotFound if the file does not exist; InvalidArgument (naming the archive
  // and the byte offset) if it is not a regular file or not a well-formed tar:
  // bad header checksum, malformed or negative number fields, a member that
  // runs past the end of the file, a missing end-of-archive marker, an
  // absolute path or one with a ".." component, or a regular file that
  // appears twice (so the archive cannot mean two things to two readers).
  static Result<TarReader> Open(const std::string& path);

  TarReader(TarReader&& other) noexcept;
  TarReader& operator=(TarReader&&) = delete;
  TarReader(const TarReader&) = delete;
  ~TarReader();

  // Regular files by normalised path. Directories, links and devices are
  // skipped: an OCI layout consists of plain files.
  const std::map<std::string, TarMember, std::less<>>& members() const { return members_; }
  // nullptr if there is no regular file at `path`.
  const TarMember* Find(std::string_view path) const;

  // The whole content of `member`; InvalidArgument if it exceeds `max_size`.
  Result<std::string> ReadAll(const TarMember& member, uint64_t max_size) const;
  // Streams the content of `member` to `sink` in chunks of at most 1 MiB,
  // stopping at the first error `sink` returns.
  Status ReadChunks(const TarMember& member, const std::function<Status(std::string_view)>& sink) const;

 private:
  TarReader(std::string path, int fd, uint64_t file_size) : path_(std::move(path)), fd_(fd), file_size_(file_size) {}
  struct Extensions;  // extended headers awaiting their member (tar_reader.cc)

  Status Index();
  Status ReadAt(uint64_t offset, char* out, size_t size) const;
  // InvalidArgument naming the archive, `why` and the header's offset.
  Status Malformed(uint64_t offset, const std::string& why) const;
  // At a zero block at `pos`: Ok if the archive ends there properly, with no
  // extended header left without its member.
  Status CheckEndOfArchive(uint64_t pos, const Extensions& extensions) const;
  // Reads the GNU long name ('L') or pax header ('x') at `data_offset` into
  // `extensions`, for the member that follows.
  Status ReadExtension(uint64_t pos, char type, uint64_t data_offset, uint64_t size, Extensions* extensions) const;
  // Normalizes `raw_name` and, for a regular file, indexes it; refuses an
  // unnamed, duplicate or one-too-many member.
  Status AddMember(uint64_t pos, char type, const std::string& raw_name, uint64_t size, uint64_t data_offset);

  std::string path_;
  int fd_ = -1;
  uint64_t file_size_ = 0;
  std::map<std::string, TarMember, std::less<>> members_;
};

}  // namespace idlegrid::image
