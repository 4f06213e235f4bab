#include "image/gzip_layer.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <vector>

#include "common/digest.h"

namespace idlegrid::image {
namespace {

constexpr size_t kChunk = 256 * 1024;

Status WriteAll(int fd, const unsigned char* data, size_t size, const std::string& path) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Internal("cannot write " + path + ": " + std::strerror(errno));
    data += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

bool IsGzip(int fd, uint64_t offset, uint64_t size) {
  unsigned char magic[2] = {0, 0};
  return size >= 2 && ::pread(fd, magic, 2, static_cast<off_t>(offset)) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

Result<std::string> GunzipToFile(int fd, uint64_t offset, uint64_t size, const std::string& out_path,
                                 uint64_t max_bytes, const std::string& what) {
  const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (out < 0) return Status::Internal("cannot create " + out_path + ": " + std::strerror(errno));
  struct Closer {
    int fd;
    z_stream* zs;
    ~Closer() {
      ::close(fd);
      inflateEnd(zs);
    }
  };
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {  // 16: expect a gzip header
    ::close(out);
    return Status::Internal("zlib inflateInit2 failed");
  }
  Closer closer{out, &zs};
  std::vector<unsigned char> in(kChunk), buf(kChunk);
  Sha256 hasher;
  uint64_t read_at = offset, written = 0;
  const uint64_t end = offset + size;
  bool stream_ended = false;
  bool output_pending = false;  // inflate filled the buffer: it may hold more
  while (true) {
    if (zs.avail_in == 0 && read_at < end) {
      ssize_t n = ::pread(fd, in.data(), static_cast<size_t>(std::min<uint64_t>(kChunk, end - read_at)),
                          static_cast<off_t>(read_at));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Status::Internal(what + ": read failed: " + std::strerror(n < 0 ? errno : EIO));
      read_at += static_cast<uint64_t>(n);
      zs.next_in = in.data();
      zs.avail_in = static_cast<uInt>(n);
    }
    if (stream_ended) {
      if (zs.avail_in == 0) break;  // the last member ended with the data
      // Another gzip member follows (concatenated streams are valid gzip).
      if (inflateReset(&zs) != Z_OK) return Status::Internal("zlib inflateReset failed");
      stream_ended = false;
    } else if (zs.avail_in == 0 && !output_pending) {
      break;  // input exhausted inside a member: truncated
    }
    zs.next_out = buf.data();
    zs.avail_out = static_cast<uInt>(buf.size());
    const int rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
      return Status::InvalidArgument(what + " is not valid gzip: " + (zs.msg ? zs.msg : "inflate failed"));
    }
    const size_t produced = buf.size() - zs.avail_out;
    output_pending = zs.avail_out == 0;
    written += produced;
    if (written > max_bytes) {
      return Status::InvalidArgument(what + " inflates to more than " + std::to_string(max_bytes) + " bytes");
    }
    hasher.Update(buf.data(), produced);
    IG_RETURN_IF_ERROR(WriteAll(out, buf.data(), produced, out_path));
    if (rc == Z_STREAM_END) stream_ended = true;
  }
  if (!stream_ended) return Status::InvalidArgument(what + " is truncated gzip");
  return hasher.Finish();
}

}  // namespace idlegrid::image
