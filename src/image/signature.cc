#include "image/signature.h"

#include <sodium.h>

#include <algorithm>
#include <cstdlib>

#include "common/digest.h"

namespace idlegrid::image {
namespace {

static_assert(crypto_sign_PUBLICKEYBYTES == 32);
static_assert(crypto_sign_SECRETKEYBYTES == 64);
static_assert(crypto_sign_BYTES == 64);

constexpr size_t kMaxKeyName = 64;
constexpr int kBase64 = sodium_base64_VARIANT_ORIGINAL;

void InitSodium() {
  if (sodium_init() < 0) std::abort();  // no entropy source: no key is safe
}

std::string ToBase64(const unsigned char* bytes, size_t size) {
  std::string out(sodium_base64_ENCODED_LEN(size, kBase64), '\0');
  sodium_bin2base64(out.data(), out.size(), bytes, size, kBase64);
  out.pop_back();  // the terminating NUL
  return out;
}

// Exactly `want` bytes from base64 `text`, or an error naming `what`.
Result<std::string> FromBase64(std::string_view text, size_t want, std::string_view source, const char* what) {
  std::string out(want + 3, '\0');  // room to notice a longer key
  size_t decoded = 0;
  const char* end = nullptr;
  const int rc = sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), text.data(), text.size(),
                                   nullptr, &decoded, &end, kBase64);
  if (rc != 0 || end != text.data() + text.size()) {
    return Status::InvalidArgument(std::string(source) + ": the " + what + " is not valid base64");
  }
  if (decoded != want) {
    return Status::InvalidArgument(std::string(source) + ": the " + what + " is " + std::to_string(decoded) +
                                   " bytes, not " + std::to_string(want));
  }
  out.resize(want);
  return out;
}

// Whitespace-separated fields of one line; more than one line is an error
// the caller reports (a key file holds one key).
std::vector<std::string_view> Fields(std::string_view text, bool* several_lines) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' || text.back() == '\t')) {
    text.remove_suffix(1);
  }
  *several_lines = text.find('\n') != std::string_view::npos;
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r')) ++i;
    size_t j = i;
    while (j < text.size() && text[j] != ' ' && text[j] != '\t' && text[j] != '\r') ++j;
    if (j > i) out.push_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

std::string Shown(std::string_view s) { return s.size() <= 40 ? std::string(s) : std::string(s.substr(0, 40)) + "..."; }

}  // namespace

std::string ImageKeyId(std::string_view public_key) { return DigestHex(Sha256Digest(public_key)).substr(0, 16); }

Status ValidateKeyName(std::string_view name) {
  if (name.empty() || name.size() > kMaxKeyName) {
    return Status::InvalidArgument("key name \"" + Shown(name) + "\" must be 1 to 64 characters");
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-' || c == '@';
    if (!ok) return Status::InvalidArgument("key name \"" + Shown(name) + "\" may hold only A-Z a-z 0-9 . _ - @");
  }
  return Status::Ok();
}

std::string FormatPublicKey(const ImagePublicKey& key) {
  std::string line = std::string(kPublicKeyTag) + " " +
                     ToBase64(reinterpret_cast<const unsigned char*>(key.key.data()), key.key.size());
  if (!key.name.empty()) line += " " + key.name;
  return line + "\n";
}

Result<ImagePublicKey> ParsePublicKey(std::string_view text, std::string_view source) {
  bool several = false;
  const auto fields = Fields(text, &several);
  const std::string where(source);
  if (several) return Status::InvalidArgument(where + ": a public key is one line; found several");
  if (fields.empty())
    return Status::InvalidArgument(where + ": empty; expected \"" + kPublicKeyTag + " <base64> NAME\"");
  if (fields[0] != kPublicKeyTag) {
    const std::string hint = fields[0] == kSecretKeyTag ? " (this is a secret key: use the .pub file)" : "";
    return Status::InvalidArgument(where + ": starts with \"" + Shown(fields[0]) + "\", not \"" + kPublicKeyTag + "\"" +
                                   hint);
  }
  if (fields.size() < 2) return Status::InvalidArgument(where + ": the public key is missing after " + kPublicKeyTag);
  if (fields.size() > 3) return Status::InvalidArgument(where + ": unexpected text after the key name");
  ImagePublicKey key;
  IG_ASSIGN_OR_RETURN(key.key, FromBase64(fields[1], crypto_sign_PUBLICKEYBYTES, source, "public key"));
  if (fields.size() == 3) {
    if (Status st = ValidateKeyName(fields[2]); !st.ok()) return st.WithContext(where);
    key.name = std::string(fields[2]);
  }
  return key;
}

// --- ImageSigningKey ------------------------------------------------------------

ImageSigningKey::ImageSigningKey(const SecretKey& secret, std::string name) : secret_(secret) {
  public_key_.key.assign(reinterpret_cast<const char*>(secret_.data()) + crypto_sign_SEEDBYTES,
                         crypto_sign_PUBLICKEYBYTES);
  public_key_.name = std::move(name);
}

ImageSigningKey::~ImageSigningKey() { sodium_memzero(secret_.data(), secret_.size()); }

Result<ImageSigningKey> ImageSigningKey::Generate(std::string name) {
  IG_RETURN_IF_ERROR(ValidateKeyName(name));
  InitSodium();
  SecretKey secret;
  unsigned char public_key[crypto_sign_PUBLICKEYBYTES];
  crypto_sign_keypair(public_key, secret.data());
  ImageSigningKey key(secret, std::move(name));
  sodium_memzero(secret.data(), secret.size());
  return key;
}

Result<ImageSigningKey> ImageSigningKey::Parse(std::string_view text, std::string_view source) {
  InitSodium();
  bool several = false;
  const auto fields = Fields(text, &several);
  const std::string where(source);
  if (several || fields.size() != 3 || fields[0] != kSecretKeyTag) {
    const std::string hint =
        !fields.empty() && fields[0] == kPublicKeyTag ? " (this is a public key: sign with the .key file)" : "";
    return Status::InvalidArgument(where + ": not an idlegrid secret key; expected one line \"" + kSecretKeyTag +
                                   " <base64> NAME\"" + hint);
  }
  if (Status st = ValidateKeyName(fields[2]); !st.ok()) return st.WithContext(where);
  IG_ASSIGN_OR_RETURN(std::string raw, FromBase64(fields[1], crypto_sign_SECRETKEYBYTES, source, "secret key"));
  SecretKey secret;
  std::copy(raw.begin(), raw.end(), secret.begin());
  sodium_memzero(raw.data(), raw.size());
  // The stored public half must be the seed's, or every signature made with
  // it would fail verification far from here.
  unsigned char derived_public[crypto_sign_PUBLICKEYBYTES];
  unsigned char derived_secret[crypto_sign_SECRETKEYBYTES];
  crypto_sign_seed_keypair(derived_public, derived_secret, secret.data());
  const bool consistent = sodium_memcmp(derived_secret, secret.data(), secret.size()) == 0;
  sodium_memzero(derived_secret, sizeof(derived_secret));
  if (!consistent) {
    sodium_memzero(secret.data(), secret.size());
    return Status::DataLoss(where + ": corrupt secret key: its public half does not match its seed");
  }
  ImageSigningKey key(secret, std::string(fields[2]));
  sodium_memzero(secret.data(), secret.size());
  return key;
}

std::string ImageSigningKey::Format() const {
  return std::string(kSecretKeyTag) + " " + ToBase64(secret_.data(), secret_.size()) + " " + public_key_.name + "\n";
}

Result<std::string> ImageSigningKey::Sign(std::string_view image_digest) const {
  if (!IsValidDigest(image_digest)) {
    return Status::InvalidArgument("image \"" + Shown(image_digest) + "\" is not a digest \"sha256:<64 hex>\"");
  }
  const std::string message = SignedMessage(image_digest);
  std::string signature(crypto_sign_BYTES, '\0');
  crypto_sign_detached(reinterpret_cast<unsigned char*>(signature.data()), nullptr,
                       reinterpret_cast<const unsigned char*>(message.data()), message.size(), secret_.data());
  return signature;
}

// --- verification -------------------------------------------------------------------

std::string SignedMessage(std::string_view image_digest) {
  return std::string(kSignatureDomain) + std::string(image_digest) + "\n";
}

Status VerifyImageSignature(std::string_view image_digest, std::string_view public_key, std::string_view signature) {
  InitSodium();
  if (!IsValidDigest(image_digest)) {
    return Status::InvalidArgument("image \"" + Shown(image_digest) + "\" is not a digest \"sha256:<64 hex>\"");
  }
  if (public_key.size() != crypto_sign_PUBLICKEYBYTES) {
    return Status::InvalidArgument("the public key is " + std::to_string(public_key.size()) + " bytes, not 32");
  }
  if (signature.size() != crypto_sign_BYTES) {
    return Status::InvalidArgument("the signature is " + std::to_string(signature.size()) + " bytes, not 64");
  }
  const std::string message = SignedMessage(image_digest);
  if (crypto_sign_verify_detached(reinterpret_cast<const unsigned char*>(signature.data()),
                                  reinterpret_cast<const unsigned char*>(message.data()), message.size(),
                                  reinterpret_cast<const unsigned char*>(public_key.data())) != 0) {
    return Status::InvalidArgument("the signature by key " + ImageKeyId(public_key) + " does not verify for image " +
                                   std::string(image_digest));
  }
  return Status::Ok();
}

SignatureVerdict JudgeSignatures(std::string_view image_digest, const std::vector<v1::ImageSignature>& signatures,
                                 const std::vector<ImagePublicKey>& trusted) {
  SignatureVerdict out;
  for (const v1::ImageSignature& s : signatures) {
    if (!VerifyImageSignature(image_digest, s.public_key(), s.signature()).ok()) {
      ++out.invalid;
      continue;
    }
    const std::string id = ImageKeyId(s.public_key());
    out.valid_signers.push_back(id);
    if (out.trusted()) continue;
    for (const ImagePublicKey& k : trusted) {
      if (k.key == s.public_key()) {
        out.trusted_signer = id;
        break;
      }
    }
  }
  return out;
}

std::string DescribeKeys(const std::vector<ImagePublicKey>& keys) {
  std::string out;
  for (const ImagePublicKey& k : keys) {
    out += (out.empty() ? "" : ", ") + k.id();
    if (!k.name.empty()) out += " (" + k.name + ")";
  }
  return out.empty() ? "none" : out;
}

std::string UntrustedImageReason(std::string_view image_digest, const SignatureVerdict& verdict,
                                 const std::vector<ImagePublicKey>& trusted, std::string_view who) {
  std::string signers;
  for (const std::string& id : verdict.valid_signers) signers += (signers.empty() ? "" : ", ") + id;
  std::string out = "image " + std::string(image_digest) + " is not signed by a key " + std::string(who) +
                    " trusts (trusted: " + DescribeKeys(trusted) +
                    "; valid signatures by: " + (signers.empty() ? "none" : signers);
  if (verdict.invalid > 0) out += "; " + std::to_string(verdict.invalid) + " that do not verify";
  return out + ")";
}

}  // namespace idlegrid::image
