#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "advert/advertisement.h"
#include "advert/node_key.h"
#include "common/digest.h"
#include "common/fs.h"

namespace idlegrid::advert {
namespace {

constexpr uint64_t kGiB = 1024ull * 1024 * 1024;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/advert_test.XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { (void)RemoveTree(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

mode_t FileMode(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

bool StartsWith(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// ---------------------------------------------------------------------------
// NodeKey

TEST(NodeKeyTest, GeneratedKeysHaveExpectedSizesAndDiffer) {
  NodeKey a = NodeKey::Generate();
  NodeKey b = NodeKey::Generate();
  EXPECT_EQ(a.public_key().size(), 32u);
  EXPECT_NE(a.public_key(), b.public_key());
  EXPECT_NE(a.node_id(), b.node_id());
  EXPECT_EQ(a.Sign("hello").size(), 64u);
}

TEST(NodeKeyTest, NodeIdDerivesFromSha256OfPublicKey) {
  NodeKey key = NodeKey::Generate();
  std::string expected = "n-" + DigestHex(Sha256Digest(key.public_key())).substr(0, 16);
  EXPECT_EQ(key.node_id(), expected);
  EXPECT_EQ(NodeIdFromPublicKey(key.public_key()), expected);
  // Known answer: sha256("") = e3b0c44298fc1c14...
  EXPECT_EQ(NodeIdFromPublicKey(""), "n-e3b0c44298fc1c14");
  EXPECT_EQ(key.node_id().size(), 18u);
}

TEST(NodeKeyTest, CreatesKeyWithMode0600AndReloadsSameIdentity) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/state/keys";  // created on demand
  Result<NodeKey> first = NodeKey::LoadOrCreate(dir);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const std::string path = dir + "/node.key";
  EXPECT_EQ(FileMode(path), 0600u);
  EXPECT_EQ(FileMode(dir), 0700u);

  Result<std::string> contents = ReadFile(path);
  ASSERT_TRUE(contents.ok());
  EXPECT_EQ(contents->size(), 129u);  // 128 hex + newline
  EXPECT_EQ(contents->back(), '\n');

  Result<NodeKey> second = NodeKey::LoadOrCreate(dir);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->node_id(), first->node_id());
  EXPECT_EQ(second->public_key(), first->public_key());
  // The reloaded secret key signs verifiably for the original public key.
  v1::Advertisement ad;
  ad.set_sequence(1);
  AdvertError error;
  auto verified = VerifyAdvertisement(SignAdvertisement(ad, *second), first->public_key(), 0, &error);
  EXPECT_TRUE(verified.ok()) << verified.status().ToString();
}

TEST(NodeKeyTest, RefusesKeyReadableByOthers) {
  TempDir tmp;
  ASSERT_TRUE(NodeKey::LoadOrCreate(tmp.path()).ok());
  const std::string path = tmp.path() + "/node.key";
  Result<std::string> before = ReadFile(path);
  ASSERT_TRUE(before.ok());
  for (mode_t mode : {0644, 0640, 0604, 0660, 0602}) {
    ASSERT_EQ(::chmod(path.c_str(), mode), 0);
    Result<NodeKey> loaded = NodeKey::LoadOrCreate(tmp.path());
    ASSERT_FALSE(loaded.ok()) << std::oct << mode;
    EXPECT_EQ(loaded.status().code(), Code::kPermissionDenied);
    EXPECT_NE(loaded.status().message().find(path), std::string::npos);
    EXPECT_NE(loaded.status().message().find("chmod 600 " + path), std::string::npos) << loaded.status().message();
  }
  // Refusing must not replace the identity.
  Result<std::string> after = ReadFile(path);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, *before);
  ASSERT_EQ(::chmod(path.c_str(), 0400), 0);  // owner-only read is fine
  EXPECT_TRUE(NodeKey::LoadOrCreate(tmp.path()).ok());
}

TEST(NodeKeyTest, RejectsCorruptKeyFiles) {
  TempDir tmp;
  ASSERT_TRUE(NodeKey::LoadOrCreate(tmp.path()).ok());
  const std::string path = tmp.path() + "/node.key";
  Result<std::string> good = ReadFile(path);
  ASSERT_TRUE(good.ok());
  std::string flipped_public = *good;
  flipped_public[100] = flipped_public[100] == '0' ? '1' : '0';  // in the public half
  struct Case {
    const char* name;
    std::string content;
  };
  const std::vector<Case> cases = {
      {"empty", ""},
      {"too short", good->substr(0, 64) + "\n"},
      {"not hex", std::string(128, 'z') + "\n"},
      {"trailing junk", good->substr(0, 128) + "00\n"},
      {"public half does not match seed", flipped_public},
  };
  for (const Case& c : cases) {
    ASSERT_TRUE(WriteFileAtomic(path, c.content, 0600).ok());
    Result<NodeKey> loaded = NodeKey::LoadOrCreate(tmp.path());
    ASSERT_FALSE(loaded.ok()) << c.name;
    EXPECT_EQ(loaded.status().code(), Code::kDataLoss) << c.name;
    EXPECT_NE(loaded.status().message().find(path), std::string::npos) << c.name;
  }
  // Trailing whitespace variants of a good key still load.
  ASSERT_TRUE(WriteFileAtomic(path, good->substr(0, 128), 0600).ok());
  EXPECT_TRUE(NodeKey::LoadOrCreate(tmp.path()).ok());
  ASSERT_TRUE(WriteFileAtomic(path, good->substr(0, 128) + "\r\n  \n", 0600).ok());
  EXPECT_TRUE(NodeKey::LoadOrCreate(tmp.path()).ok());
}

// ---------------------------------------------------------------------------
// Advertisements

v1::Advertisement SampleAd(uint64_t sequence) {
  v1::Advertisement ad;
  ad.set_sequence(sequence);
  ad.set_created_at_ms(1700000000000);
  ad.set_region("eu-west");
  ad.set_allocatable_cpu(6.5);
  ad.set_allocatable_memory_bytes(16 * kGiB);
  ad.set_protocol_version("idlegrid.v1");
  ad.mutable_capacity()->set_cpu_cores(8);
  ad.add_cached_images("sha256:" + std::string(64, 'a'));
  return ad;
}

struct VerifyOutcome {
  Result<VerifiedAdvertisement> result;
  AdvertError error;
};

VerifyOutcome Verify(const v1::SignedAdvertisement& signed_ad, const std::string& known_key, uint64_t last_sequence) {
  AdvertError error = AdvertError::kNone;
  auto result = VerifyAdvertisement(signed_ad, known_key, last_sequence, &error);
  return {std::move(result), error};
}

void ExpectError(const VerifyOutcome& outcome, AdvertError want, Code code, const std::string& prefix) {
  ASSERT_FALSE(outcome.result.ok()) << "expected " << prefix;
  EXPECT_EQ(outcome.error, want) << outcome.result.status().ToString();
  EXPECT_EQ(outcome.result.status().code(), code) << outcome.result.status().ToString();
  EXPECT_TRUE(StartsWith(outcome.result.status().message(), prefix + ": ")) << outcome.result.status().message();
}

TEST(AdvertisementTest, SignVerifyRoundTrip) {
  NodeKey key = NodeKey::Generate();
  v1::Advertisement ad = SampleAd(3);
  ad.set_node_id("n-something-else");  // overwritten by SignAdvertisement
  v1::SignedAdvertisement signed_ad = SignAdvertisement(ad, key);
  EXPECT_EQ(signed_ad.public_key(), key.public_key());
  EXPECT_EQ(signed_ad.signature().size(), 64u);

  for (const std::string& known : {std::string(), key.public_key()}) {
    VerifyOutcome outcome = Verify(signed_ad, known, 2);
    ASSERT_TRUE(outcome.result.ok()) << outcome.result.status().ToString();
    EXPECT_EQ(outcome.error, AdvertError::kNone);
    const v1::Advertisement& got = outcome.result->ad;
    EXPECT_EQ(got.node_id(), key.node_id());
    EXPECT_EQ(got.sequence(), 3u);
    EXPECT_EQ(got.region(), "eu-west");
    EXPECT_EQ(got.allocatable_memory_bytes(), 16 * kGiB);
    EXPECT_EQ(got.capacity().cpu_cores(), 8u);
    ASSERT_EQ(got.cached_images_size(), 1);
  }
  // A null error pointer is allowed.
  EXPECT_TRUE(VerifyAdvertisement(signed_ad, "", 0, nullptr).ok());
}

TEST(AdvertisementTest, TamperedBytesAreBadSignature) {
  NodeKey key = NodeKey::Generate();
  const v1::SignedAdvertisement original = SignAdvertisement(SampleAd(5), key);
  const std::string& bytes = original.advertisement();
  // Flip one bit at every position: whether or not the result still parses,
  // the signature must catch it (and it must never be reported as malformed).
  for (size_t i = 0; i < bytes.size(); ++i) {
    v1::SignedAdvertisement tampered = original;
    (*tampered.mutable_advertisement())[i] ^= 0x01;
    ExpectError(Verify(tampered, "", 0), AdvertError::kBadSignature, Code::kPermissionDenied, "bad signature");
    ExpectError(Verify(tampered, key.public_key(), 0), AdvertError::kBadSignature, Code::kPermissionDenied,
                "bad signature");
  }
  // A flipped signature bit fails too.
  v1::SignedAdvertisement bad_sig = original;
  (*bad_sig.mutable_signature())[10] ^= 0x80;
  ExpectError(Verify(bad_sig, "", 0), AdvertError::kBadSignature, Code::kPermissionDenied, "bad signature");
}

TEST(AdvertisementTest, ChangedFieldWithoutResigningIsBadSignature) {
  NodeKey key = NodeKey::Generate();
  v1::SignedAdvertisement signed_ad = SignAdvertisement(SampleAd(5), key);
  v1::Advertisement ad;
  ASSERT_TRUE(ad.ParseFromString(signed_ad.advertisement()));
  ad.set_allocatable_memory_bytes(ad.allocatable_memory_bytes() * 4);  // inflate capacity
  ad.SerializeToString(signed_ad.mutable_advertisement());
  ExpectError(Verify(signed_ad, key.public_key(), 0), AdvertError::kBadSignature, Code::kPermissionDenied,
              "bad signature");
}

TEST(AdvertisementTest, OtherKeys) {
  NodeKey registered = NodeKey::Generate();
  NodeKey other = NodeKey::Generate();

  // Signed and keyed by another node, checked against the registered key.
  v1::SignedAdvertisement by_other = SignAdvertisement(SampleAd(9), other);
  VerifyOutcome wrong = Verify(by_other, registered.public_key(), 0);
  ExpectError(wrong, AdvertError::kWrongKey, Code::kPermissionDenied, "wrong key");
  EXPECT_NE(wrong.result.status().message().find(registered.node_id()), std::string::npos);
  // The same advertisement is fine on first contact: it is a valid ad of `other`.
  EXPECT_TRUE(Verify(by_other, "", 0).result.ok());

  // Claims the registered key but was signed by another: forged.
  v1::SignedAdvertisement forged = SignAdvertisement(SampleAd(9), registered);
  forged.set_signature(other.Sign(forged.advertisement()));
  ExpectError(Verify(forged, registered.public_key(), 0), AdvertError::kBadSignature, Code::kPermissionDenied,
              "bad signature");
  ExpectError(Verify(forged, "", 0), AdvertError::kBadSignature, Code::kPermissionDenied, "bad signature");
}

TEST(AdvertisementTest, NodeIdMustDeriveFromKey) {
  NodeKey key = NodeKey::Generate();
  NodeKey other = NodeKey::Generate();
  struct Case {
    const char* name;
    std::string node_id;
  };
  const std::vector<Case> cases = {
      {"another node's id", other.node_id()},
      {"empty", ""},
      {"made up", "n-0000000000000000"},
  };
  for (const Case& c : cases) {
    v1::Advertisement ad = SampleAd(2);
    ad.set_node_id(c.node_id);
    v1::SignedAdvertisement signed_ad;
    ad.SerializeToString(signed_ad.mutable_advertisement());
    signed_ad.set_public_key(key.public_key());
    signed_ad.set_signature(key.Sign(signed_ad.advertisement()));
    VerifyOutcome outcome = Verify(signed_ad, key.public_key(), 0);
    ExpectError(outcome, AdvertError::kNodeIdMismatch, Code::kPermissionDenied, "node id mismatch");
    EXPECT_NE(outcome.result.status().message().find("key derives " + key.node_id()), std::string::npos)
        << c.name << ": " << outcome.result.status().message();
  }
}

TEST(AdvertisementTest, SequenceMustIncrease) {
  NodeKey key = NodeKey::Generate();
  struct Case {
    uint64_t sequence;
    uint64_t last_accepted;
    bool ok;
  };
  const std::vector<Case> cases = {
      {1, 0, true},
      {8, 7, true},
      {1000, 7, true},
      {7, 7, false},  // replay of the accepted one
      {4, 7, false},  // older
      {0, 0, false},  // sequences start at 1
      {std::numeric_limits<uint64_t>::max(), std::numeric_limits<uint64_t>::max() - 1, true},
  };
  for (const Case& c : cases) {
    VerifyOutcome outcome = Verify(SignAdvertisement(SampleAd(c.sequence), key), key.public_key(), c.last_accepted);
    if (c.ok) {
      EXPECT_TRUE(outcome.result.ok()) << c.sequence << " after " << c.last_accepted;
      EXPECT_EQ(outcome.error, AdvertError::kNone);
    } else {
      SCOPED_TRACE(std::to_string(c.sequence) + " after " + std::to_string(c.last_accepted));
      ExpectError(outcome, AdvertError::kStaleSequence, Code::kFailedPrecondition, "stale sequence");
    }
  }
  VerifyOutcome older = Verify(SignAdvertisement(SampleAd(4), key), key.public_key(), 7);
  EXPECT_TRUE(StartsWith(older.result.status().message(), "stale sequence: got 4, already accepted 7"))
      << older.result.status().message();
}

TEST(AdvertisementTest, MalformedInputs) {
  NodeKey key = NodeKey::Generate();
  const v1::SignedAdvertisement good = SignAdvertisement(SampleAd(1), key);
  struct Case {
    const char* name;
    v1::SignedAdvertisement signed_ad;
    std::string known_key;
  };
  std::vector<Case> cases;
  auto add = [&](const char* name, auto mutate, std::string known = "") {
    Case c{name, good, std::move(known)};
    mutate(c.signed_ad);
    cases.push_back(std::move(c));
  };
  add("empty public key", [](v1::SignedAdvertisement& s) { s.clear_public_key(); });
  add("short public key", [](v1::SignedAdvertisement& s) { s.set_public_key(s.public_key().substr(0, 31)); });
  add("long public key", [](v1::SignedAdvertisement& s) { s.mutable_public_key()->push_back('x'); });
  add("empty signature", [](v1::SignedAdvertisement& s) { s.clear_signature(); });
  add("short signature", [](v1::SignedAdvertisement& s) { s.set_signature(s.signature().substr(0, 63)); });
  add("long signature", [](v1::SignedAdvertisement& s) { s.mutable_signature()->push_back('x'); });
  add(
      "bad registered key size", [](v1::SignedAdvertisement&) {}, std::string(16, 'k'));
  // Authentic signature over bytes that are not an Advertisement (a buggy signer).
  add("unparsable signed bytes", [&key](v1::SignedAdvertisement& s) {
    s.set_advertisement(std::string("\xff\xff\xff\xff", 4));
    s.set_signature(key.Sign(s.advertisement()));
  });
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ExpectError(Verify(c.signed_ad, c.known_key, 0), AdvertError::kMalformed, Code::kInvalidArgument, "malformed");
  }
  EXPECT_TRUE(Verify(good, "", 0).result.ok());  // the base case itself is valid
}

}  // namespace
}  // namespace idlegrid::advert
