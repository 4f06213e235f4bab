// Fuzzes the tar readers that take pushed images apart (all hostile input):
// image::TarReader::Open, which indexes an OCI archive's plain files, and
// image::LayerTarReader::Next, which walks every entry of an image layer; a
// gzip layer (image::IsGzip) is first inflated by image::GunzipToFile, as the
// unpacker does, then walked. The input lives in a memfd (TarReader::Open
// takes a path: /proc/self/fd/N). Invariants (tar_reader.h, layer_tar.h,
// gzip_layer.h): every path is normalised (relative, no "", "." or ".."
// parts; a hard link's target too), a regular file lies within the input and
// reads back as exactly those bytes, ReadAll refuses a cap below the size,
// modes fit 07777, and GunzipToFile's digest is the sha256 of what it wrote.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/digest.h"
#include "common/fs.h"
#include "fuzz_support.h"
#include "image/gzip_layer.h"
#include "image/layer_tar.h"
#include "image/tar_reader.h"

namespace {

using idlegrid::Status;
namespace image = idlegrid::image;

bool Normalised(std::string_view path, bool may_be_empty) {
  if (path.empty()) return may_be_empty;
  if (path.front() == '/' || path.find('\0') != std::string_view::npos) return false;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

void CheckTarReader(const std::string& path, const std::string& bytes) {
  auto tar = image::TarReader::Open(path);
  if (!tar.ok()) return;
  for (const auto& [name, member] : tar->members()) {
    FUZZ_CHECK(name == member.path && Normalised(name, false));
    FUZZ_CHECK(member.offset <= bytes.size() && member.size <= bytes.size() - member.offset);
    FUZZ_CHECK(tar->Find(name) != nullptr);
    auto content = tar->ReadAll(member, member.size);
    FUZZ_CHECK(content.ok() && content.value() == bytes.substr(member.offset, member.size));
    if (member.size > 0) FUZZ_CHECK(!tar->ReadAll(member, member.size - 1).ok());
  }
}

void WalkLayer(int fd, const std::string& bytes) {
  image::LayerTarReader reader(fd, 0, bytes.size(), "layer");
  for (int n = 0; n < 100000; ++n) {
    auto next = reader.Next();
    if (!next.ok() || !next.value()) return;
    const image::LayerEntry& e = *next.value();
    FUZZ_CHECK(Normalised(e.path, true));
    FUZZ_CHECK(e.mode <= 07777);
    if (e.type == image::LayerEntryType::kHardLink) FUZZ_CHECK(Normalised(e.link_target, false));
    if (e.type == image::LayerEntryType::kSymlink) {
      FUZZ_CHECK(!e.link_target.empty() && e.link_target.find('\0') == std::string::npos);
    }
    if (e.type != image::LayerEntryType::kRegular) continue;
    FUZZ_CHECK(e.content_offset <= bytes.size() && e.size <= bytes.size() - e.content_offset);
    std::string content;
    Status read = reader.ReadContent(e, [&content](std::string_view chunk) {
      content.append(chunk);
      return Status::Ok();
    });
    FUZZ_CHECK(read.ok() && content == bytes.substr(e.content_offset, e.size));
  }
}

// A directory of this process's own for GunzipToFile's output (it creates
// the file, O_EXCL), removed at exit.
const char* ScratchDir() {
  static char dir[] = "/tmp/idlegrid-tar-fuzz-XXXXXX";
  static const bool made = [] {
    if (::mkdtemp(dir) == nullptr) std::abort();
    std::atexit([] { ::rmdir(dir); });
    return true;
  }();
  (void)made;
  return dir;
}

void Gunzipped(int fd, const std::string& bytes) {
  const std::string out = std::string(ScratchDir()) + "/layer.tar";
  ::unlink(out.c_str());
  auto digest = image::GunzipToFile(fd, 0, bytes.size(), out, 16u << 20, "layer");
  if (digest.ok()) {
    auto inflated = idlegrid::ReadFile(out);
    FUZZ_CHECK(inflated.ok() && idlegrid::Sha256Digest(inflated.value()) == digest.value());
    const int in = ::open(out.c_str(), O_RDONLY | O_CLOEXEC);
    FUZZ_CHECK(in >= 0);
    WalkLayer(in, inflated.value());
    ::close(in);
  }
  ::unlink(out.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes = idlegrid::fuzz::AsString(data, size);
  idlegrid::fuzz::MemFile& file = idlegrid::fuzz::MemFile::Get();
  file.Fill(bytes);
  if (image::IsGzip(file.fd(), 0, bytes.size())) {
    Gunzipped(file.fd(), bytes);
    return 0;
  }
  CheckTarReader(file.path(), bytes);
  WalkLayer(file.fd(), bytes);
  return 0;
}
