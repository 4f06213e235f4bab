// The owner's trustedImageKeys (agent/local_policy.h): how the policy file
// names keys, what the node advertises, and which assignments pass.
#include <gtest/gtest.h>

#include "agent/local_policy.h"
#include "common/digest.h"

namespace idlegrid::agent {
namespace {

const std::string kImage = Sha256Digest("manifest");

image::ImageSigningKey Key(const std::string& name) {
  auto key = image::ImageSigningKey::Generate(name);
  EXPECT_TRUE(key.ok());
  return *key;
}

v1::Assignment AssignmentOf(const std::string& image) {
  v1::Assignment a;
  a.set_attempt_id("a1");
  a.mutable_spec()->set_image("train@" + image);
  return a;
}

void AddSignature(v1::Assignment* a, const image::ImageSigningKey& key, const std::string& image) {
  v1::ImageSignature* s = a->add_image_signatures();
  s->set_image(image);
  s->set_public_key(key.public_key().key);
  s->set_signature(*key.Sign(image));
}

TEST(TrustedImageKeysPolicyTest, InlineKeysAreParsedAndFilesLeftForTheAgentToRead) {
  const image::ImageSigningKey ci = Key("ci");
  std::string line = image::FormatPublicKey(ci.public_key());
  line.pop_back();  // the newline
  const std::string yaml = "acceptJobs: true\ntrustedImageKeys:\n  - keys/release.pub\n  - \"" + line + "\"\n";
  auto policy = ParseOwnerPolicy(yaml, "policy.yaml");
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  ASSERT_EQ(policy->trusted_image_keys.size(), 1u);
  EXPECT_EQ(policy->trusted_image_keys[0].key, ci.public_key().key);
  EXPECT_EQ(policy->trusted_image_key_files, std::vector<std::string>{"keys/release.pub"});
  ASSERT_EQ(policy->policy.trusted_image_key_ids_size(), 1);
  EXPECT_EQ(policy->policy.trusted_image_key_ids(0), ci.public_key().id());

  // The agent adds the files' keys: ids advertised sorted, each once.
  const image::ImageSigningKey release = Key("release");
  AddTrustedImageKeys(&*policy, {release.public_key(), ci.public_key()});
  EXPECT_EQ(policy->trusted_image_keys.size(), 3u);
  ASSERT_EQ(policy->policy.trusted_image_key_ids_size(), 2);
  EXPECT_LT(policy->policy.trusted_image_key_ids(0), policy->policy.trusted_image_key_ids(1));
}

TEST(TrustedImageKeysPolicyTest, AMalformedKeyOrAnEmptyListIsRefusedWithItsPlace) {
  auto bad = ParseOwnerPolicy("trustedImageKeys:\n  - \"idlegrid-ed25519 AAAA owner\"\n", "policy.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(bad.status().message().rfind("policy.yaml:2:5: trustedImageKeys: ", 0), 0u) << bad.status().message();
  EXPECT_NE(bad.status().message().find("not 32"), std::string::npos) << bad.status().message();

  auto empty = ParseOwnerPolicy("trustedImageKeys: []\n", "policy.yaml");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("would trust nothing"), std::string::npos) << empty.status().message();
  EXPECT_FALSE(ParseOwnerPolicy("trustedImageKeys: owner.pub\n", "policy.yaml").ok()) << "a list, not a scalar";
}

TEST(CheckImageTrustTest, WithoutTrustedKeysEveryImagePasses) {
  EXPECT_TRUE(CheckImageTrust(AssignmentOf(kImage), {}).ok());
}

TEST(CheckImageTrustTest, OnlyAValidSignatureByATrustedKeyPasses) {
  const image::ImageSigningKey owner = Key("owner");
  const image::ImageSigningKey stranger = Key("stranger");
  const std::vector<image::ImagePublicKey> trusted = {owner.public_key()};

  v1::Assignment unsigned_image = AssignmentOf(kImage);
  const Status refused = CheckImageTrust(unsigned_image, trusted);
  EXPECT_EQ(refused.code(), Code::kFailedPrecondition);
  EXPECT_NE(refused.message().find(kImage), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find(owner.public_key().id()), std::string::npos) << refused.message();

  v1::Assignment by_stranger = AssignmentOf(kImage);
  AddSignature(&by_stranger, stranger, kImage);
  EXPECT_FALSE(CheckImageTrust(by_stranger, trusted).ok());

  // The owner signed another image; the coordinator attached it to this one.
  v1::Assignment misattached = AssignmentOf(kImage);
  AddSignature(&misattached, owner, Sha256Digest("another manifest"));
  EXPECT_FALSE(CheckImageTrust(misattached, trusted).ok());

  v1::Assignment good = AssignmentOf(kImage);
  AddSignature(&good, stranger, kImage);
  AddSignature(&good, owner, kImage);
  EXPECT_TRUE(CheckImageTrust(good, trusted).ok()) << "the image named as name@digest is checked by its digest";
}

}  // namespace
}  // namespace idlegrid::agent
