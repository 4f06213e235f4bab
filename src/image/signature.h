#pragma once
// Image signatures (docs/containment.md, Signatures): Ed25519 keys, their file formats,
// and signing and checking an image's manifest digest. Pure: no files, no
// clock; callers read and write the files. Key generation draws from
// libsodium's CSPRNG.
//
// The signed bytes are domain-separated, so an image signature can never be
// taken for any other Ed25519 signature (a node's advertisement, say):
//   "idlegrid-image-signature-v1\n" + "sha256:<64 hex>" + "\n"
// where the digest is the image's OCI manifest digest, as jobs name it.
//
// File formats, one line each (a trailing newline is optional on reading):
//   public key  (NAME.pub): idlegrid-ed25519 <base64 32-byte key> [NAME]
//   secret key  (NAME.key): idlegrid-ed25519-secret <base64 64-byte key> NAME
// The secret key is libsodium's: the 32-byte seed, then the public key.
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::image {

inline constexpr char kPublicKeyTag[] = "idlegrid-ed25519";
inline constexpr char kSecretKeyTag[] = "idlegrid-ed25519-secret";
inline constexpr char kSignatureDomain[] = "idlegrid-image-signature-v1\n";

// "sha256(public_key)" as its first 16 hex characters: how keys are named in
// policies, refusals and the coordinator's signature files.
std::string ImageKeyId(std::string_view public_key);

// A key name is a label of 1-64 characters from [A-Za-z0-9._@-] (it becomes
// part of file names). InvalidArgument naming the offending name otherwise.
Status ValidateKeyName(std::string_view name);

struct ImagePublicKey {
  std::string key;   // 32 raw bytes
  std::string name;  // label from the key file; may be empty
  std::string id() const { return ImageKeyId(key); }
};

// The public-key line, with a newline.
std::string FormatPublicKey(const ImagePublicKey& key);
// Parses a public-key line (surrounding whitespace ignored). `source` names
// where the text came from ("owner.pub", "policy.yaml:7:5") and starts every
// error: InvalidArgument for a wrong tag, bad base64, a key that is not 32
// bytes, a bad name or extra fields.
Result<ImagePublicKey> ParsePublicKey(std::string_view text, std::string_view source);

// A signing key. The secret half is wiped when the object is destroyed.
class ImageSigningKey {
 public:
  // A fresh key named `name` (InvalidArgument for a bad name). Aborts if
  // libsodium cannot initialise.
  static Result<ImageSigningKey> Generate(std::string name);
  // Parses a secret-key file's text; errors start with `source`:
  // InvalidArgument for a wrong tag, bad base64, a key that is not 64 bytes or
  // a missing or bad name, DataLoss when its public half does not match its seed.
  static Result<ImageSigningKey> Parse(std::string_view text, std::string_view source);

  ImageSigningKey(const ImageSigningKey&) = default;
  ImageSigningKey& operator=(const ImageSigningKey&) = default;
  ~ImageSigningKey();

  // The secret-key file's content (keep it 0600).
  std::string Format() const;
  const ImagePublicKey& public_key() const { return public_key_; }
  // 64-byte signature over SignedMessage(image_digest). InvalidArgument when
  // `image_digest` is not "sha256:<64 lowercase hex>".
  Result<std::string> Sign(std::string_view image_digest) const;

 private:
  using SecretKey = std::array<unsigned char, 64>;
  ImageSigningKey(const SecretKey& secret, std::string name);
  SecretKey secret_{};
  ImagePublicKey public_key_;
};

// The bytes signed for an image.
std::string SignedMessage(std::string_view image_digest);

// Ok if `signature` is `public_key`'s signature over the image; otherwise
// InvalidArgument saying what is wrong (a malformed digest, a key that is not
// 32 bytes, a signature that is not 64 bytes, or one that does not verify).
Status VerifyImageSignature(std::string_view image_digest, std::string_view public_key, std::string_view signature);

// What an image's signatures say under a list of trusted keys.
struct SignatureVerdict {
  std::string trusted_signer;              // id of a trusted key with a valid signature; "": none
  std::vector<std::string> valid_signers;  // ids of every key with a valid signature, in order
  int invalid = 0;                         // signatures that do not verify for this image
  bool trusted() const { return !trusted_signer.empty(); }
};

// Checks every signature against `image_digest` (a record naming another
// image does not verify) and whether one is by a key of `trusted`, compared
// by the whole public key, never by id or name alone.
SignatureVerdict JudgeSignatures(std::string_view image_digest, const std::vector<v1::ImageSignature>& signatures,
                                 const std::vector<ImagePublicKey>& trusted);

// "3f9a1c2b7d4e5f60 (owner), 0a1b..." for refusals.
std::string DescribeKeys(const std::vector<ImagePublicKey>& keys);
// The refusal for an image without a trusted signature: names the image,
// the trusted keys and what signatures it has. `who` is whose trust it
// lacks ("this node's owner", "the coordinator's operator").
std::string UntrustedImageReason(std::string_view image_digest, const SignatureVerdict& verdict,
                                 const std::vector<ImagePublicKey>& trusted, std::string_view who);

}  // namespace idlegrid::image
