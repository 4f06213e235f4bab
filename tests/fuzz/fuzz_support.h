#pragma once
// Helpers shared by the fuzz targets (tests/fuzz/*_fuzz.cc): the input as a
// string, an invariant check that aborts (libFuzzer then saves the input as a
// crash), and an in-memory file for the parsers that read a path or an fd.
#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/message.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace idlegrid::fuzz {

inline std::string AsString(const uint8_t* data, size_t size) {
  return size == 0 ? std::string() : std::string(reinterpret_cast<const char*>(data), size);
}

// An invariant the code under test documents: breaking it is a finding.
#define FUZZ_CHECK(cond)                                                                       \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      std::fprintf(stderr, "fuzz invariant broken at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                            \
    }                                                                                          \
  } while (0)

// A message's bytes with map entries sorted: equal bytes, equal messages
// (what SpecDigest hashes), so a round trip can be compared exactly.
inline std::string DeterministicBytes(const google::protobuf::Message& m) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    if (!m.SerializeToCodedStream(&coded)) std::abort();
  }
  return out;
}

// One anonymous in-memory file per process (memfd), refilled per input: the
// tar and OCI archive readers take a path (here /proc/self/fd/N, a regular
// file to fstat) or an fd, and nothing is left in /tmp when a run is killed.
class MemFile {
 public:
  static MemFile& Get() {
    static MemFile file;
    return file;
  }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // Replaces the file's content with `data`.
  void Fill(const std::string& data) {
    if (::ftruncate(fd_, 0) != 0) std::abort();
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::pwrite(fd_, data.data() + done, data.size() - done, static_cast<off_t>(done));
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
  }

 private:
  MemFile() : fd_(::memfd_create("idlegrid-fuzz", MFD_CLOEXEC)) {
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  int fd_;
  std::string path_;
};

}  // namespace idlegrid::fuzz
