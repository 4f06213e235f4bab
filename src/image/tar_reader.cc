#include "image/tar_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

namespace idlegrid::image {
namespace {

constexpr uint64_t kBlockSize = 512;
constexpr uint64_t kMaxLongNameSize = 64 * 1024;
constexpr uint64_t kMaxPaxHeaderSize = 1024 * 1024;
constexpr size_t kMaxMembers = 100000;
constexpr size_t kChunkSize = 1024 * 1024;
// Sizes are kept below 2^62 so that offset arithmetic can never overflow.
constexpr uint64_t kMaxNumber = uint64_t{1} << 62;

// Field offsets and lengths of a ustar header block.
struct Field {
  size_t offset;
  size_t length;
};
constexpr Field kName{0, 100};
constexpr Field kSize{124, 12};
constexpr Field kChecksum{148, 8};
constexpr size_t kTypeflagOffset = 156;
constexpr Field kMagic{257, 6};
constexpr Field kPrefix{345, 155};

using Block = std::array<char, kBlockSize>;

std::string_view FieldBytes(const Block& block, Field field) {
  return std::string_view(block.data() + field.offset, field.length);
}

// The text of a NUL-terminated (or full-width) string field.
std::string FieldString(const Block& block, Field field) {
  std::string_view bytes = FieldBytes(block, field);
  return std::string(bytes.substr(0, std::min(bytes.find('\0'), bytes.size())));
}

// Parses a numeric header field: octal digits, optionally space-padded and
// NUL/space-terminated, or the GNU base-256 form (high bit of the first byte
// set) used for values that do not fit. Negative values and anything else
// are rejected.
std::optional<uint64_t> ParseNumber(std::string_view field) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(field.data());
  if (bytes[0] & 0x80) {
    if (bytes[0] != 0x80) return std::nullopt;  // 0xff marks a negative number.
    uint64_t value = 0;
    for (size_t i = 1; i < field.size(); ++i) {
      if (value > (kMaxNumber >> 8)) return std::nullopt;
      value = (value << 8) | bytes[i];
    }
    if (value > kMaxNumber) return std::nullopt;
    return value;
  }
  size_t i = 0;
  while (i < field.size() && field[i] == ' ') ++i;
  uint64_t value = 0;
  for (; i < field.size() && field[i] >= '0' && field[i] <= '7'; ++i) {
    value = value * 8 + static_cast<uint64_t>(field[i] - '0');  // 12 digits fit easily.
  }
  for (; i < field.size(); ++i) {
    if (field[i] != '\0' && field[i] != ' ') return std::nullopt;
  }
  if (value > kMaxNumber) return std::nullopt;
  return value;
}

bool ChecksumMatches(const Block& block) {
  std::optional<uint64_t> stored = ParseNumber(FieldBytes(block, kChecksum));
  if (!stored) return false;
  // Historic writers summed signed chars; accept either sum.
  uint64_t unsigned_sum = 0;
  int64_t signed_sum = 0;
  for (size_t i = 0; i < kBlockSize; ++i) {
    bool in_field = i >= kChecksum.offset && i < kChecksum.offset + kChecksum.length;
    char c = in_field ? ' ' : block[i];
    unsigned_sum += static_cast<unsigned char>(c);
    signed_sum += static_cast<signed char>(c);
  }
  return *stored == unsigned_sum || static_cast<int64_t>(*stored) == signed_sum;
}

bool IsZeroBlock(const Block& block) {
  return std::all_of(block.begin(), block.end(), [](char c) { return c == '\0'; });
}

// Rejects absolute paths and ".." components (hostile archives use them to
// escape wherever a later step might extract to) and drops "." and empty
// components, so "./index.json" and "index.json" are the same member.
Result<std::string> NormalizePath(std::string_view raw) {
  if (raw.empty()) return Status::InvalidArgument("member with an empty name");
  if (raw.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument("member name contains a NUL byte");
  }
  if (raw.front() == '/') {
    return Status::InvalidArgument("member \"" + std::string(raw) + "\" has an absolute path");
  }
  std::string normalized;
  size_t start = 0;
  while (start <= raw.size()) {
    size_t end = std::min(raw.find('/', start), raw.size());
    std::string_view part = raw.substr(start, end - start);
    if (part == "..") {
      return Status::InvalidArgument("member \"" + std::string(raw) + "\" contains \"..\"");
    }
    if (!part.empty() && part != ".") {
      if (!normalized.empty()) normalized.push_back('/');
      normalized.append(part);
    }
    start = end + 1;
  }
  return normalized;
}

// pax extended header overrides that matter for locating content.
struct PaxOverrides {
  std::optional<std::string> path;
  std::optional<uint64_t> size;
};

// Parses "<len> <key>=<value>\n" records.
Result<PaxOverrides> ParsePax(std::string_view data) {
  PaxOverrides out;
  while (!data.empty()) {
    size_t space = data.find(' ');
    if (space == std::string_view::npos || space == 0 || space > 20) {
      return Status::InvalidArgument("malformed pax record length");
    }
    uint64_t length = 0;
    for (char c : data.substr(0, space)) {
      if (c < '0' || c > '9') return Status::InvalidArgument("malformed pax record length");
      length = length * 10 + static_cast<uint64_t>(c - '0');
      if (length > data.size()) return Status::InvalidArgument("pax record runs past header");
    }
    if (length <= space + 1 || data[length - 1] != '\n') {
      return Status::InvalidArgument("malformed pax record");
    }
    std::string_view record = data.substr(space + 1, length - space - 2);
    data.remove_prefix(length);
    size_t equals = record.find('=');
    if (equals == std::string_view::npos) return Status::InvalidArgument("pax record without '='");
    std::string_view key = record.substr(0, equals);
    std::string_view value = record.substr(equals + 1);
    if (key.substr(0, 10) == "GNU.sparse") {
      return Status::InvalidArgument("sparse members are not supported");
    }
    if (key == "path" && !value.empty()) out.path = std::string(value);
    if (key == "size") {
      uint64_t size = 0;
      if (value.empty() || value.size() > 19) return Status::InvalidArgument("malformed pax size");
      for (char c : value) {
        if (c < '0' || c > '9') return Status::InvalidArgument("malformed pax size");
        size = size * 10 + static_cast<uint64_t>(c - '0');
      }
      if (size > kMaxNumber) return Status::InvalidArgument("pax size too large");
      out.size = size;
    }
  }
  return out;
}

bool IsRegularFileType(char type) { return type == '0' || type == '\0' || type == '7'; }

// Links, devices, directories and FIFOs carry no content whatever their size
// field says (as in Go's archive/tar, which wrote the archives we read).
bool IsHeaderOnlyType(char type) { return type >= '1' && type <= '6'; }

// The member name a header gives, before normalization: a GNU long name or a
// pax path when one preceded it, else the header's own name field.
std::string RawMemberName(const Block& block, const std::optional<std::string>& long_name, const PaxOverrides& pax) {
  if (long_name) return *long_name;
  if (pax.path) return *pax.path;
  std::string raw_name = FieldString(block, kName);
  // The prefix field exists only in POSIX ustar; GNU headers reuse it.
  std::string prefix = FieldString(block, kPrefix);
  if (FieldBytes(block, kMagic) == std::string_view("ustar\0", 6) && !prefix.empty()) {
    raw_name = prefix + "/" + raw_name;
  }
  return raw_name;
}

}  // namespace

// GNU long name and pax headers read so far: they describe the member that
// follows them.
struct TarReader::Extensions {
  std::optional<std::string> long_name;
  PaxOverrides pax;

  bool pending() const { return long_name || pax.path || pax.size; }
};

Result<TarReader> TarReader::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound("archive " + path + " does not exist");
    return Status::InvalidArgument("cannot open archive " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::InvalidArgument("archive " + path + " is not a regular file");
  }
  TarReader reader(path, fd, static_cast<uint64_t>(st.st_size));
  IG_RETURN_IF_ERROR(reader.Index());
  return reader;
}

TarReader::TarReader(TarReader&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      file_size_(other.file_size_),
      members_(std::move(other.members_)) {}

TarReader::~TarReader() {
  if (fd_ >= 0) ::close(fd_);
}

const TarMember* TarReader::Find(std::string_view path) const {
  auto it = members_.find(path);
  return it == members_.end() ? nullptr : &it->second;
}

Status TarReader::ReadAt(uint64_t offset, char* out, size_t size) const {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd_, out + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Internal("read " + path_ + ": " + std::strerror(errno));
    if (n == 0) {
      return Status::InvalidArgument("archive " + path_ + " ended unexpectedly at offset " +
                                     std::to_string(offset + done));
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status TarReader::Malformed(uint64_t offset, const std::string& why) const {
  return Status::InvalidArgument("archive " + path_ + " is not a valid tar: " + why + " (header at offset " +
                                 std::to_string(offset) + ")");
}

Status TarReader::CheckEndOfArchive(uint64_t pos, const Extensions& extensions) const {
  // End of archive is two zero blocks; tolerate a writer that stopped
  // after one at the very end of the file.
  uint64_t next = pos + kBlockSize;
  if (file_size_ - next >= kBlockSize) {
    Block block;
    IG_RETURN_IF_ERROR(ReadAt(next, block.data(), kBlockSize));
    if (!IsZeroBlock(block)) return Malformed(pos, "stray zero block");
  } else if (file_size_ != next) {
    return Malformed(pos, "no end-of-archive marker");
  }
  if (extensions.pending()) return Malformed(pos, "extended header without a member");
  return Status::Ok();
}

Status TarReader::ReadExtension(uint64_t pos, char type, uint64_t data_offset, uint64_t size,
                                Extensions* extensions) const {
  // GNU long name or pax header: describes the member that follows.
  if (size > (type == 'L' ? kMaxLongNameSize : kMaxPaxHeaderSize)) {
    return Malformed(pos, "extended header too large");
  }
  std::string data(size, '\0');
  IG_RETURN_IF_ERROR(ReadAt(data_offset, data.data(), data.size()));
  if (type == 'L') {
    extensions->long_name = data.substr(0, data.find('\0'));
    return Status::Ok();
  }
  auto parsed = ParsePax(data);
  if (!parsed.ok()) return Malformed(pos, parsed.status().message());
  extensions->pax = std::move(parsed).value();
  return Status::Ok();
}

Status TarReader::AddMember(uint64_t pos, char type, const std::string& raw_name, uint64_t size, uint64_t data_offset) {
  auto name = NormalizePath(raw_name);
  if (!name.ok()) return Malformed(pos, name.status().message());
  if (!IsRegularFileType(type)) return Status::Ok();
  if (name->empty()) return Malformed(pos, "regular file without a name");
  if (members_.count(*name) > 0) return Malformed(pos, "duplicate member " + *name);
  if (members_.size() >= kMaxMembers) return Malformed(pos, "too many members");
  members_.emplace(*name, TarMember{*name, size, data_offset});
  return Status::Ok();
}

Status TarReader::Index() {
  Extensions extensions;
  uint64_t pos = 0;
  Block block;
  while (true) {
    if (pos > file_size_ || file_size_ - pos < kBlockSize) {
      return Malformed(pos, pos == 0 ? "too short to be a tar archive" : "no end-of-archive marker");
    }
    IG_RETURN_IF_ERROR(ReadAt(pos, block.data(), kBlockSize));
    if (IsZeroBlock(block)) return CheckEndOfArchive(pos, extensions);
    if (!ChecksumMatches(block)) return Malformed(pos, "bad header checksum");
    if (FieldBytes(block, kMagic).substr(0, 5) != "ustar") {
      return Malformed(pos, "not a ustar header");
    }
    const char type = block[kTypeflagOffset];
    std::optional<uint64_t> header_size = ParseNumber(FieldBytes(block, kSize));
    if (!header_size) return Malformed(pos, "malformed size field");
    uint64_t size = IsHeaderOnlyType(type) ? 0 : extensions.pax.size.value_or(*header_size);
    const uint64_t data_offset = pos + kBlockSize;
    if (size > file_size_ - data_offset) return Malformed(pos, "member runs past end of file");
    const uint64_t next_header = data_offset + (size + kBlockSize - 1) / kBlockSize * kBlockSize;

    if (type == 'L' || type == 'x') {
      IG_RETURN_IF_ERROR(ReadExtension(pos, type, data_offset, size, &extensions));
    } else if (type == 'K') {
      // GNU long link target: irrelevant, as links are not indexed.
      if (size > kMaxLongNameSize) return Malformed(pos, "extended header too large");
    } else if (type == 'S') {
      return Malformed(pos, "sparse members are not supported");
    } else {
      const std::string raw_name = RawMemberName(block, extensions.long_name, extensions.pax);
      extensions = Extensions{};
      IG_RETURN_IF_ERROR(AddMember(pos, type, raw_name, size, data_offset));
    }
    pos = next_header;
  }
}

Result<std::string> TarReader::ReadAll(const TarMember& member, uint64_t max_size) const {
  if (member.size > max_size) {
    return Status::InvalidArgument(member.path + " in " + path_ + " is " + std::to_string(member.size) +
                                   " bytes; at most " + std::to_string(max_size) + " are allowed");
  }
  std::string data(member.size, '\0');
  IG_RETURN_IF_ERROR(ReadAt(member.offset, data.data(), data.size()));
  return data;
}

Status TarReader::ReadChunks(const TarMember& member, const std::function<Status(std::string_view)>& sink) const {
  std::vector<char> buffer(std::min<uint64_t>(kChunkSize, std::max<uint64_t>(member.size, 1)));
  uint64_t done = 0;
  while (done < member.size) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(buffer.size(), member.size - done));
    IG_RETURN_IF_ERROR(ReadAt(member.offset + done, buffer.data(), n));
    IG_RETURN_IF_ERROR(sink(std::string_view(buffer.data(), n)));
    done += n;
  }
  return Status::Ok();
}

}  // namespace idlegrid::image
