// Image signatures (image/signature.h): keys survive their file formats,
// signatures bind one image digest under the idlegrid domain, and every
// malformed key file is refused with the file's name and what is wrong.
#include "image/signature.h"

#include <gtest/gtest.h>
#include <sodium.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/digest.h"

namespace idlegrid::image {
namespace {

const std::string kImage = Sha256Digest("an OCI manifest");
const std::string kOtherImage = Sha256Digest("another OCI manifest");

ImageSigningKey NewKey(const std::string& name) {
  auto key = ImageSigningKey::Generate(name);
  EXPECT_TRUE(key.ok()) << key.status().ToString();
  return *key;
}

v1::ImageSignature SignatureBy(const ImageSigningKey& key, const std::string& image) {
  v1::ImageSignature s;
  s.set_image(image);
  s.set_public_key(key.public_key().key);
  auto sig = key.Sign(image);
  EXPECT_TRUE(sig.ok()) << sig.status().ToString();
  s.set_signature(*sig);
  return s;
}

TEST(ImageKeyTest, KeysRoundTripThroughTheirFilesAndSignAlike) {
  const ImageSigningKey key = NewKey("owner");
  const std::string pub_text = FormatPublicKey(key.public_key());
  EXPECT_EQ(pub_text.rfind("idlegrid-ed25519 ", 0), 0u) << pub_text;
  EXPECT_EQ(pub_text.back(), '\n');
  EXPECT_EQ(pub_text.find('\n'), pub_text.size() - 1) << "one line";

  auto pub = ParsePublicKey(pub_text, "owner.pub");
  ASSERT_TRUE(pub.ok()) << pub.status().ToString();
  EXPECT_EQ(pub->key, key.public_key().key);
  EXPECT_EQ(pub->name, "owner");

  auto secret = ImageSigningKey::Parse(key.Format(), "owner.key");
  ASSERT_TRUE(secret.ok()) << secret.status().ToString();
  EXPECT_EQ(secret->public_key().key, key.public_key().key);
  EXPECT_EQ(secret->public_key().name, "owner");
  // Ed25519 is deterministic: the reloaded key makes the very same signature.
  EXPECT_EQ(*secret->Sign(kImage), *key.Sign(kImage));
  EXPECT_TRUE(VerifyImageSignature(kImage, pub->key, *secret->Sign(kImage)).ok());
}

TEST(ImageKeyTest, TwoGeneratedKeysDiffer) { EXPECT_NE(NewKey("a").public_key().key, NewKey("a").public_key().key); }

TEST(ImageKeyTest, TheKeyIdIsTheFirst16HexOfTheKeysSha256) {
  const ImageSigningKey key = NewKey("owner");
  const std::string id = key.public_key().id();
  EXPECT_EQ(id.size(), 16u);
  EXPECT_EQ(id, Sha256Digest(key.public_key().key).substr(7, 16));
  EXPECT_NE(id, NewKey("owner").public_key().id()) << "the id is the key's, not the name's";
}

TEST(ImageKeyTest, APublicKeyLineWithoutANameParses) {
  const ImageSigningKey key = NewKey("owner");
  ImagePublicKey anonymous = key.public_key();
  anonymous.name.clear();
  auto parsed = ParsePublicKey("  " + FormatPublicKey(anonymous) + "\n\n", "inline");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->key, key.public_key().key);
  EXPECT_EQ(parsed->name, "");
}

TEST(ImageSignatureTest, ASignatureBindsItsImageDigest) {
  const ImageSigningKey key = NewKey("owner");
  const std::string sig = *key.Sign(kImage);
  EXPECT_TRUE(VerifyImageSignature(kImage, key.public_key().key, sig).ok());
  // One hex digit of the digest changed.
  std::string tampered = kImage;
  tampered.back() = tampered.back() == '0' ? '1' : '0';
  const Status st = VerifyImageSignature(tampered, key.public_key().key, sig);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("does not verify"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(key.public_key().id()), std::string::npos) << "names the key: " << st.message();
  // A flipped bit in the signature.
  std::string flipped = sig;
  flipped[10] = static_cast<char>(flipped[10] ^ 1);
  EXPECT_FALSE(VerifyImageSignature(kImage, key.public_key().key, flipped).ok());
}

TEST(ImageSignatureTest, AnotherKeysSignatureDoesNotVerify) {
  const ImageSigningKey owner = NewKey("owner");
  const ImageSigningKey mallory = NewKey("owner");  // same name, different key
  EXPECT_FALSE(VerifyImageSignature(kImage, owner.public_key().key, *mallory.Sign(kImage)).ok());
}

TEST(ImageSignatureTest, TheSignedBytesAreDomainSeparated) {
  EXPECT_EQ(SignedMessage(kImage), "idlegrid-image-signature-v1\n" + kImage + "\n");
  // A plain Ed25519 signature over the bare digest (what another tool might
  // sign) is not an idlegrid image signature.
  const ImageSigningKey key = NewKey("owner");
  const std::string formatted = key.Format();
  const std::string b64 = formatted.substr(formatted.find(' ') + 1, 88);
  unsigned char sk[crypto_sign_SECRETKEYBYTES];
  size_t len = 0;
  ASSERT_EQ(
      sodium_base642bin(sk, sizeof sk, b64.data(), b64.size(), nullptr, &len, nullptr, sodium_base64_VARIANT_ORIGINAL),
      0);
  ASSERT_EQ(len, sizeof sk);
  std::string bare(crypto_sign_BYTES, '\0');
  crypto_sign_detached(reinterpret_cast<unsigned char*>(bare.data()), nullptr,
                       reinterpret_cast<const unsigned char*>(kImage.data()), kImage.size(), sk);
  sodium_memzero(sk, sizeof sk);
  EXPECT_FALSE(VerifyImageSignature(kImage, key.public_key().key, bare).ok());
}

TEST(ImageSignatureTest, OnlyDigestsAreSignedOrVerified) {
  const ImageSigningKey key = NewKey("owner");
  for (const std::string& bad :
       std::vector<std::string>{"latest", "sha256:abc", "myimage@" + kImage, "SHA256:" + kImage.substr(7)}) {
    EXPECT_EQ(key.Sign(bad).status().code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_EQ(VerifyImageSignature("sha256:abc", key.public_key().key, std::string(64, 'x')).code(),
            Code::kInvalidArgument);
  EXPECT_NE(VerifyImageSignature(kImage, "short", std::string(64, 'x')).message().find("not 32"), std::string::npos);
  EXPECT_NE(VerifyImageSignature(kImage, key.public_key().key, "short").message().find("not 64"), std::string::npos);
}

TEST(JudgeSignaturesTest, TrustComesFromAValidSignatureByATrustedKeyOnly) {
  const ImageSigningKey owner = NewKey("owner");
  const ImageSigningKey stranger = NewKey("stranger");
  const std::vector<ImagePublicKey> trusted = {owner.public_key()};

  EXPECT_FALSE(JudgeSignatures(kImage, {}, trusted).trusted()) << "unsigned";

  SignatureVerdict by_stranger = JudgeSignatures(kImage, {SignatureBy(stranger, kImage)}, trusted);
  EXPECT_FALSE(by_stranger.trusted());
  EXPECT_EQ(by_stranger.valid_signers, std::vector<std::string>{stranger.public_key().id()});

  // The owner's key claiming a signature made for another image.
  v1::ImageSignature moved = SignatureBy(owner, kOtherImage);
  moved.set_image(kImage);
  SignatureVerdict replayed = JudgeSignatures(kImage, {moved}, trusted);
  EXPECT_FALSE(replayed.trusted());
  EXPECT_EQ(replayed.invalid, 1);

  SignatureVerdict good =
      JudgeSignatures(kImage, {SignatureBy(stranger, kImage), moved, SignatureBy(owner, kImage)}, trusted);
  EXPECT_TRUE(good.trusted());
  EXPECT_EQ(good.trusted_signer, owner.public_key().id());
  EXPECT_EQ(good.valid_signers.size(), 2u);
  EXPECT_EQ(good.invalid, 1);
}

TEST(JudgeSignaturesTest, ATrustedKeyIsMatchedByItsBytesNotItsName) {
  const ImageSigningKey owner = NewKey("owner");
  const ImageSigningKey impostor = NewKey("owner");
  EXPECT_FALSE(JudgeSignatures(kImage, {SignatureBy(impostor, kImage)}, {owner.public_key()}).trusted());
}

TEST(JudgeSignaturesTest, TheRefusalNamesTheImageTheTrustedKeysAndTheSigners) {
  const ImageSigningKey owner = NewKey("owner");
  const ImageSigningKey stranger = NewKey("stranger");
  const SignatureVerdict v = JudgeSignatures(kImage, {SignatureBy(stranger, kImage)}, {owner.public_key()});
  const std::string reason = UntrustedImageReason(kImage, v, {owner.public_key()}, "this node's owner");
  EXPECT_NE(reason.find(kImage), std::string::npos) << reason;
  EXPECT_NE(reason.find(owner.public_key().id() + " (owner)"), std::string::npos) << reason;
  EXPECT_NE(reason.find("valid signatures by: " + stranger.public_key().id()), std::string::npos) << reason;
  EXPECT_NE(reason.find("this node's owner"), std::string::npos) << reason;
}

struct BadKeyFile {
  const char* what;
  std::string text;
  const char* expect;  // part of the message
};

TEST(KeyFileTest, MalformedPublicKeysAreRefusedWithTheFileAndTheFault) {
  const ImageSigningKey key = NewKey("owner");
  const std::string line = FormatPublicKey(key.public_key());
  const std::string b64 = line.substr(17, line.find(' ', 17) - 17);
  const std::vector<BadKeyFile> cases = {
      {"empty", "", "empty"},
      {"wrong tag", "ssh-ed25519 " + b64 + " owner", "not \"idlegrid-ed25519\""},
      {"a secret key", key.Format(), "this is a secret key"},
      {"no key", "idlegrid-ed25519", "missing"},
      {"bad base64", "idlegrid-ed25519 !!notbase64!! owner", "not valid base64"},
      {"short key", "idlegrid-ed25519 AAAA owner", "3 bytes, not 32"},
      {"bad name", "idlegrid-ed25519 " + b64 + " own/er", "may hold only"},
      {"extra field", "idlegrid-ed25519 " + b64 + " owner trailing", "unexpected text"},
      {"two keys", line + line, "one line"},
  };
  for (const BadKeyFile& c : cases) {
    auto parsed = ParsePublicKey(c.text, "keys/owner.pub");
    ASSERT_FALSE(parsed.ok()) << c.what;
    EXPECT_EQ(parsed.status().code(), Code::kInvalidArgument) << c.what;
    EXPECT_EQ(parsed.status().message().rfind("keys/owner.pub", 0), 0u) << c.what << ": " << parsed.status().message();
    EXPECT_NE(parsed.status().message().find(c.expect), std::string::npos)
        << c.what << ": " << parsed.status().message();
  }
}

TEST(KeyFileTest, MalformedSecretKeysAreRefusedWithTheFileAndTheFault) {
  const ImageSigningKey key = NewKey("owner");
  const std::string text = key.Format();
  const std::string b64 = text.substr(24, 88);
  ASSERT_EQ(text.substr(0, 24), "idlegrid-ed25519-secret ");
  const std::vector<BadKeyFile> cases = {
      {"a public key", FormatPublicKey(key.public_key()), "this is a public key"},
      {"no name", "idlegrid-ed25519-secret " + b64, "expected one line"},
      {"bad base64", "idlegrid-ed25519-secret ####" + b64.substr(4) + " owner", "not valid base64"},
      {"short key", "idlegrid-ed25519-secret " + b64.substr(0, 44) + " owner", "not 64"},
      {"bad name", "idlegrid-ed25519-secret " + b64 + " a b", "expected one line"},
  };
  for (const BadKeyFile& c : cases) {
    auto parsed = ImageSigningKey::Parse(c.text, "owner.key");
    ASSERT_FALSE(parsed.ok()) << c.what;
    EXPECT_EQ(parsed.status().message().rfind("owner.key", 0), 0u) << c.what << ": " << parsed.status().message();
    EXPECT_NE(parsed.status().message().find(c.expect), std::string::npos)
        << c.what << ": " << parsed.status().message();
  }
  // The public half of another key spliced in after this key's seed.
  const ImageSigningKey other = NewKey("other");
  unsigned char mine[64], theirs[64];
  size_t len = 0;
  ASSERT_EQ(sodium_base642bin(mine, 64, b64.data(), b64.size(), nullptr, &len, nullptr, sodium_base64_VARIANT_ORIGINAL),
            0);
  const std::string other_b64 = other.Format().substr(24, 88);
  ASSERT_EQ(sodium_base642bin(theirs, 64, other_b64.data(), other_b64.size(), nullptr, &len, nullptr,
                              sodium_base64_VARIANT_ORIGINAL),
            0);
  std::copy(theirs + 32, theirs + 64, mine + 32);
  char spliced[sodium_base64_ENCODED_LEN(64, sodium_base64_VARIANT_ORIGINAL)];
  sodium_bin2base64(spliced, sizeof spliced, mine, 64, sodium_base64_VARIANT_ORIGINAL);
  auto corrupt = ImageSigningKey::Parse("idlegrid-ed25519-secret " + std::string(spliced) + " owner\n", "owner.key");
  ASSERT_FALSE(corrupt.ok());
  EXPECT_EQ(corrupt.status().code(), Code::kDataLoss);
  EXPECT_NE(corrupt.status().message().find("does not match its seed"), std::string::npos);
}

TEST(KeyFileTest, KeyNamesAreShortPlainLabels) {
  EXPECT_TRUE(ValidateKeyName("release-2024_a.b@lab").ok());
  EXPECT_FALSE(ValidateKeyName("").ok());
  EXPECT_FALSE(ValidateKeyName(std::string(65, 'a')).ok());
  EXPECT_FALSE(ValidateKeyName("../owner").ok());
  EXPECT_FALSE(ImageSigningKey::Generate("has space").ok());
}

}  // namespace
}  // namespace idlegrid::image
