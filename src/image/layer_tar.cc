#include "image/layer_tar.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

namespace idlegrid::image {
namespace {

constexpr uint64_t kBlock = 512;
constexpr uint64_t kMaxMetaSize = 1024 * 1024;  // a long name or a pax record set
constexpr size_t kChunk = 1024 * 1024;
constexpr uint64_t kMaxNumber = uint64_t{1} << 62;  // keeps offset arithmetic from overflowing

using Block = std::array<char, kBlock>;

std::string_view Bytes(const Block& b, size_t offset, size_t length) { return {b.data() + offset, length}; }

std::string CString(const Block& b, size_t offset, size_t length) {
  std::string_view v = Bytes(b, offset, length);
  return std::string(v.substr(0, std::min(v.find('\0'), v.size())));
}

// Octal (space/NUL padded) or GNU base-256; negative values are refused.
std::optional<uint64_t> ParseNumber(std::string_view f) {
  const auto* u = reinterpret_cast<const unsigned char*>(f.data());
  if (u[0] & 0x80) {
    if (u[0] != 0x80) return std::nullopt;
    uint64_t v = 0;
    for (size_t i = 1; i < f.size(); ++i) {
      if (v > (kMaxNumber >> 8)) return std::nullopt;
      v = (v << 8) | u[i];
    }
    return v <= kMaxNumber ? std::optional(v) : std::nullopt;
  }
  size_t i = 0;
  while (i < f.size() && f[i] == ' ') ++i;
  uint64_t v = 0;
  for (; i < f.size() && f[i] >= '0' && f[i] <= '7'; ++i) v = v * 8 + static_cast<uint64_t>(f[i] - '0');
  for (; i < f.size(); ++i) {
    if (f[i] != '\0' && f[i] != ' ') return std::nullopt;
  }
  return v <= kMaxNumber ? std::optional(v) : std::nullopt;
}

bool ChecksumOk(const Block& b) {
  std::optional<uint64_t> stored = ParseNumber(Bytes(b, 148, 8));
  if (!stored) return false;
  uint64_t usum = 0;
  int64_t ssum = 0;
  for (size_t i = 0; i < kBlock; ++i) {
    char c = (i >= 148 && i < 156) ? ' ' : b[i];
    usum += static_cast<unsigned char>(c);
    ssum += static_cast<signed char>(c);
  }
  return *stored == usum || static_cast<int64_t>(*stored) == ssum;
}

bool IsZero(const Block& b) {
  return std::all_of(b.begin(), b.end(), [](char c) { return c == 0; });
}

// "./a//b/." -> "a/b"; refuses absolute paths, ".." and NUL bytes.
Result<std::string> Normalize(std::string_view raw) {
  if (raw.find('\0') != std::string_view::npos) return Status::InvalidArgument("a path contains a NUL byte");
  if (!raw.empty() && raw.front() == '/') {
    return Status::InvalidArgument("\"" + std::string(raw) + "\" is an absolute path");
  }
  std::string out;
  size_t start = 0;
  while (start <= raw.size()) {
    size_t end = std::min(raw.find('/', start), raw.size());
    std::string_view part = raw.substr(start, end - start);
    if (part == "..") return Status::InvalidArgument("\"" + std::string(raw) + "\" contains \"..\"");
    if (!part.empty() && part != ".") {
      if (!out.empty()) out.push_back('/');
      out.append(part);
    }
    start = end + 1;
  }
  return out;
}

// Pax extended header records: "LEN key=value\n"...
Result<std::vector<std::pair<std::string, std::string>>> ParsePax(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!text.empty()) {
    size_t space = text.find(' ');
    if (space == std::string_view::npos || space == 0 || space > 20) return Status::InvalidArgument("bad pax record");
    uint64_t len = 0;
    for (size_t i = 0; i < space; ++i) {
      if (text[i] < '0' || text[i] > '9') return Status::InvalidArgument("bad pax record length");
      len = len * 10 + static_cast<uint64_t>(text[i] - '0');
    }
    if (len <= space + 1 || len > text.size() || text[len - 1] != '\n') {
      return Status::InvalidArgument("bad pax record length");
    }
    std::string_view record = text.substr(space + 1, len - space - 2);
    size_t eq = record.find('=');
    if (eq == std::string_view::npos) return Status::InvalidArgument("pax record without '='");
    out.emplace_back(std::string(record.substr(0, eq)), std::string(record.substr(eq + 1)));
    text.remove_prefix(len);
  }
  return out;
}

std::optional<uint64_t> ParseDecimal(std::string_view text) {
  if (text.empty() || text.size() > 18) return std::nullopt;  // 18 digits stay below kMaxNumber
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v <= kMaxNumber ? std::optional(v) : std::nullopt;
}

uint64_t PaddedSize(uint64_t size) { return (size + kBlock - 1) / kBlock * kBlock; }

// What the extended headers read so far (GNU long name/link, pax) set for
// the entry that follows them.
struct Extensions {
  std::optional<std::string> long_name, long_link, pax_path, pax_link;
  std::optional<uint64_t> pax_size;
};

// Applies the content `text` of a GNU long name/link ('L', 'K') or pax ('x')
// header to `ext`; a pax global header ('g') changes nothing. A malformed one
// is InvalidArgument with the message for LayerTarReader::Error, naming
// `where`.
Status ApplyExtension(char type, std::string text, const std::string& where, Extensions* ext) {
  if (type == 'L' || type == 'K') {
    text = text.substr(0, std::min(text.find('\0'), text.size()));
    (type == 'L' ? ext->long_name : ext->long_link) = text;
  } else if (type == 'x') {
    auto records = ParsePax(text);
    if (!records.ok()) return Status::InvalidArgument(where + ": " + records.status().message());
    for (auto& [key, value] : *records) {
      if (key == "path") ext->pax_path = value;
      if (key == "linkpath") ext->pax_link = value;
      if (key == "size") {
        ext->pax_size = ParseDecimal(value);
        if (!ext->pax_size) return Status::InvalidArgument(where + " has a malformed pax size");
      }
    }
  }
  return Status::Ok();
}

// Sets e->type from the typeflag and, for a link, e->link_target from
// `raw_link`; a bad target is InvalidArgument with the message for
// LayerTarReader::Error.
Status SetTypeAndLink(char type, const std::string& raw_link, const std::string& where, LayerEntry* e) {
  switch (type) {
    case '0':
    case '\0':
    case '7':
      e->type = LayerEntryType::kRegular;
      break;
    case '1': {
      e->type = LayerEntryType::kHardLink;
      auto target = Normalize(raw_link);
      if (!target.ok() || target->empty()) {
        return Status::InvalidArgument(where + ": bad hard link target \"" + raw_link + "\"");
      }
      e->link_target = *target;
      break;
    }
    case '2':
      e->type = LayerEntryType::kSymlink;
      if (raw_link.empty() || raw_link.find('\0') != std::string::npos) {
        return Status::InvalidArgument(where + ": empty symlink");
      }
      e->link_target = raw_link;
      break;
    case '5':
      e->type = LayerEntryType::kDirectory;
      break;
    default:
      e->type = LayerEntryType::kOther;
  }
  return Status::Ok();
}

// The entry header `b` describes, with `ext` applied (all but its
// content_offset); InvalidArgument with the message for
// LayerTarReader::Error if its path or link target is refused.
Result<LayerEntry> EntryFromHeader(const Block& b, uint64_t size, uint64_t mode, uint64_t mtime, const Extensions& ext,
                                   const std::string& where) {
  const char type = b[156];
  LayerEntry e;
  e.typeflag = type;
  e.mode = static_cast<uint32_t>(mode & 07777);
  e.mtime = static_cast<int64_t>(mtime);
  std::string raw_name = CString(b, 0, 100);
  if (Bytes(b, 257, 6) == std::string_view("ustar\0", 6)) {
    std::string prefix = CString(b, 345, 155);
    if (!prefix.empty()) raw_name = prefix + "/" + raw_name;
  }
  if (ext.long_name) raw_name = *ext.long_name;
  if (ext.pax_path) raw_name = *ext.pax_path;
  std::string raw_link = ext.pax_link ? *ext.pax_link : ext.long_link ? *ext.long_link : CString(b, 157, 100);
  auto path = Normalize(raw_name);
  if (!path.ok()) return Status::InvalidArgument(where + ": " + path.status().message());
  e.path = *path;
  e.size = ext.pax_size ? *ext.pax_size : size;
  IG_RETURN_IF_ERROR(SetTypeAndLink(type, raw_link, where, &e));
  // Links, directories, devices and FIFOs are header-only whatever size they
  // declare, as Go's archive/tar (podman's reader) treats them: the next
  // header follows at once, so both readers see the same entries.
  if (std::strchr("123456", type) != nullptr && type != '\0') e.size = 0;
  return e;
}

}  // namespace

Status LayerTarReader::ReadAt(uint64_t offset, char* out, size_t size) const {
  if (offset + size > end_) return Error("truncated at byte " + std::to_string(offset - begin_));
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd_, out + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Internal(what_ + ": read failed: " + std::strerror(errno));
    if (n == 0) return Error("the file ends inside the layer");
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status LayerTarReader::Error(const std::string& message) const {
  return Status::InvalidArgument(what_ + " is not a valid layer tar: " + message);
}

Result<std::optional<LayerEntry>> LayerTarReader::Next() {
  Extensions ext;
  while (true) {
    const uint64_t header_at = pos_ - begin_;
    if (pos_ + kBlock > end_) return Error("no end-of-archive marker");
    Block b;
    IG_RETURN_IF_ERROR(ReadAt(pos_, b.data(), kBlock));
    if (IsZero(b)) return std::optional<LayerEntry>();
    const std::string where = "entry at byte " + std::to_string(header_at);
    if (!ChecksumOk(b)) return Error(where + " has a bad header checksum");
    std::optional<uint64_t> size = ParseNumber(Bytes(b, 124, 12));
    std::optional<uint64_t> mode = ParseNumber(Bytes(b, 100, 8));
    std::optional<uint64_t> mtime = ParseNumber(Bytes(b, 136, 12));
    if (!size || !mode || !mtime) return Error(where + " has a malformed number field");
    const char type = b[156];
    const uint64_t content = pos_ + kBlock;
    if (type == 'x' || type == 'L' || type == 'K' || type == 'g') {
      if (*size > kMaxMetaSize) return Error(where + " has an oversized extended header");
      std::string text(*size, '\0');
      IG_RETURN_IF_ERROR(ReadAt(content, text.data(), text.size()));
      pos_ = content + PaddedSize(*size);
      if (Status applied = ApplyExtension(type, std::move(text), where, &ext); !applied.ok()) {
        return Error(applied.message());
      }
      continue;  // 'g' (global) records are ignored: they carry no per-file data we use
    }
    if (type == 'S') return Error(where + " is a GNU sparse file, which layers do not use");

    auto entry = EntryFromHeader(b, *size, *mode, *mtime, ext, where);
    if (!entry.ok()) return Error(entry.status().message());
    LayerEntry& e = *entry;
    if (content + PaddedSize(e.size) > end_) return Error(where + " (\"" + e.path + "\") runs past the layer");
    e.content_offset = content;
    pos_ = content + PaddedSize(e.size);
    return std::optional<LayerEntry>(std::move(e));
  }
}

Status LayerTarReader::ReadContent(const LayerEntry& entry, const std::function<Status(std::string_view)>& sink) const {
  std::vector<char> buf(std::min<uint64_t>(kChunk, std::max<uint64_t>(entry.size, 1)));
  for (uint64_t done = 0; done < entry.size;) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), entry.size - done));
    IG_RETURN_IF_ERROR(ReadAt(entry.content_offset + done, buf.data(), n));
    IG_RETURN_IF_ERROR(sink(std::string_view(buf.data(), n)));
    done += n;
  }
  return Status::Ok();
}

}  // namespace idlegrid::image
