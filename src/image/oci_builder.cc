#include "image/oci_builder.h"

#include <cstdio>
#include <cstring>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "common/digest.h"
#include "common/fs.h"
#include "common/json_writer.h"

namespace idlegrid::image {
namespace {

#if defined(__x86_64__)
constexpr char kArchitecture[] = "amd64";
#elif defined(__aarch64__)
constexpr char kArchitecture[] = "arm64";
#else
#error "oci_builder: add the OCI architecture name of this CPU"
#endif

constexpr char kLayerMediaType[] = "application/vnd.oci.image.layer.v1.tar";
constexpr char kConfigMediaType[] = "application/vnd.oci.image.config.v1+json";
constexpr char kManifestMediaType[] = "application/vnd.oci.image.manifest.v1+json";
constexpr char kIndexMediaType[] = "application/vnd.oci.image.index.v1+json";
constexpr char kRefNameAnnotation[] = "org.opencontainers.image.ref.name";

constexpr size_t kBlockSize = 512;
constexpr size_t kNameFieldSize = 100;
constexpr size_t kPrefixFieldSize = 155;
constexpr uint64_t kMaxUstarSize = 077777777777ULL;  // 11 octal digits
constexpr uint32_t kMaxMode = 07777;
constexpr char kUstarMagicAndVersion[8] = {'u', 's', 't', 'a', 'r', '\0', '0', '0'};

// --- ustar ------------------------------------------------------------------

struct UstarName {
  std::string prefix;
  std::string name;
};

// Splits `path` into ustar's prefix and name fields, or nullopt if it cannot
// be represented without a pax or GNU extension.
std::optional<UstarName> SplitUstarName(const std::string& path) {
  if (path.size() <= kNameFieldSize) return UstarName{"", path};
  // The split must fall on a "/", which neither field stores.
  for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    size_t name_size = path.size() - slash - 1;
    if (slash <= kPrefixFieldSize && name_size > 0 && name_size <= kNameFieldSize) {
      return UstarName{path.substr(0, slash), path.substr(slash + 1)};
    }
  }
  return std::nullopt;
}

// A directory's member name: with the customary trailing "/" when that still
// fits a ustar header; the type flag alone marks it a directory otherwise.
std::string DirectoryMemberName(const std::string& path) { return SplitUstarName(path + "/") ? path + "/" : path; }

// Writes a tar whose members all belong to 0:0 and have mtime 0, so the bytes
// depend on the members alone. Callers check names with SplitUstarName and
// sizes against kMaxUstarSize first.
class TarWriter {
 public:
  void AddDirectory(const std::string& path, uint32_t mode) { AppendHeader(DirectoryMemberName(path), 0, mode, '5'); }

  void AddFile(const std::string& path, std::string_view content, uint32_t mode) {
    AppendHeader(path, content.size(), mode, '0');
    out_.append(content);
    out_.append((kBlockSize - content.size() % kBlockSize) % kBlockSize, '\0');
  }

  // Appends the end-of-archive marker (two zero blocks) and returns the tar.
  std::string Finish() && {
    out_.append(2 * kBlockSize, '\0');
    return std::move(out_);
  }

 private:
  static void PutOctal(char* field, size_t width, uint64_t value) {
    std::snprintf(field, width, "%0*llo", static_cast<int>(width - 1), static_cast<unsigned long long>(value));
  }

  void AppendHeader(const std::string& path, uint64_t size, uint32_t mode, char type) {
    UstarName split = *SplitUstarName(path);
    char header[kBlockSize] = {};
    std::memcpy(header, split.name.data(), split.name.size());
    PutOctal(header + 100, 8, mode);
    PutOctal(header + 108, 8, 0);  // uid
    PutOctal(header + 116, 8, 0);  // gid
    PutOctal(header + 124, 12, size);
    PutOctal(header + 136, 12, 0);  // mtime
    header[156] = type;
    std::memcpy(header + 257, kUstarMagicAndVersion, sizeof(kUstarMagicAndVersion));
    PutOctal(header + 329, 8, 0);  // devmajor
    PutOctal(header + 337, 8, 0);  // devminor
    std::memcpy(header + 345, split.prefix.data(), split.prefix.size());
    // The checksum is computed with its own field read as spaces.
    std::memset(header + 148, ' ', 8);
    unsigned checksum = 0;
    for (unsigned char c : header) checksum += c;
    std::snprintf(header + 148, 7, "%06o", checksum);  // six digits, NUL, then the space
    out_.append(header, kBlockSize);
  }

  std::string out_;
};

// --- input validation ---------------------------------------------------------

// Strips one leading "/" and checks the rest is a clean relative path.
Result<std::string> NormalizeImagePath(const std::string& path) {
  std::string relative = !path.empty() && path[0] == '/' ? path.substr(1) : path;
  auto bad = [&path](const std::string& why) { return Status::InvalidArgument("image path \"" + path + "\" " + why); };
  if (relative.empty()) return bad("is empty");
  if (relative.find('\0') != std::string::npos) return bad("contains a NUL byte");
  size_t start = 0;
  while (true) {
    size_t end = relative.find('/', start);
    std::string_view component(relative.data() + start, (end == std::string::npos ? relative.size() : end) - start);
    if (component.empty() || component == "." || component == "..") {
      return bad("has an empty, \".\" or \"..\" component");
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (!SplitUstarName(relative)) return bad("is too long for a ustar header");
  return relative;
}

bool IsAlphanumeric(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

// The OCI image-spec grammar for org.opencontainers.image.ref.name:
// component ("/" component)*, component = alphanum (separator alphanum)*,
// separator = one of "-._:@+" or "--".
bool IsValidRefName(std::string_view ref) {
  constexpr std::string_view kSeparators = "-._:@+";
  size_t start = 0;
  while (true) {
    size_t end = ref.find('/', start);
    std::string_view component = ref.substr(start, end == std::string_view::npos ? end : end - start);
    if (component.empty() || !IsAlphanumeric(component[0])) return false;
    for (size_t i = 0; i < component.size();) {
      if (IsAlphanumeric(component[i])) {
        ++i;
        continue;
      }
      if (component.substr(i, 2) == "--") {
        i += 2;
      } else if (kSeparators.find(component[i]) != std::string_view::npos) {
        ++i;
      } else {
        return false;
      }
      if (i >= component.size() || !IsAlphanumeric(component[i])) return false;
    }
    if (end == std::string_view::npos) return true;
    start = end + 1;
  }
}

bool IsValidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    unsigned char lead = static_cast<unsigned char>(text[i]);
    size_t length;
    uint32_t code_point;
    if (lead < 0x80) {
      ++i;
      continue;
    } else if ((lead & 0xE0) == 0xC0) {
      length = 2, code_point = lead & 0x1F;
    } else if ((lead & 0xF0) == 0xE0) {
      length = 3, code_point = lead & 0x0F;
    } else if ((lead & 0xF8) == 0xF0) {
      length = 4, code_point = lead & 0x07;
    } else {
      return false;
    }
    if (i + length > text.size()) return false;
    for (size_t k = 1; k < length; ++k) {
      unsigned char next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      code_point = (code_point << 6) | (next & 0x3F);
    }
    static constexpr uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code_point < kMinForLength[length] || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) {
      return false;  // overlong, out of range, or a surrogate
    }
    i += length;
  }
  return true;
}

Status ValidateEntrypoint(const std::vector<std::string>& entrypoint) {
  if (entrypoint.empty() || entrypoint[0].empty()) {
    return Status::InvalidArgument("the image entrypoint is empty");
  }
  for (size_t i = 0; i < entrypoint.size(); ++i) {
    const std::string& arg = entrypoint[i];
    if (arg.find('\0') != std::string::npos || !IsValidUtf8(arg)) {
      return Status::InvalidArgument("entrypoint[" + std::to_string(i) + "] has a NUL byte or is not valid UTF-8");
    }
  }
  return Status::Ok();
}

// Returns the normalised file paths, in order, after checking every file.
Result<std::vector<std::string>> ValidateFiles(const std::vector<ImageFile>& files) {
  std::vector<std::string> paths;
  std::set<std::string> file_set;
  std::set<std::string> directory_set;
  for (const ImageFile& file : files) {
    IG_ASSIGN_OR_RETURN(std::string path, NormalizeImagePath(file.path_in_image));
    if (file.mode > kMaxMode) {
      return Status::InvalidArgument("image file " + file.path_in_image + " has a mode above 07777");
    }
    if (file.content.size() > kMaxUstarSize) {
      return Status::InvalidArgument("image file " + file.path_in_image +
                                     " is too large for a ustar header (8 GiB or more)");
    }
    if (!file_set.insert(path).second) {
      return Status::InvalidArgument("image path /" + path + " is given twice");
    }
    for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
      directory_set.insert(path.substr(0, slash));
    }
    paths.push_back(std::move(path));
  }
  for (const std::string& directory : directory_set) {
    if (file_set.count(directory)) {
      return Status::InvalidArgument("image path /" + directory + " is a file and also the directory of another file");
    }
    if (!SplitUstarName(DirectoryMemberName(directory))) {
      return Status::InvalidArgument("image directory /" + directory + " is too long for a ustar header");
    }
  }
  return paths;
}

// --- JSON documents (fixed key order, so digests are stable) ---------------------

// A blob of the layout and its digest, hashed once.
struct Blob {
  explicit Blob(std::string content) : bytes(std::move(content)), digest(Sha256Digest(bytes)) {}
  std::string bytes;
  std::string digest;
};

std::string DescriptorJson(const char* media_type, const Blob& blob, const std::string& annotations_json = "") {
  std::string out = "{\"mediaType\":" + JsonString(media_type) + ",\"digest\":" + JsonString(blob.digest) +
                    ",\"size\":" + std::to_string(blob.bytes.size());
  if (!annotations_json.empty()) out += ",\"annotations\":" + annotations_json;
  return out + "}";
}

// The layer is uncompressed, so its diff_id is its digest.
std::string ConfigJson(const std::vector<std::string>& entrypoint, const Blob& layer) {
  std::string args;
  for (const std::string& arg : entrypoint) args += (args.empty() ? "" : ",") + JsonString(arg);
  return std::string("{\"architecture\":") + JsonString(kArchitecture) +
         ",\"os\":\"linux\",\"config\":{\"Entrypoint\":[" + args + "]},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[" +
         JsonString(layer.digest) + "]}}";
}

std::string ManifestJson(const Blob& config, const Blob& layer) {
  return std::string("{\"schemaVersion\":2,\"mediaType\":") + JsonString(kManifestMediaType) +
         ",\"config\":" + DescriptorJson(kConfigMediaType, config) + ",\"layers\":[" +
         DescriptorJson(kLayerMediaType, layer) + "]}";
}

std::string IndexJson(const Blob& manifest, const std::string& ref_name) {
  std::string annotations;
  if (!ref_name.empty()) {
    annotations = "{" + JsonString(kRefNameAnnotation) + ":" + JsonString(ref_name) + "}";
  }
  return std::string("{\"schemaVersion\":2,\"mediaType\":") + JsonString(kIndexMediaType) + ",\"manifests\":[" +
         DescriptorJson(kManifestMediaType, manifest, annotations) + "]}";
}

std::string LayerTar(const std::vector<ImageFile>& files, const std::vector<std::string>& paths) {
  TarWriter tar;
  std::set<std::string> written_directories;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string& path = paths[i];
    for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
      std::string directory = path.substr(0, slash);
      if (written_directories.insert(directory).second) tar.AddDirectory(directory, 0755);
    }
    tar.AddFile(path, files[i].content, files[i].mode);
  }
  return std::move(tar).Finish();
}

void AddBlob(TarWriter& archive, const Blob& blob) {
  archive.AddFile("blobs/sha256/" + DigestHex(blob.digest), blob.bytes, 0644);
}

}  // namespace

Result<OciArchiveContent> RenderOciArchive(const std::vector<ImageFile>& files,
                                           const std::vector<std::string>& entrypoint, const std::string& ref_name) {
  IG_ASSIGN_OR_RETURN(std::vector<std::string> paths, ValidateFiles(files));
  IG_RETURN_IF_ERROR(ValidateEntrypoint(entrypoint));
  if (!ref_name.empty() && !IsValidRefName(ref_name)) {
    return Status::InvalidArgument("image ref name \"" + ref_name +
                                   "\" is not of the OCI form name(/name)*[:tag], e.g. "
                                   "\"idlegrid/bench:1\"");
  }
  const Blob layer(LayerTar(files, paths));
  const Blob config(ConfigJson(entrypoint, layer));
  const Blob manifest(ManifestJson(config, layer));

  TarWriter archive;
  archive.AddFile("oci-layout", "{\"imageLayoutVersion\":\"1.0.0\"}", 0644);
  archive.AddFile("index.json", IndexJson(manifest, ref_name), 0644);
  archive.AddDirectory("blobs", 0755);
  archive.AddDirectory("blobs/sha256", 0755);
  AddBlob(archive, config);
  AddBlob(archive, layer);
  AddBlob(archive, manifest);
  return OciArchiveContent{std::move(archive).Finish(), manifest.digest, config.digest};
}

Result<BuiltImage> BuildOciArchive(const std::vector<ImageFile>& files, const std::vector<std::string>& entrypoint,
                                   const std::string& ref_name, const std::string& out_path) {
  IG_ASSIGN_OR_RETURN(OciArchiveContent content, RenderOciArchive(files, entrypoint, ref_name));
  IG_RETURN_IF_ERROR(WriteFileAtomic(out_path, content.bytes, 0644));
  return BuiltImage{std::move(content.manifest_digest), std::move(content.config_digest), out_path};
}

}  // namespace idlegrid::image
