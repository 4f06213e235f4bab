#include "advert/node_key.h"

#include <sodium.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>

#include "common/digest.h"
#include "common/fs.h"

namespace idlegrid::advert {
namespace {

static_assert(crypto_sign_SECRETKEYBYTES == 64);
static_assert(crypto_sign_PUBLICKEYBYTES == 32);
static_assert(crypto_sign_BYTES == 64);

constexpr char kKeyFileName[] = "node.key";

void InitSodium() {
  if (sodium_init() < 0) std::abort();  // no entropy source: no key is safe
}

std::string ModeString(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

std::string EncodeSecretKey(const unsigned char* secret_key) {
  std::string hex(crypto_sign_SECRETKEYBYTES * 2 + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), secret_key, crypto_sign_SECRETKEYBYTES);
  hex.back() = '\n';
  return hex;
}

}  // namespace

std::string KeyFingerprint(const std::string& public_key) { return Sha256Digest(public_key); }

std::string NodeIdFromPublicKey(const std::string& public_key) {
  return "n-" + DigestHex(KeyFingerprint(public_key)).substr(0, 16);
}

NodeKey::NodeKey(const SecretKey& secret_key) : secret_key_(secret_key) {
  public_key_.assign(reinterpret_cast<const char*>(secret_key_.data()) + crypto_sign_SEEDBYTES,
                     crypto_sign_PUBLICKEYBYTES);
}

NodeKey::~NodeKey() { sodium_memzero(secret_key_.data(), secret_key_.size()); }

NodeKey NodeKey::Generate() {
  InitSodium();
  SecretKey secret_key;
  unsigned char public_key[crypto_sign_PUBLICKEYBYTES];
  crypto_sign_keypair(public_key, secret_key.data());
  NodeKey key(secret_key);
  sodium_memzero(secret_key.data(), secret_key.size());
  return key;
}

Result<NodeKey> NodeKey::LoadOrCreate(const std::string& dir) {
  return LoadOrCreateFile(dir + "/" + kKeyFileName, "node key");
}

Result<NodeKey> NodeKey::LoadOrCreateFile(const std::string& path, const std::string& what) {
  InitSodium();
  const std::string dir = path.substr(0, path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/'));
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (!dir.empty() && !PathExists(dir)) IG_RETURN_IF_ERROR(MakeDirs(dir, 0700));
    NodeKey key = Generate();
    std::string encoded = EncodeSecretKey(key.secret_key_.data());
    Status written = WriteFileAtomic(path, encoded, 0600);
    sodium_memzero(encoded.data(), encoded.size());
    IG_RETURN_IF_ERROR(written);
    return key;
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::FailedPrecondition(what + " " + path + " is not a regular file");
  }
  if ((st.st_mode & 077) != 0) {
    return Status::PermissionDenied(what + " " + path + " has mode " + ModeString(st.st_mode) +
                                    " and is accessible by group or others; run: chmod 600 " + path);
  }
  IG_ASSIGN_OR_RETURN(std::string encoded, ReadFile(path));
  while (!encoded.empty() &&
         (encoded.back() == '\n' || encoded.back() == ' ' || encoded.back() == '\r' || encoded.back() == '\t')) {
    encoded.pop_back();
  }
  SecretKey secret_key;
  size_t decoded = 0;
  const char* hex_end = nullptr;
  int rc =
      sodium_hex2bin(secret_key.data(), secret_key.size(), encoded.data(), encoded.size(), nullptr, &decoded, &hex_end);
  const bool well_formed = rc == 0 && decoded == secret_key.size() && hex_end == encoded.data() + encoded.size();
  sodium_memzero(encoded.data(), encoded.size());
  if (!well_formed) {
    return Status::DataLoss(what + " " + path + " is not 128 hex characters (a 64-byte " +
                            "Ed25519 secret key); restore it from backup or remove it to " + "create a new identity");
  }
  // The secret key is seed || public key; a corrupted public half would make
  // every signature fail verification far from here, so check it now.
  unsigned char derived_public[crypto_sign_PUBLICKEYBYTES];
  unsigned char derived_secret[crypto_sign_SECRETKEYBYTES];
  crypto_sign_seed_keypair(derived_public, derived_secret, secret_key.data());
  const bool consistent = sodium_memcmp(derived_secret, secret_key.data(), crypto_sign_SECRETKEYBYTES) == 0;
  sodium_memzero(derived_secret, sizeof(derived_secret));
  if (!consistent) {
    sodium_memzero(secret_key.data(), secret_key.size());
    return Status::DataLoss(what + " " + path + " is corrupt: its public key does not match " + "its seed");
  }
  NodeKey key(secret_key);
  sodium_memzero(secret_key.data(), secret_key.size());
  return key;
}

std::string NodeKey::Sign(const std::string& message) const {
  std::string signature(crypto_sign_BYTES, '\0');
  crypto_sign_detached(reinterpret_cast<unsigned char*>(signature.data()), nullptr,
                       reinterpret_cast<const unsigned char*>(message.data()), message.size(), secret_key_.data());
  return signature;
}

}  // namespace idlegrid::advert
