#include "image/oci_archive_writer.h"

#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <set>

#include "common/digest.h"
#include "common/json_writer.h"
#include "common/unique_fd.h"

namespace idlegrid::image {
namespace {

constexpr size_t kBlock = 512;

// Number fields in octal, or GNU base-256 when they do not fit (blobs of 8 GiB
// and more): the archive's readers (tar_reader.cc) take both.
void PutNumber(char* field, size_t width, uint64_t value) {
  const uint64_t octal_max = (width - 1) * 3 >= 64 ? ~0ull : (1ull << ((width - 1) * 3)) - 1;
  if (value <= octal_max) {
    std::snprintf(field, width, "%0*llo", static_cast<int>(width - 1), static_cast<unsigned long long>(value));
    return;
  }
  std::memset(field, 0, width);
  field[0] = static_cast<char>(0x80);
  for (size_t i = width - 1; i > 0 && value > 0; --i, value >>= 8) field[i] = static_cast<char>(value & 0xff);
}

std::string Header(const std::string& name, uint64_t size, char type) {
  std::string h(kBlock, '\0');
  std::memcpy(h.data(), name.data(), name.size());  // callers keep names under 100 bytes
  PutNumber(&h[100], 8, type == '5' ? 0755 : 0644);
  PutNumber(&h[108], 8, 0);
  PutNumber(&h[116], 8, 0);
  PutNumber(&h[124], 12, size);
  PutNumber(&h[136], 12, 0);
  h[156] = type;
  std::memcpy(&h[257], "ustar", 6);
  std::memcpy(&h[263], "00", 2);
  std::memset(&h[148], ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(&h[148], 8, "%06o", sum);
  h[155] = ' ';
  return h;
}

class ArchiveFile {
 public:
  explicit ArchiveFile(int fd) : fd_(fd) {}
  Status Write(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n <= 0) return Status::Internal(std::string("write: ") + std::strerror(errno));
      done += static_cast<size_t>(n);
    }
    return Status::Ok();
  }
  Status Pad(uint64_t size) { return size % kBlock ? Write(std::string(kBlock - size % kBlock, '\0')) : Status::Ok(); }
  Status Member(const std::string& name, const std::string& content) {
    IG_RETURN_IF_ERROR(Write(Header(name, content.size(), '0')));
    IG_RETURN_IF_ERROR(Write(content));
    return Pad(content.size());
  }
  // Copies the file in the kernel (sendfile): a layer of hundreds of MB
  // never passes through this process's memory.
  Status CopyMember(const std::string& name, const BlobFile& blob) {
    UniqueFd in(::open(blob.path.c_str(), O_RDONLY | O_CLOEXEC));
    if (in.get() < 0) return Status::NotFound("blob " + blob.digest + " is not at " + blob.path);
    struct stat st {};
    if (::fstat(in.get(), &st) != 0 || static_cast<uint64_t>(st.st_size) != blob.size) {
      return Status::NotFound("blob " + blob.digest + " at " + blob.path + " is not " + std::to_string(blob.size) +
                              " bytes");
    }
    IG_RETURN_IF_ERROR(Write(Header(name, blob.size, '0')));
    uint64_t left = blob.size;
    while (left > 0) {
      ssize_t n = ::sendfile(fd_, in.get(), nullptr, left > (1u << 30) ? (1u << 30) : left);
      if (n <= 0) return Status::Internal("copying " + blob.path + ": " + std::strerror(errno));
      left -= static_cast<uint64_t>(n);
    }
    return Pad(blob.size);
  }

 private:
  int fd_;
};

std::string IndexJson(const OciBlobRef& manifest, const std::string& ref_name) {
  std::string out = R"({"schemaVersion":2,"manifests":[{"mediaType":)" + JsonString(manifest.media_type) +
                    R"(,"digest":)" + JsonString(manifest.digest) + R"(,"size":)" + std::to_string(manifest.size);
  if (!ref_name.empty()) out += R"(,"annotations":{"org.opencontainers.image.ref.name":)" + JsonString(ref_name) + "}";
  return out + "}]}";
}

}  // namespace

Status WriteOciArchiveFromBlobs(const OciBlobRef& manifest, const std::vector<BlobFile>& blobs,
                                const std::string& ref_name, const std::string& out_path) {
  std::set<std::string> names;
  bool has_manifest = false;
  for (const BlobFile& b : blobs) {
    if (!IsValidDigest(b.digest)) return Status::InvalidArgument("blob digest '" + b.digest + "' is malformed");
    if (!names.insert(b.digest).second) return Status::InvalidArgument("blob " + b.digest + " is listed twice");
    has_manifest = has_manifest || b.digest == manifest.digest;
  }
  if (!has_manifest) return Status::InvalidArgument("the manifest's blob " + manifest.digest + " is not listed");
  const std::string tmp = out_path + ".tmp";
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (fd.get() < 0) return Status::Internal("cannot create " + tmp + ": " + std::strerror(errno));
  ArchiveFile out(fd.get());
  auto write_all = [&]() -> Status {
    IG_RETURN_IF_ERROR(out.Member("oci-layout", R"({"imageLayoutVersion":"1.0.0"})"));
    IG_RETURN_IF_ERROR(out.Member("index.json", IndexJson(manifest, ref_name)));
    IG_RETURN_IF_ERROR(out.Write(Header("blobs/", 0, '5')));
    IG_RETURN_IF_ERROR(out.Write(Header("blobs/sha256/", 0, '5')));
    for (const BlobFile& b : blobs) IG_RETURN_IF_ERROR(out.CopyMember("blobs/sha256/" + DigestHex(b.digest), b));
    return out.Write(std::string(2 * kBlock, '\0'));
  };
  // No fsync: the archive lives only until the runtime has loaded it, and
  // its readers verify every blob; a crash leaves a file assembled again.
  Status st = write_all();
  fd.Reset();
  if (st.ok() && std::rename(tmp.c_str(), out_path.c_str()) != 0) {
    st = Status::Internal("cannot rename " + tmp + ": " + std::strerror(errno));
  }
  if (!st.ok()) std::remove(tmp.c_str());
  return st.WithContext("writing " + out_path);
}

}  // namespace idlegrid::image
