#include "common/digest.h"

#include <openssl/evp.h>

#include <cstdio>
#include <fstream>
#include <vector>

namespace idlegrid {

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr);
}

Sha256::~Sha256() { EVP_MD_CTX_free(impl_->ctx); }

void Sha256::Update(const void* data, size_t size) { EVP_DigestUpdate(impl_->ctx, data, size); }

std::string Sha256::Finish() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(impl_->ctx, out, &len);
  static const char* kHex = "0123456789abcdef";
  std::string s = "sha256:";
  for (unsigned int i = 0; i < len; ++i) {
    s.push_back(kHex[out[i] >> 4]);
    s.push_back(kHex[out[i] & 0xf]);
  }
  return s;
}

std::string Sha256Digest(std::string_view data) {
  Sha256 h;
  h.Update(data);
  return h.Finish();
}

Result<std::string> Sha256File(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open " + path);
  Sha256 h;
  std::vector<char> buf(1 << 16);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h.Update(buf.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return Status::Internal("read error on " + path);
  return h.Finish();
}

bool IsValidDigest(std::string_view digest) {
  if (digest.size() != 71 || digest.substr(0, 7) != "sha256:") return false;
  for (char c : digest.substr(7)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string DigestHex(std::string_view digest) { return std::string(digest.substr(7)); }

}  // namespace idlegrid
